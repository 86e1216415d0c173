// Alert rules (docs/api.md "Alerts"): the list, one rule with its deliveries (refreshed while
// shown) and "Send test", and the create/edit form (PUT with the version read: a 409 says the
// rule changed meanwhile). The API serves alert rules to admins only, so other roles get a
// notice instead of the page, as on the Tokens page.

import { del, get, isAdmin, post, saveForm, withQuery } from '../api.js';
import { auditHistory } from './audit.js';
import {
  badge, bannerError, clearErrors, factList, field, fmtTime, h, replace, showError, table,
} from '../dom.js';
import { managedNote } from './jobs.js';

const EVENTS = [
  ['failed', 'failed'], ['timeout', 'timeout'], ['lost', 'lost'], ['misfire', 'misfire (skipped by the policy)'],
  ['paused', 'paused (after failures in a row)'], ['no_success', 'no success within …'],
];
const MAX_PAGES = 5;
const PAGE = 200;

function denied(main, title) {
  main.append(h('h1', null, title),
    h('div', { class: 'panel subtle' }, 'Only admins can see and change alert rules.'));
}

async function listRules() {
  let items = [];
  let cursor = '';
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const r = await get(withQuery('/api/v1/alert-rules', { limit: PAGE, cursor }));
    items = items.concat(r.items);
    if (r.next_cursor == null) break;
    cursor = String(r.next_cursor);
  }
  return items;
}

// id -> name of every job the list shows (at most a few pages: a rule of a job beyond them shows its id).
async function jobNames() {
  const names = new Map();
  let cursor = '';
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const r = await get(withQuery('/api/v1/jobs', { limit: PAGE, cursor }));
    for (const j of r.items) names.set(j.id, j.name);
    cursor = r.next_cursor;
    if (!cursor) break;
  }
  return names;
}

function jobCell(rule, names) {
  if (rule.job_id == null) return h('span', { class: 'subtle' }, 'every job');
  return h('a', { href: `#/jobs/${rule.job_id}` }, names.get(rule.job_id) ?? `job ${rule.job_id}`);
}

const deliveryBadge = (d) => badge(d.status, d.status === 'delivered' ? 'succeeded' : d.status);

async function deleteRule(rule, banner) {
  if (!confirm(`Delete alert rule "${rule.name}" and its deliveries? Pending ones are never sent.`)) return false;
  try {
    await del(`/api/v1/alert-rules/${rule.id}`);
    return true;
  } catch (e) {
    bannerError(banner, e);
    return false;
  }
}

async function sendTest(rule, banner) {
  try {
    const d = await post(`/api/v1/alert-rules/${rule.id}/test`);
    banner.className = 'banner info';
    banner.textContent = `Test delivery #${d.id} queued: the master sends it to ${rule.url} within its next alert round.`;
    return true;
  } catch (e) {
    bannerError(banner, e);
    return false;
  }
}

export async function alertsView(main, ctx) {
  if (!isAdmin(ctx.who)) return denied(main, 'Alert rules');
  const banner = h('div', { class: 'banner' });
  const list = h('div', { id: 'alert-rules' });
  async function load() {
    const [rules, names] = await Promise.all([listRules(), jobNames()]);
    replace(list, table(['Name', 'Job', 'Events', 'In a row', 'Webhook', 'State', 'Version', ''],
      rules.map((r) => h('tr', { 'data-rule': r.name },
        h('td', null, h('a', { href: `#/alerts/${r.id}` }, r.name)),
        h('td', null, jobCell(r, names)),
        h('td', null, r.events.join(', ')),
        h('td', null, String(r.consecutive_failures)),
        h('td', { class: 'mono' }, r.url),
        h('td', null, r.enabled ? badge('enabled') : badge('disabled', 'paused')),
        h('td', null, String(r.version),
          r.managed_by ? h('div', { class: 'hint', 'data-managed-by': r.managed_by }, `managed by ${r.managed_by}`) : null),
        // A rule declared in a file is edited there (managedNote); a test delivery stays.
        h('td', null, h('div', { class: 'actions' },
          r.managed_by ? null : h('a', { class: 'button small', href: `#/alerts/${r.id}/edit` }, 'Edit'),
          h('button', { class: 'small', onclick: () => sendTest(r, banner) }, 'Send test'),
          r.managed_by ? null : h('button', { class: 'small danger', onclick: async () => {
            if (await deleteRule(r, banner)) await load();
          } }, 'Delete'))))),
      'No alert rules yet. A rule calls a webhook when a job\'s fires end failed, timed out, lost, …'));
  }
  main.append(
    h('h1', null, 'Alert rules', h('span', { class: 'spacer' }),
      h('a', { class: 'button primary', href: '#/alerts/new' }, 'New alert rule')),
    banner, list);
  await load();
}

