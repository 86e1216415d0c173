// Calendars (docs/schedules.md): the list with the jobs that name each calendar, one
// calendar with a preview of its excluded and allowed times (GET /api/v1/calendars/{id}/preview),
// and the create/edit form. Operators and admins change calendars; viewers only read.

import { canOperate, del, get, saveForm, withQuery } from '../api.js';
import { auditHistory } from './audit.js';
import {
  badge, clearErrors, factList, field, fmtTime, formDenied, h, replace, showError, table,
} from '../dom.js';

// Both lists are read page by page up to these many items (the API holds at most 1000 calendars).
const MAX_PAGES = 5;
const PAGE = 200;

async function listAll(path) {
  let items = [];
  let cursor = '';
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const r = await get(withQuery(path, { limit: PAGE, cursor }));
    items = items.concat(r.items);
    cursor = r.next_cursor;
    if (!cursor) return { items, complete: true };
  }
  return { items, complete: false };
}

// name -> [{id, name}] of the jobs that name it (the calendar objects do not say; the jobs do).
async function jobsByCalendar() {
  const jobs = await listAll('/api/v1/jobs');
  const by = new Map();
  for (const j of jobs.items) {
    if (!j.calendar) continue;
    if (!by.has(j.calendar)) by.set(j.calendar, []);
    by.get(j.calendar).push(j);
  }
  return { by, complete: jobs.complete };
}

// "sat, sun · 2 dates · 22:00-06:00"
export function rulesSummary(c) {
  const parts = [];
  if (c.excluded_weekdays?.length) parts.push(c.excluded_weekdays.join(', '));
  const dates = c.excluded_dates ?? [];
  if (dates.length) parts.push(dates.length <= 2 ? dates.join(', ') : `${dates.length} dates`);
  if (c.excluded_times?.length) parts.push(c.excluded_times.slice(0, 3).join(', ') + (c.excluded_times.length > 3 ? ', …' : ''));
  return parts.length ? parts.join(' · ') : 'nothing excluded';
}

function usedByCell(jobs) {
  if (!jobs?.length) return h('span', { class: 'subtle' }, '—');
  const shown = jobs.slice(0, 5);
  return [shown.map((j, i) => [i ? ', ' : '', h('a', { href: `#/jobs/${j.id}` }, j.name)]),
    jobs.length > shown.length ? h('span', { class: 'subtle' }, ` and ${jobs.length - shown.length} more`) : null];
}

// DELETE with the API's answer shown: a 409 names the jobs that still use the calendar.
async function deleteCalendar(c, banner) {
  if (!confirm(`Delete calendar "${c.name}"? Jobs that name it must be changed first.`)) return false;
  try {
    await del(`/api/v1/calendars/${c.id}`);
    return true;
  } catch (e) {
    banner.className = 'banner';
    banner.textContent = e.status === 409 ? `Not deleted: ${e.message}` : e.message;
    return false;
  }
}

// ---- the list ----

export async function calendarsView(main, ctx) {
  const operate = canOperate(ctx.who);
  const banner = h('div', { class: 'banner' });
  const list = h('div');
  const note = h('div', { class: 'hint' });

  async function load() {
    const [calendars, usage] = await Promise.all([listAll('/api/v1/calendars'), jobsByCalendar()]);
    const row = (c) => h('tr', { 'data-calendar': c.id },
      h('td', { class: 'wrap' }, h('a', { href: `#/calendars/${c.id}` }, c.name),
        c.description ? h('div', { class: 'hint' }, c.description) : null),
      h('td', null, c.time_zone),
      h('td', { class: 'wrap' }, rulesSummary(c)),
      h('td', { class: 'num' }, c.version),
      h('td', { class: 'wrap' }, usedByCell(usage.by.get(c.name))),
      h('td', null, operate ? h('div', { class: 'actions' },
        h('a', { class: 'button small', href: `#/calendars/${c.id}/edit` }, 'Edit'),
        h('button', { class: 'small danger', onclick: async () => { if (await deleteCalendar(c, banner)) await load(); } },
          'Delete')) : null));
    replace(list, table(['Calendar', 'Zone', 'Excludes', 'Version', 'Used by', ''], calendars.items.map(row),
      'No calendars yet. A calendar excludes dates, weekdays or daily windows from the jobs that name it.'));
    note.textContent = usage.complete ? '' : `"Used by" looks at the first ${MAX_PAGES * PAGE} jobs.`;
  }

  main.append(
    h('h1', null, 'Calendars'),
    h('div', { class: 'toolbar' }, h('span', { class: 'subtle' },
      'Shared excluded periods: a job that names a calendar gets no fire in them (the fire ledger says why).'),
    h('span', { class: 'spacer' }),
    operate ? h('a', { class: 'button primary', href: '#/calendars/new' }, 'New calendar') : null),
    banner, list, note);
  await load();
}

