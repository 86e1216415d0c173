// The audit log: who changed what and when, each entry with the fields that changed (before -> after).
// auditView is the "Audit" page; auditHistory fills a job's History panel.

import { get, withQuery } from '../api.js';
import { badge, fmtTime, h, replace, table } from '../dom.js';

const ACTIONS = ['', 'create', 'update', 'delete', 'pause', 'resume', 'trigger', 'kill', 'revoke', 'rotate', 'denied',
  'sign-in', 'sign-out', 'sign-in-refused'];
const KINDS = ['', 'job', 'calendar', 'fire', 'token', 'alert-rule', 'signing-key', 'route', 'session'];
// Refusals stand out.
const FAILED = new Set(['denied', 'delete', 'sign-in-refused']);
// Changes every edit: noise in a diff.
const SKIP = new Set(['updated_at']);

function valueText(v) {
  if (v === undefined) return '—';
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

// A time field (`next_fire_time`, `created_at`, `held_since_ms`, ...) holding epoch milliseconds
// shows as a time by the header's rule, the number in its title. Durations share the `_ms`
// suffix (`timeout_ms`); below 10^12 (2001) a value is taken as one and left a number.
const TIME_KEY = /(_ms|_at|_time)$/;
function valueCell(key, v, zone) {
  if (TIME_KEY.test(key) && Number.isInteger(v) && v >= 1e12 && v < 1e14) {
    return h('span', { class: 'audit-time', title: String(v) }, fmtTime(v, zone));
  }
  return valueText(v);
}

// The fields whose values differ between before and after, as rows of a small table.
export function auditDiff(entry) {
  const before = entry.before && typeof entry.before === 'object' ? entry.before : {};
  const after = entry.after && typeof entry.after === 'object' ? entry.after : {};
  if (entry.before === null && entry.after === null) return h('span', { class: 'subtle' }, '—');
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((k) => !SKIP.has(k) && JSON.stringify(before[k]) !== JSON.stringify(after[k]));
  if (!keys.length) return h('span', { class: 'subtle' }, 'no field changed');
  // A job's times belong to its zone (the one after the change, else before it).
  const zone = entry.target?.kind === 'job' ? (after.time_zone ?? before.time_zone) : undefined;
  return h('table', { class: 'diff' }, h('tbody', null, keys.slice(0, 30).map((k) => h('tr', null,
    h('th', null, k),
    h('td', { class: 'before wrap' }, entry.before === null ? '' : valueCell(k, before[k], zone)),
    h('td', { class: 'wrap' }, '→'),
    h('td', { class: 'after wrap' }, entry.after === null ? '' : valueCell(k, after[k], zone))))));
}

function targetCell(e) {
  const t = e.target;
  const label = `${t.kind} ${t.id}`;
  const page = { job: 'jobs', calendar: 'calendars' }[t.kind];
  const link = page && e.action !== 'delete' ? h('a', { href: `#/${page}/${t.id}` }, label) : label;
  return [link, t.name ? h('div', { class: 'hint' }, t.name) : null];
}

function entryRows(items, withTarget) {
  return items.map((e) => h('tr', { 'data-audit': e.id },
    h('td', null, fmtTime(e.at)),
    h('td', null, e.actor.name, h('div', { class: 'hint' }, e.actor.role)),
    h('td', null, badge(e.action, FAILED.has(e.action) ? 'failed' : 'enabled')),
    withTarget ? h('td', null, targetCell(e)) : null,
    h('td', null, auditDiff(e))));
}

// One target's history (newest first, one page), e.g. a job's pauses and edits.
export async function auditHistory(container, kind, id, limit = 20) {
  try {
    const page = await get(withQuery('/api/v1/audit', { target_kind: kind, target_id: id, limit }));
    replace(container, table(['When', 'Who', 'Action', 'Changes'], entryRows(page.items, false), 'No changes recorded.'));
  } catch (e) {
    replace(container, h('div', { class: 'subtle' }, e.message));
  }
}

export async function auditView(main, ctx) {
  const q = ctx.query;
  const select = (name, values) => h('select', { name }, values.map((v) =>
    h('option', { value: v, selected: (q.get(name) ?? '') === v }, v || 'any')));
  const kind = select('target_kind', KINDS);
  const action = select('action', ACTIONS);
  const targetId = h('input', { name: 'target_id', maxlength: 191, placeholder: 'id', value: q.get('target_id') ?? '' });
  const actor = h('input', { name: 'actor', maxlength: 191, placeholder: 'token name', value: q.get('actor') ?? '' });
  const list = h('div');
  const more = h('div');
  const banner = h('div', { class: 'banner' });
  const filters = () => ({
    target_kind: kind.value || undefined, target_id: targetId.value || undefined,
    actor: actor.value || undefined, action: action.value || undefined,
  });
  let rows = [];

  async function load(cursor) {
    try {
      const page = await get(withQuery('/api/v1/audit', { ...filters(), cursor, limit: 50 }));
      rows = cursor ? rows.concat(page.items) : page.items;
      replace(list, table(['When', 'Who', 'Action', 'Target', 'Changes'], entryRows(rows, true),
        'No changes recorded (entries are kept as long as fires).'));
      replace(more, page.next_cursor
        ? h('button', { class: 'small', onclick: () => load(page.next_cursor) }, 'Older')
        : null);
      banner.textContent = '';
    } catch (e) {
      banner.textContent = e.message;
    }
  }
  const form = h('form', { class: 'panel toolbar', onsubmit: (ev) => { ev.preventDefault(); load(); } },
    kind, targetId, actor, action, h('button', { class: 'primary', type: 'submit' }, 'Filter'));
  main.append(h('h1', null, 'Audit log'), banner, form, list, more);
  await load();
}