export async function alertView(main, ctx) {
  if (!isAdmin(ctx.who)) return denied(main, 'Alert rule');
  const id = ctx.params[0];
  const [rule, names] = await Promise.all([get(`/api/v1/alert-rules/${id}`), jobNames()]);
  const banner = h('div', { class: 'banner' });
  const deliveries = h('div', { id: 'alert-deliveries' });
  const facts = [
    ['Job', jobCell(rule, names)], ['Events', rule.events.join(', ')],
    ['In a row', `${rule.consecutive_failures} failed run(s) before failed/timeout/lost alert`],
    ['No success within', rule.no_success_within_ms == null ? '—' : `${rule.no_success_within_ms / 60000} min`],
    ['Webhook', h('span', { class: 'mono' }, rule.url)], ['Secret', rule.has_secret ? 'set (never shown)' : '—'],
    ['State', rule.enabled ? badge('enabled') : badge('disabled', 'paused')], ['Version', String(rule.version)],
    ['Created', fmtTime(rule.created_at_ms)], ['Managed by', rule.managed_by ?? 'made by hand'],
  ];
  async function loadDeliveries() {
    const r = await get(withQuery('/api/v1/alert-deliveries', { rule_id: id, limit: 50 }));
    replace(deliveries, table(['#', 'Kind', 'Event', 'Status', 'Attempts', 'Created', 'Delivered', 'Last error'],
      r.items.map((d) => h('tr', { 'data-delivery': d.id },
        h('td', null, String(d.id)),
        h('td', null, d.test ? badge('test', 'pending') : h('a', { href: `#/fires/${d.fire_id}` }, `fire ${d.fire_id}`)),
        h('td', null, d.event),
        h('td', null, deliveryBadge(d)),
        h('td', null, String(d.attempts)),
        h('td', null, fmtTime(d.created_at_ms)),
        h('td', null, d.delivered_at_ms ? fmtTime(d.delivered_at_ms) : '—'),
        h('td', null, d.last_error ?? ''))),
      'No deliveries yet. "Send test" queues one.'));
  }
  const history = h('div', { class: 'history' });
  main.append(
    h('h1', null, `Alert rule "${rule.name}"`, h('span', { class: 'spacer' }), h('div', { class: 'actions' },
      rule.managed_by ? null : h('a', { class: 'button', href: `#/alerts/${id}/edit` }, 'Edit'),
      h('button', { onclick: async () => {
        if (await sendTest(rule, banner)) await loadDeliveries();
      } }, 'Send test'),
      rule.managed_by ? null : h('button', { class: 'danger', onclick: async () => {
        if (await deleteRule(rule, banner)) location.hash = '#/alerts';
      } }, 'Delete'))),
    managedNote(rule),
    banner,
    h('div', { class: 'panel' }, factList(facts)),
    h('h2', null, 'Deliveries'), deliveries,
    h('h2', null, 'History'), history);
  await loadDeliveries();
  ctx.every(2000, () => loadDeliveries().catch((e) => ctx.fail(e)));
  auditHistory(history, 'alert-rule', id);
}