// ---- one calendar and its preview ----

// "09:30" on the calendar's wall clock; "24:00" for the end of a period that ends at midnight.
function clock(ms, zone, isEnd) {
  const text = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', hour12: false, timeZone: zone })
    .format(new Date(ms));
  return isEnd && text === '00:00' ? '24:00' : text;
}

const minutes = (hhmm) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

// One preview day: its excluded periods, the allowed times between them, and a 24-hour bar.
function dayRow(day, zone) {
  const periods = day.excluded.map((p) => [clock(p.from, zone, false), clock(p.to, zone, true)]);
  const whole = periods.length === 1 && periods[0][0] === '00:00' && periods[0][1] === '24:00';
  const allowed = [];
  let at = '00:00';
  for (const [from, to] of periods) {
    if (minutes(from) > minutes(at)) allowed.push(`${at}–${from}`);
    at = to;
  }
  if (minutes(at) < 24 * 60) allowed.push(`${at}–24:00`);
  const bar = h('div', { class: 'day-bar', title: periods.map(([f, t]) => `${f}–${t}`).join(', ') },
    periods.map(([from, to]) => {
      // Through the CSSOM: the CSP (style-src 'self') refuses style attributes.
      const span = h('span', { class: 'excluded' });
      span.style.left = `${(minutes(from) / 14.4).toFixed(2)}%`;
      span.style.width = `${((minutes(to) - minutes(from)) / 14.4).toFixed(2)}%`;
      return span;
    }));
  return h('tr', { 'data-day': day.date, class: whole ? 'excluded-day' : null },
    h('td', null, day.date, h('div', { class: 'hint' }, day.weekday)),
    h('td', null, bar),
    h('td', { class: 'wrap' }, whole ? badge('excluded all day', 'failed')
      : periods.length ? periods.map(([f, t]) => `${f}–${t}`).join(', ') : h('span', { class: 'subtle' }, 'none')),
    h('td', { class: 'wrap' }, whole ? h('span', { class: 'subtle' }, 'none') : allowed.join(', ')));
}

async function previewInto(container, id, days) {
  const p = await get(withQuery(`/api/v1/calendars/${id}/preview`, { days }));
  replace(container,
    h('div', { class: 'toolbar' },
      h('span', null, `Local days in ${p.time_zone}; now ${fmtTime(p.now, p.time_zone)}: `,
        p.excluded_now ? badge('excluded', 'failed') : badge('allowed', 'enabled'))),
    table(['Day', '00:00 – 24:00', 'Excluded', 'Allowed'], p.days.map((d) => dayRow(d, p.time_zone)), 'No days.'));
}

export async function calendarView(main, ctx) {
  const operate = canOperate(ctx.who);
  const id = ctx.params[0];
  const c = await get(`/api/v1/calendars/${id}`);
  const usage = await jobsByCalendar();
  const banner = h('div', { class: 'banner' });
  const preview = h('div', { class: 'calendar-preview' });
  const days = h('select', { name: 'days' }, [7, 14, 31, 90].map((n) => h('option', { value: n, selected: n === 14 },
    `${n} days`)));
  days.addEventListener('change', () => previewInto(preview, id, days.value).catch((e) => ctx.fail(e)));
  const list = (xs) => (xs?.length ? xs.join(', ') : '—');
  const facts = [
    ['Time zone', c.time_zone], ['Excluded weekdays', list(c.excluded_weekdays)],
    ['Excluded dates', list(c.excluded_dates)], ['Excluded daily times', list(c.excluded_times)],
    ['Description', c.description || '—'], ['Version', c.version],
    ['Used by', usedByCell(usage.by.get(c.name))], ['Updated', fmtTime(c.updated_at)],
  ];
  const history = h('div', { class: 'history' });
  main.append(
    h('h1', null, `Calendar "${c.name}"`, h('span', { class: 'spacer' }), operate ? h('div', { class: 'actions' },
      h('a', { class: 'button', href: `#/calendars/${id}/edit` }, 'Edit'),
      h('button', { class: 'danger', onclick: async () => {
        if (await deleteCalendar(c, banner)) location.hash = '#/calendars';
      } }, 'Delete')) : null),
    banner,
    h('div', { class: 'panel' }, factList(facts)),
    h('h2', null, 'Preview ', days), preview,
    h('h2', null, 'History'), history);
  await previewInto(preview, id, days.value);
  auditHistory(history, 'calendar', id);
}

