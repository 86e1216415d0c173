// Small DOM and formatting helpers. Text always goes in as text nodes, never as HTML.

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'value' || key === 'checked' || key === 'disabled') el[key] = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function badge(text, kind = text) {
  return h('span', { class: `badge ${kind}` }, text);
}

// The one rule for times in the UI: "2025-03-30 09:30:00 CEST", always with its zone label, in the
// zone the header's switch names (kept in localStorage): "job" (the default) is the job's zone
// where the time belongs to a job (`timeZone`), else the browser's; "browser" and "utc" are that
// zone for every time.
export const TIME_RULES = ['job', 'browser', 'utc'];
const TIME_RULE_KEY = 'sched.timeRule';

export function timeRule() {
  try {
    const rule = localStorage.getItem(TIME_RULE_KEY);
    return TIME_RULES.includes(rule) ? rule : 'job';
  } catch {
    return 'job'; // storage refused (private mode): today's rule
  }
}

export function setTimeRule(rule) {
  if (!TIME_RULES.includes(rule)) return;
  try {
    localStorage.setItem(TIME_RULE_KEY, rule);
  } catch {
    // not kept across reloads, still applied by the caller's re-render
  }
}

// The zone a time is shown in under the current rule; undefined is the browser's.
function ruleZone(timeZone) {
  const rule = timeRule();
  if (rule === 'utc') return 'UTC';
  return rule === 'job' ? timeZone : undefined;
}

// The zone of a time that belongs to no job (a chart's axis) under the current rule: UTC, else
// the browser's.
export function displayZone() {
  return timeRule() === 'utc' ? 'UTC' : Intl.DateTimeFormat().resolvedOptions().timeZone;
}

export function fmtTime(ms, timeZone) {
  if (ms === null || ms === undefined) return '—';
  const options = {
    year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false, timeZoneName: 'short',
  };
  const zone = ruleZone(timeZone);
  if (zone) options.timeZone = zone;
  try {
    return new Intl.DateTimeFormat('sv-SE', options).format(new Date(ms));
  } catch {
    return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }
}

// Job params as the API returns them (any JSON value; a string when stored as free text) as the
// text a person reads and edits.
export function paramsText(params) {
  if (params === null || params === undefined) return '';
  return typeof params === 'string' ? params : JSON.stringify(params, null, 2);
}

// "in 35 s", "4 min ago"
export function fmtRelative(ms, now = Date.now()) {
  if (ms === null || ms === undefined) return '';
  const d = ms - now;
  const abs = Math.abs(d);
  let text;
  if (abs < 1000) return 'now';
  if (abs < 60_000) text = `${Math.round(abs / 1000)} s`;
  else if (abs < 3_600_000) text = `${Math.round(abs / 60_000)} min`;
  else if (abs < 86_400_000) text = `${Math.round(abs / 3_600_000)} h`;
  else text = `${Math.round(abs / 86_400_000)} d`;
  return d > 0 ? `in ${text}` : `${text} ago`;
}

export function fmtDuration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${m} min ${s} s`;
}

export function timeCell(ms, timeZone) {
  if (ms === null || ms === undefined) return h('span', { class: 'subtle' }, '—');
  return h('span', { title: new Date(ms).toISOString() }, fmtTime(ms, timeZone),
    h('div', { class: 'hint' }, fmtRelative(ms)));
}

// A resource's facts as a definition list: [label, value] rows.
export function factList(rows) {
  return h('dl', { class: 'facts' }, rows.map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

export function table(headers, rows, emptyText) {
  if (rows.length === 0) return h('div', { class: 'panel empty' }, emptyText);
  // Wide tables scroll inside their box, so a phone-width page never scrolls sideways.
  return h('div', { class: 'table-scroll' }, h('table', null,
    h('thead', null, h('tr', null, headers.map((x) => h('th', null, x)))),
    h('tbody', null, rows)));
}

// Shows an ApiError next to the field it names (inputs carry name="<field>" and a sibling
// .field-error), or in the form's banner when it names none of them.
export function showError(form, error) {
  clearErrors(form);
  if (error.field && setFieldError(form, error.field, error.message)) {
    form.querySelector(`[name="${CSS.escape(error.field)}"]`).focus();
    return;
  }
  const banner = form.querySelector('.banner');
  if (banner) banner.textContent = error.message;
}

// Marks one field invalid with `message` ('' clears it); false when the form has no such field.
// Shows a failed action's message in a view's banner, as an error whatever it showed before.
export function bannerError(banner, error) {
  banner.className = 'banner';
  banner.textContent = error.message;
}

// A view's `act`: awaits an action, then `reload()`s what the view shows; a failure shows in
// `banner` instead.
export function actor(banner, reload) {
  return async (promise) => {
    try {
      await promise;
      await reload();
    } catch (e) {
      bannerError(banner, e);
    }
  };
}

// What a form view shows a token that may not change `things` (a viewer's).
export function formDenied(main, who, title, things) {
  main.append(h('h1', null, title),
    h('div', { class: 'panel subtle' }, `Your token (${who?.role ?? 'unknown'}) cannot create or edit ${things}.`));
}

export function setFieldError(form, name, message) {
  const input = form.querySelector(`[name="${CSS.escape(name)}"]`);
  if (!input) return false;
  const label = input.closest('label') ?? input.parentElement;
  label.classList.toggle('invalid', Boolean(message));
  const slot = label.querySelector('.field-error');
  if (slot) slot.textContent = message;
  return true;
}

export function clearErrors(form) {
  for (const el of form.querySelectorAll('.invalid')) el.classList.remove('invalid');
  for (const el of form.querySelectorAll('.field-error')) el.textContent = '';
  const banner = form.querySelector('.banner');
  if (banner) banner.textContent = '';
}

// A labelled input with its error slot.
export function field(labelText, input, hint) {
  return h('label', null, labelText, input, hint ? h('span', { class: 'hint' }, hint) : null,
    h('span', { class: 'field-error', 'data-for': input.name }));
}

export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