export async function alertFormView(main, ctx) {
  const id = ctx.params[0];
  const title = id ? 'Edit alert rule' : 'New alert rule';
  if (!isAdmin(ctx.who)) return denied(main, title);
  const [rule, names] = await Promise.all([
    id ? get(`/api/v1/alert-rules/${id}`) : Promise.resolve({
      name: '', job_id: null, events: ['failed', 'timeout', 'lost'], consecutive_failures: 1,
      no_success_within_ms: null, url: '', enabled: true,
    }),
    jobNames()]);
  if (rule.managed_by) {
    // Reached by its address only (the rule's page has no Edit): the note instead of a form.
    main.append(h('h1', null, `Edit alert rule "${rule.name}"`), managedNote(rule),
      h('a', { class: 'button', href: `#/alerts/${id}` }, 'Back to the rule'));
    return undefined;
  }
  const name = h('input', { name: 'name', maxlength: 191, value: rule.name, required: true });
  const job = h('select', { name: 'job_id' },
    h('option', { value: '' }, 'every job'),
    [...names].map(([jobId, jobName]) => h('option', { value: jobId, selected: jobId === rule.job_id }, jobName)));
  const checks = EVENTS.map(([value]) => h('input', { type: 'checkbox', name: 'event', value,
    checked: rule.events.includes(value) }));
  const events = h('div', { class: 'wide' }, h('b', null, 'Events'),
    h('input', { type: 'hidden', name: 'events' }),
    h('div', { class: 'toolbar' }, EVENTS.map(([, text], i) => h('label', { class: 'check' }, checks[i], text))),
    h('span', { class: 'field-error' }));
  const inRow = h('input', { name: 'consecutive_failures', type: 'number', min: 1, max: 1000, step: 1,
    value: rule.consecutive_failures });
  const within = h('input', { name: 'no_success_within_ms', type: 'number', min: 1, step: 1,
    value: rule.no_success_within_ms == null ? '' : rule.no_success_within_ms / 60000 });
  const url = h('input', { name: 'url', class: 'mono', maxlength: 2048, value: rule.url,
    placeholder: 'http://hooks.internal:8080/sched', autocomplete: 'off' });
  const secret = h('input', { name: 'secret', type: 'password', maxlength: 255, autocomplete: 'new-password',
    placeholder: id ? 'leave empty to keep the current one' : '16 to 255 bytes' });
  const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: rule.enabled });
  const save = h('button', { class: 'primary', type: 'submit' }, id ? 'Save changes' : 'Create alert rule');
  const form = h('form', { class: 'panel', novalidate: true },
    h('div', { class: 'banner' }),
    h('div', { class: 'grid' },
      field('Name', name),
      field('Job', job, 'the job whose fires it watches'),
      events,
      field('Failures in a row', inRow, 'failed/timeout/lost alert from the N-th failed run in a row'),
      field('No success within (minutes)', within, 'only with the event "no success within …"'),
      h('label', { class: 'wide' }, 'Webhook URL', url,
        h('span', { class: 'hint' }, 'http:// only; the server refuses addresses its policy does not allow'),
        h('span', { class: 'field-error' })),
      field('Secret', secret, 'HMAC-SHA256 key of X-Sched-Signature; never shown again'),
      h('label', { class: 'check' }, enabled, 'Enabled')),
    h('div', { class: 'actions' }, save,
      h('a', { class: 'button', href: id ? `#/alerts/${id}` : '#/alerts' }, 'Cancel')));

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearErrors(form);
    const body = {
      name: name.value.trim(),
      events: checks.filter((c) => c.checked).map((c) => c.value),
      consecutive_failures: Number(inRow.value || 1),
      url: url.value.trim(),
      enabled: enabled.checked,
    };
    if (job.value) body.job_id = Number(job.value);
    if (within.value !== '') body.no_success_within_ms = Math.round(Number(within.value) * 60000);
    if (secret.value || !id) body.secret = secret.value;
    if (id) body.version = rule.version;
    await saveForm({
      collection: '/api/v1/alert-rules',
      page: 'alerts',
      id,
      body,
      button: save,
      stale: (e) => showError(form, { message: `Someone changed this alert rule since you opened it (you edited version `
        + `${rule.version}): ${e.message}. Reload the page to edit the current version; your changes here are not saved.` }),
      failed: (e) => showError(form, e),
    });
  });

  main.append(h('h1', null, id ? `Edit alert rule "${rule.name}"` : title), form);
  name.focus();
}