// ---- create / edit ----

const lines = (text) => text.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);

function zones() {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch {
    return ['UTC'];
  }
}

export async function calendarFormView(main, ctx) {
  const id = ctx.params[0];
  if (!canOperate(ctx.who)) return formDenied(main, ctx.who, id ? 'Edit calendar' : 'New calendar', 'calendars');
  const c = id ? await get(`/api/v1/calendars/${id}`) : {
    name: '', description: '', time_zone: 'UTC', excluded_dates: [], excluded_weekdays: [], excluded_times: [],
  };
  const area = (name, value, placeholder) => {
    const el = h('textarea', { name, spellcheck: 'false', placeholder });
    el.value = value;
    return el;
  };
  const name = h('input', { name: 'name', maxlength: 191, value: c.name, required: true, disabled: Boolean(id) });
  const zone = h('input', { name: 'time_zone', list: 'calendar-zones', autocomplete: 'off', value: c.time_zone });
  const weekdays = h('input', { name: 'excluded_weekdays', value: c.excluded_weekdays.join(', '),
    placeholder: 'sat, sun', autocomplete: 'off' });
  const dates = area('excluded_dates', c.excluded_dates.join('\n'), '2026-12-25\n2026-12-24..2026-12-26');
  const times = area('excluded_times', c.excluded_times.join('\n'), '22:00-06:00');
  const description = h('textarea', { name: 'description', class: 'plain' });
  description.value = c.description ?? '';
  const save = h('button', { class: 'primary', type: 'submit' }, id ? 'Save changes' : 'Create calendar');
  const form = h('form', { class: 'panel', novalidate: true },
    h('div', { class: 'banner' }),
    h('div', { class: 'grid' },
      field('Name', name, id ? 'fixed: jobs refer to it by name' : 'jobs refer to it by this name'),
      field('Time zone', zone, 'IANA name; the rules are read on its wall clock'),
      field('Excluded weekdays', weekdays, 'mon … sun, separated by commas'),
      h('label', { class: 'wide' }, 'Excluded dates', dates,
        h('span', { class: 'hint' }, 'one per line: YYYY-MM-DD or a range YYYY-MM-DD..YYYY-MM-DD (inclusive)'),
        h('span', { class: 'field-error' })),
      h('label', { class: 'wide' }, 'Excluded daily times', times,
        h('span', { class: 'hint' }, 'one per line: HH:MM-HH:MM, start included, end not; 22:00-06:00 crosses midnight'),
        h('span', { class: 'field-error' })),
      h('label', { class: 'wide' }, 'Description', description, h('span', { class: 'field-error' }))),
    h('div', { class: 'actions' }, save,
      h('a', { class: 'button', href: id ? `#/calendars/${id}` : '#/calendars' }, 'Cancel')),
    h('datalist', { id: 'calendar-zones' }, zones().map((z) => h('option', { value: z }))));

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearErrors(form);
    const body = {
      description: description.value,
      time_zone: zone.value.trim() || 'UTC',
      excluded_weekdays: lines(weekdays.value),
      excluded_dates: lines(dates.value),
      excluded_times: lines(times.value),
    };
    if (id) body.version = c.version;
    else body.name = name.value.trim();
    await saveForm({
      collection: '/api/v1/calendars',
      page: 'calendars',
      id,
      body,
      button: save,
      stale: (e) => showError(form, { message: `Someone changed this calendar since you opened it (you edited version `
        + `${c.version}): ${e.message}. Reload the page to edit the current version; your changes here are not saved.` }),
      failed: (e) => showError(form, e),
    });
  });

  main.append(h('h1', null, id ? `Edit calendar "${c.name}"` : 'New calendar'), form);
  (id ? zone : name).focus();
}
