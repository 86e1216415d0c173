// Jobs: the list, one job with its recent fires, and the create/edit form with a live preview.

import { ApiError, canOperate, del, get, post, saveForm, withQuery } from '../api.js';
import { auditHistory } from './audit.js';
import { fireOutcomeCells } from './fires.js';
import {
  actor, badge, bannerError, clearErrors, debounce, factList, field, fmtDuration, fmtRelative, fmtTime,
  formDenied, h, paramsText, replace, setFieldError, showError, table, timeCell,
} from '../dom.js';

export const SCHEDULE_TYPES = ['cron', 'fixed-rate', 'fixed-delay', 'once', 'manual'];
export const MISFIRE = ['fire-once-now', 'skip', 'fire-all'];
const ROUTINGS = ['round-robin', 'first', 'last', 'random', 'consistent-hash', 'least-frequently-used',
  'least-recently-used', 'failover', 'busy-over', 'sharding-broadcast'];
// The overlap policies (docs/api.md "Concurrency and overlap"); the first three are aliases.
const BLOCK = ['serial', 'discard-later', 'cover-early', 'skip', 'buffer-one', 'buffer-all', 'cancel-other',
  'terminate-other', 'allow-all'];
const DST_GAP = ['auto', 'skip', 'shift-forward'];
const DST_OVERLAP = ['auto', 'first', 'last', 'both'];

// The preview's `dst` section: the zone's next offset change and the fire times around it.
function dstPreview(dst, zone) {
  if (!dst) return null;
  const what = dst.kind === 'gap' ? 'Clocks go forward' : 'Clocks go back';
  return h('div', { class: 'dst-preview' },
    h('h4', null, `${what} ${fmtTime(dst.transition, zone)}`),
    h('div', { class: 'hint' }, `gap: ${dst.dst_gap}, repeated time: ${dst.dst_overlap}`),
    dst.times.length ? h('ol', { class: 'dst-times' }, dst.times.map((t) => h('li', null, fmtTime(t, zone))))
      : h('div', { class: 'subtle' }, 'No fire times within 12 hours of it.'));
}
export const EXPR_HINTS = {
  'cron': 'Quartz "sec min hour day month weekday [year]" (e.g. 0 */5 * * * ?) or Unix "min hour day month weekday"',
  'fixed-rate': 'an interval, optionally @anchor: 30s, 5m, 1h@2025-01-01T00:00:00',
  'fixed-delay': 'the pause after each run ends, optionally @first: 10s, 1m@2025-01-01T09:00:00',
  'once': 'an instant: 2025-01-01T09:00:00 (in the time zone), with Z or +02:00, or epoch ms',
  'manual': 'leave empty: the job runs only when triggered',
};

// An object declared in a file (`managed_by`, set by `schedctl apply`) is changed by editing that
// file: the next apply would put back an edit made here. So its definition is shown read-only with
// this note; operations (trigger, pause, resume) stay, they are not part of the definition.
export function managedNote(obj) {
  if (!obj?.managed_by) return null;
  return h('div', { class: 'banner info managed-note', 'data-managed-by': obj.managed_by },
    'Managed by ', h('code', null, obj.managed_by), ', edit the file (schedctl apply); changes made here are undone by the next apply.');
}

function scheduleText(job) {
  return h('div', null, h('code', null, job.schedule_expr || '(manual)'),
    h('div', { class: 'hint' }, `${job.schedule_type} · ${job.time_zone}`));
}

function stateBadge(job) {
  return job.enabled ? badge('enabled') : badge('paused');
}

function lastResult(job) {
  const f = job.last_fire;
  if (!f) return h('span', { class: 'subtle' }, 'never fired');
  return h('a', { href: `#/fires/${f.id}` }, badge(f.status),
    h('div', { class: 'hint' }, fmtRelative(f.finished_at ?? f.scheduled_time)));
}

async function trigger(job, banner) {
  const result = await post(`/api/v1/jobs/${job.id}/trigger`);
  const fire = result.items[0];
  replace(banner, 'Fire ', h('a', { href: `#/fires/${fire.id}` }, `#${fire.id}`),
    ` of "${job.name}" created; the cluster dispatches it within a moment.`);
  banner.className = 'banner info';
}

// The backfill form of a job (operators): a dry run lists the times and which already have a
// fire; Start creates the backfill (docs/api.md "Backfills").
function backfillPanel(job) {
  const instant = (v) => (/^\d+$/.test(v.trim()) ? Number(v.trim()) : v.trim());
  const from = h('input', { name: 'backfill-from', placeholder: 'from: 2026-11-20T00:00:00Z or epoch ms' });
  const to = h('input', { name: 'backfill-to', placeholder: 'to (exclusive, not in the future)' });
  const overlap = h('select', { name: 'backfill-overlap' }, h('option', { value: 'serial' }, 'serial'),
    h('option', { value: 'parallel' }, 'parallel'));
  const parallel = h('input', { name: 'backfill-parallel', type: 'number', min: 1, max: 100, value: 4 });
  const out = h('div', { class: 'backfill-result' });
  async function send(dryRun) {
    const body = { from: instant(from.value), to: instant(to.value), overlap: overlap.value, dry_run: dryRun };
    if (overlap.value === 'parallel') body.max_parallel = Number(parallel.value);
    try {
      const r = await post(`/api/v1/jobs/${job.id}/backfill`, body);
      if (dryRun) {
        const shown = r.items.slice(0, 50);
        replace(out, h('div', null, `${r.would_run} of ${r.planned} scheduled time(s) would run.`),
          h('ol', null, shown.map((i) => h('li', null, fmtTime(i.scheduled_time, job.time_zone),
            i.existing ? h('span', { class: 'subtle' }, ` — skipped, has a ${i.existing} fire`) : ''))),
          r.items.length > shown.length ? h('div', { class: 'subtle' }, `and ${r.items.length - shown.length} more`) : '');
      } else {
        replace(out, `Backfill #${r.id} created: ${r.counts.planned} scheduled time(s), ${r.overlap}; `
          + 'its fires appear below as they run.');
      }
    } catch (e) {
      replace(out, h('span', { class: 'error' }, e.message));
    }
  }
  return h('div', { class: 'panel backfill' }, h('h3', null, 'Backfill'),
    h('div', { class: 'hint' }, 'Run the job for every scheduled time in a past range; times that already have a fire are skipped.'),
    from, to, overlap, parallel,
    h('div', { class: 'actions' },
      h('button', { onclick: () => send(true) }, 'Dry run'),
      h('button', { class: 'primary', onclick: () => send(false) }, 'Start backfill')),
    out);
}

// ---- the list ----

// The list's sortable columns: `sort=<key>` (or `-<key>`, descending) in the page's address. The
// API pages by id, so a sort orders the rows loaded (a page of 50, "Load more" adds more).
const SORTS = {
  name: (a, b) => a.name.localeCompare(b.name),
  app: (a, b) => a.app.localeCompare(b.app) || a.handler.localeCompare(b.handler),
  // Paused jobs have no next fire: they sort after the others either way round.
  next: (a, b) => nextKey(a) - nextKey(b),
  last: (a, b) => (a.last_fire?.status ?? '~').localeCompare(b.last_fire?.status ?? '~')
    || lastKey(b) - lastKey(a),
};
const nextKey = (job) => (job.enabled && job.next_fire_time != null ? job.next_fire_time : Number.MAX_SAFE_INTEGER);
const lastKey = (job) => job.last_fire?.finished_at ?? job.last_fire?.scheduled_time ?? 0;

function parseSort(text) {
  const desc = text?.startsWith('-') ?? false;
  const key = desc ? text.slice(1) : text;
  return SORTS[key] ? { key, desc } : null;
}

function sortJobs(jobs, sort) {
  if (!sort) return jobs;
  const cmp = SORTS[sort.key];
  return [...jobs].sort((a, b) => (sort.desc ? -cmp(a, b) : cmp(a, b)) || a.id - b.id);
}

// The bulk actions: each selected job in turn (a failure does not stop the others), its outcome
// as the text returned.
const BULK = {
  Pause: async (job) => { await post(`/api/v1/jobs/${job.id}/pause`, {}); return 'paused'; },
  Resume: async (job) => { await post(`/api/v1/jobs/${job.id}/resume`); return 'resumed'; },
  Trigger: async (job) => {
    const result = await post(`/api/v1/jobs/${job.id}/trigger`);
    return `fire #${result.items[0].id} created`;
  },
  Delete: async (job) => { await del(`/api/v1/jobs/${job.id}`); return 'deleted'; },
};

export async function jobsView(main, ctx) {
  const operate = canOperate(ctx.who); // viewers see no mutating controls
  const q = h('input', { type: 'search', name: 'q', placeholder: 'Search names', value: ctx.query.get('q') ?? '' });
  const app = h('input', { name: 'app', placeholder: 'App', value: ctx.query.get('app') ?? '' });
  const enabled = h('select', { name: 'enabled' }, h('option', { value: '' }, 'All'),
    h('option', { value: 'true' }, 'Enabled'), h('option', { value: 'false' }, 'Paused'));
  enabled.value = ctx.query.get('enabled') ?? '';
  const banner = h('div', { class: 'banner' });
  const list = h('div');
  const more = h('div', { class: 'more' });
  const bulkBar = h('div', { class: 'toolbar bulk' });
  const bulkResults = h('div');
  let jobs = [];
  let cursor = null;
  let sort = parseSort(ctx.query.get('sort'));
  const selected = new Set(); // job ids, kept across refreshes
  let busy = false;

  // The filters and the sort in the address, so a reload or a shared link shows the same list.
  const keepInAddress = () => {
    const query = new URLSearchParams();
    for (const [name, value] of [['q', q.value.trim()], ['app', app.value.trim()], ['enabled', enabled.value],
      ['sort', sort ? `${sort.desc ? '-' : ''}${sort.key}` : '']]) {
      if (value) query.set(name, value);
    }
    const text = query.toString();
    history.replaceState(null, '', `#/jobs${text ? `?${text}` : ''}`);
  };
  const sortHeader = (label, key) => {
    const active = sort?.key === key;
    return h('button', {
      type: 'button', class: `link sort${active ? ' active' : ''}`, 'data-sort': key,
      'aria-label': `Sort by ${label.toLowerCase()}`,
      onclick: () => {
        sort = { key, desc: active && !sort.desc };
        keepInAddress();
        draw();
      },
    }, label, active ? (sort.desc ? ' ▼' : ' ▲') : '');
  };

  const row = (job) => h('tr', { 'data-job': job.id },
    operate ? h('td', null, h('input', {
      type: 'checkbox', class: 'select-job', 'aria-label': `Select ${job.name}`, checked: selected.has(job.id),
      onchange: (ev) => {
        if (ev.target.checked) selected.add(job.id);
        else selected.delete(job.id);
        drawBulk();
        draw();
      },
    })) : null,
    h('td', { class: 'wrap' }, h('a', { href: `#/jobs/${job.id}` }, job.name),
      job.description ? h('div', { class: 'hint' }, job.description) : null),
    h('td', null, job.app, h('div', { class: 'hint' }, job.handler)),
    h('td', null, scheduleText(job)),
    h('td', null, stateBadge(job)),
    h('td', { class: 'next-fire' },
      job.enabled ? timeCell(job.next_fire_time, job.time_zone) : h('span', { class: 'subtle' }, '—')),
    h('td', null, lastResult(job)),
    h('td', null, operate ? h('div', { class: 'actions' },
      h('button', { class: 'small', onclick: () => act(trigger(job, banner)) }, 'Trigger'),
      job.enabled
        ? h('button', { class: 'small', onclick: () => act(post(`/api/v1/jobs/${job.id}/pause`)) }, 'Pause')
        : h('button', { class: 'small', onclick: () => act(post(`/api/v1/jobs/${job.id}/resume`)) }, 'Resume'))
      : null));

  const draw = () => {
    const allSelected = jobs.length > 0 && jobs.every((job) => selected.has(job.id));
    const selectAll = h('input', {
      type: 'checkbox', class: 'select-all', 'aria-label': 'Select all shown', checked: allSelected,
      onchange: (ev) => {
        for (const job of jobs) {
          if (ev.target.checked) selected.add(job.id);
          else selected.delete(job.id);
        }
        drawBulk();
        draw();
      },
    });
    const headers = [sortHeader('Job', 'name'), sortHeader('App / handler', 'app'), 'Schedule', 'State',
      sortHeader('Next fire', 'next'), sortHeader('Last result', 'last'), ''];
    replace(list, table(operate ? [selectAll, ...headers] : headers, sortJobs(jobs, sort).map(row),
      'No jobs yet. Create one to get started.'));
    replace(more, cursor ? h('button', { onclick: () => load(true) }, 'Load more') : null);
  };
  // Pause, Resume, Trigger or Delete for the selected jobs, one after another; each job's outcome
  // is listed, and a failure (a 403, a job deleted meanwhile) does not stop the rest.
  async function runBulk(label) {
    const chosen = jobs.filter((job) => selected.has(job.id));
    if (!chosen.length || busy) return;
    if (label === 'Delete' && !confirm(`Delete ${chosen.length} job${chosen.length === 1 ? '' : 's'}? `
      + 'Their fires stay in the history.')) return;
    busy = true;
    drawBulk();
    const outcomes = h('ul', { class: 'bulk-results' });
    replace(bulkResults, h('div', { class: 'panel' }, h('b', null, `${label}: ${chosen.length} job(s)`), outcomes));
    for (const job of chosen) {
      let item;
      try {
        item = h('li', { 'data-job': job.id, class: 'ok' }, `${job.name}: ${await BULK[label](job)}`);
        if (label === 'Delete') selected.delete(job.id);
      } catch (e) {
        item = h('li', { 'data-job': job.id, class: 'error' }, `${job.name}: ${e.message}`);
      }
      outcomes.append(item);
    }
    busy = false;
    await refresh().catch((e) => bannerError(banner, e));
    drawBulk();
  }
  const drawBulk = () => {
    if (!operate) return;
    const none = selected.size === 0 || busy;
    replace(bulkBar, h('span', { class: 'subtle bulk-count' }, `${selected.size} selected`),
      Object.keys(BULK).map((label) => h('button', {
        class: `small${label === 'Delete' ? ' danger' : ''}`, disabled: none, 'data-bulk': label,
        onclick: () => runBulk(label),
      }, label)));
  };
  const params = (limit) => ({ q: q.value.trim(), app: app.value.trim(), enabled: enabled.value, limit });
  async function load(append = false) {
    const page = await get(withQuery('/api/v1/jobs', { ...params(50), cursor: append ? cursor : '' }));
    jobs = append ? jobs.concat(page.items) : page.items;
    cursor = page.next_cursor;
    draw();
  }
  // Refreshing keeps what is shown (up to one page of 200).
  async function refresh() {
    const page = await get(withQuery('/api/v1/jobs', params(Math.min(200, Math.max(50, jobs.length)))));
    jobs = page.items;
    cursor = page.next_cursor;
    // A selected job no longer listed (deleted, filtered out) is no longer selected.
    const shown = new Set(jobs.map((job) => job.id));
    for (const id of selected) if (!shown.has(id)) selected.delete(id);
    drawBulk();
    draw();
  }
  const act = actor(banner, () => refresh());

  const reload = debounce(() => {
    keepInAddress();
    load().catch((e) => ctx.fail(e));
  }, 250);
  q.addEventListener('input', reload);
  app.addEventListener('input', reload);
  enabled.addEventListener('change', reload);
  drawBulk();
  main.append(
    h('h1', null, 'Jobs'),
    h('div', { class: 'toolbar' }, q, app, enabled, h('span', { class: 'spacer' }),
      operate ? h('a', { class: 'button primary', href: '#/jobs/new' }, 'New job') : null),
    operate ? bulkBar : null, banner, bulkResults, list, more);
  await load();
  ctx.every(5000, () => refresh().catch(() => {}));
}

// ---- one job ----

// Pause with an optional note (who/when/why shows on the job and in its history); null: cancelled.
function pauseWithNote(id) {
  const note = prompt('Pause this job. Why? (optional, shown on the job and in its history)', '');
  if (note === null) return Promise.resolve();
  return post(`/api/v1/jobs/${id}/pause`, note.trim() ? { note: note.trim().slice(0, 1024) } : {});
}

export async function jobView(main, ctx) {
  const operate = canOperate(ctx.who);
  const id = ctx.params[0];
  const banner = h('div', { class: 'banner' });
  const header = h('h1');
  const managed = h('div');
  const facts = h('div', { class: 'panel' });
  const preview = h('div', { class: 'panel preview' });
  const fires = h('div');
  const history = h('div', { class: 'history' });
  let job = null;

  const act = actor(banner, () => loadJob());
  async function loadJob() {
    job = await get(`/api/v1/jobs/${id}`);
    const definable = operate && !job.managed_by;
    replace(managed, managedNote(job));
    replace(header, job.name, stateBadge(job), h('span', { class: 'spacer' }),
      !operate ? null : h('span', { class: 'actions' },
        definable ? h('a', { class: 'button', href: `#/jobs/${id}/edit` }, 'Edit') : null,
        h('a', { class: 'button', href: `#/jobs/new?copy=${id}` }, 'Copy'),
        h('button', { class: 'primary', onclick: () => act(trigger(job, banner).then(loadFires)) }, 'Trigger now'),
        job.enabled
          ? h('button', { onclick: () => act(pauseWithNote(id)) }, 'Pause')
          : h('button', { onclick: () => act(post(`/api/v1/jobs/${id}/resume`)) }, 'Resume'),
        !definable ? null : h('button', {
          class: 'danger',
          onclick: async () => {
            if (!confirm(`Delete job "${job.name}"? Its fires stay in the history.`)) return;
            try {
              await del(`/api/v1/jobs/${id}`);
              location.hash = '#/jobs';
            } catch (e) {
              banner.textContent = e.message;
            }
          },
        }, 'Delete')));
    const rows = [
      ['App', job.app], ['Handler', job.handler],
      ['Schedule', scheduleText(job)],
      ...(job.paused ? [['Paused', h('span', { class: 'paused-note' }, `by ${job.paused.by}, ${fmtTime(job.paused.at)}`,
        job.paused.note ? h('div', null, job.paused.note) : null)]] : []),
      ['Next fire', job.completed_at ? `completed (${job.completed_reason}) ${fmtTime(job.completed_at, job.time_zone)}`
        : job.enabled ? timeCell(job.next_fire_time, job.time_zone) : 'paused'],
      // Calendar and bounds (docs/schedules.md).
      ['Calendar', job.calendar ?? '—'],
      ['Concurrency key', job.concurrency_key ?? '—'],
      ['Start', job.start_at ? fmtTime(job.start_at, job.time_zone) : '—'],
      ['End', job.end_at ? fmtTime(job.end_at, job.time_zone) : '—'],
      ['Max runs', job.max_runs ? `${job.planned_runs} of ${job.max_runs} planned` : '—'],
      ['Misfire policy', job.misfire_policy], ['Routing', job.routing], ['Block strategy', job.block_strategy],
      ['Timeout', job.timeout_ms ? fmtDuration(job.timeout_ms) : 'none'],
      ['Retries', job.retry_max ? `${job.retry_max} (backoff ${fmtDuration(job.retry_backoff_ms)})` : 'none'],
      ['Shards', job.shard_total], ['At least once', job.at_least_once ? 'yes' : 'no'],
      ['Jitter', job.jitter_ms ? `up to ${fmtDuration(job.jitter_ms)}` : 'none'],
      ['DST', `gap: ${job.dst_gap ?? 'auto'}, repeated time: ${job.dst_overlap ?? 'auto'}`],
      ['Params', paramsText(job.params) ? h('code', null, paramsText(job.params)) : '—'],
      ['Description', job.description || '—'], ['Version', job.version],
      ['Managed by', job.managed_by ?? 'made by hand'],
    ];
    replace(facts, factList(rows));
    const next = await get(`/api/v1/jobs/${id}/next?count=5`);
    replace(preview, h('h3', null, 'Next fire times'), h('div', { class: 'zone' }, next.time_zone),
      next.times.length ? h('ol', null, next.times.map((t) => h('li', null, fmtTime(t, next.time_zone))))
        : h('div', { class: 'subtle' }, next.ends ? `No more: the job ends (${next.ends}).` : 'No upcoming fire times.'),
      next.excluded?.length ? h('div', { class: 'subtle' }, `Skipped by calendar ${next.calendar}: `,
        next.excluded.map((t) => fmtTime(t, next.time_zone)).join(', ')) : null,
      dstPreview(next.dst, next.time_zone));
    await auditHistory(history, 'job', id);
  }
  async function loadFires() {
    const page = await get(withQuery('/api/v1/fires', { job_id: id, limit: 20 }));
    replace(fires, table(['Fire', 'Status', 'Scheduled', 'Lag', 'Duration', 'Executor', 'Result'],
      page.items.map((f) => h('tr', { 'data-fire': f.id },
        h('td', null, h('a', { href: `#/fires/${f.id}` }, `#${f.id}`), h('div', { class: 'hint' }, f.kind)),
        h('td', null, badge(f.status)),
        h('td', null, timeCell(f.scheduled_time, job?.time_zone)),
        ...fireOutcomeCells(f))),
      'No fires yet.'));
  }

  const backfill = h('div');
  main.append(header, managed, banner, h('div', { class: 'columns' },
    h('div', null, h('h2', null, 'Recent fires ', h('a', { class: 'hint', href: `#/fires?job_id=${id}` }, 'all')), fires,
      h('h2', null, 'History ', h('a', { class: 'hint', href: `#/audit?target_kind=job&target_id=${id}` }, 'all')),
      history),
    h('div', { class: 'cards' }, facts, preview, backfill)));
  await loadJob();
  if (operate && job) replace(backfill, backfillPanel(job));
  await loadFires();
  ctx.every(3000, () => loadFires().catch(() => {}));
}

// ---- create / edit ----

// The params box as the API takes them: a JSON object or array as JSON (stored compact, read back
// as JSON), anything else as the text typed (stored verbatim, as before JSON params).
function paramsValue(text) {
  try {
    const value = JSON.parse(text);
    if (value !== null && typeof value === 'object') return value;
  } catch {
    // not JSON: free text
  }
  return text;
}

export function select(name, options, value) {
  const el = h('select', { name }, options.map((o) => h('option', { value: o }, o)));
  el.value = value;
  return el;
}

export function timeZones() {
  try {
    return ['UTC', ...Intl.supportedValuesOf('timeZone').filter((z) => z !== 'UTC')];
  } catch {
    return ['UTC'];
  }
}

// "Copy" on a job's page: the create form filled with its definition and the name "<name> (copy)".
// The copy is made by hand (no managed_by) and starts with no history.
function copyJob(source) {
  const { id: _id, version: _version, managed_by: _managed, ...job } = source;
  return { ...job, name: `${source.name} (copy)` };
}

export async function jobFormView(main, ctx) {
  const id = ctx.params[0];
  if (!canOperate(ctx.who)) return formDenied(main, ctx.who, id ? 'Edit job' : 'New job', 'jobs');
  const copyOf = !id && /^\d+$/.test(ctx.query.get('copy') ?? '') ? ctx.query.get('copy') : null;
  const job = id ? await get(`/api/v1/jobs/${id}`) : copyOf ? copyJob(await get(`/api/v1/jobs/${copyOf}`)) : {
    name: '', app: '', handler: '', description: '', params: '', schedule_type: 'cron',
    schedule_expr: '0 */5 * * * ?', time_zone: 'UTC', misfire_policy: 'fire-once-now', routing: 'round-robin',
    block_strategy: 'serial', concurrency_limit: 1, timeout_ms: 0, retry_max: 0, retry_backoff_ms: 1000,
    shard_total: 1, at_least_once: false, enabled: true, pause_after_failures: 0,
    jitter_ms: 0, dst_gap: 'auto', dst_overlap: 'auto',
    calendar: null, start_at: null, end_at: null, max_runs: null, concurrency_key: null,
  };
  if (job.managed_by) {
    // Reached by its address only (the job's page has no Edit button): no form, the note instead.
    main.append(h('h1', null, `Edit "${job.name}"`), managedNote(job),
      h('a', { class: 'button', href: `#/jobs/${id}` }, 'Back to the job'));
    return;
  }
  const instantText = (ms) => (ms == null ? '' : new Date(ms).toISOString());
  const input = (name, props = {}) => h('input', { name, value: job[name] ?? '', ...props });
  const number = (name, min) => h('input', { name, type: 'number', min, step: 1, value: job[name] });
  const type = select('schedule_type', SCHEDULE_TYPES, job.schedule_type);
  const expr = input('schedule_expr', { class: 'mono', autocomplete: 'off', spellcheck: 'false' });
  const zone = input('time_zone', { list: 'zones', autocomplete: 'off' });
  const exprHint = h('span', { class: 'hint' });
  const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: job.enabled });
  const atLeastOnce = h('input', { type: 'checkbox', name: 'at_least_once', checked: job.at_least_once });
  const paramsBox = h('textarea', { name: 'params', spellcheck: 'false', placeholder: '{"key": "value"}' });
  paramsBox.value = paramsText(job.params);
  const description = h('textarea', { name: 'description', class: 'plain' });
  description.value = job.description ?? '';
  const previewList = h('div', { class: 'preview-body' });
  const save = h('button', { class: 'primary', type: 'submit' }, id ? 'Save changes' : 'Create job');
  const appList = h('datalist', { id: 'executor-apps' });
  const handlerList = h('datalist', { id: 'executor-handlers' });

  const form = h('form', { class: 'panel', novalidate: true },
    h('div', { class: 'banner' }),
    h('div', { class: 'grid' },
      field('Name', input('name', { required: true, maxlength: 191 })),
      field('App', input('app', { required: true, maxlength: 128, list: 'executor-apps', autocomplete: 'off' }),
        'the executor app that runs it'),
      field('Handler', input('handler', { required: true, maxlength: 128, list: 'executor-handlers', autocomplete: 'off' })),
      field('Schedule type', type),
      h('label', { class: 'wide' }, 'Schedule', expr, exprHint, h('span', { class: 'field-error' })),
      field('Time zone', zone, `IANA name; your browser: ${browserZone}`),
      field('Misfire policy', select('misfire_policy', MISFIRE, job.misfire_policy)),
      field('Routing', select('routing', ROUTINGS, job.routing)),
      field('Overlap policy', select('block_strategy', BLOCK, job.block_strategy),
        'when the limit is reached, cluster-wide; serial = buffer-all'),
      field('Timeout (ms)', number('timeout_ms', 0), '0 = none'),
      field('Retries', number('retry_max', 0)),
      field('Retry backoff (ms)', number('retry_backoff_ms', 1)),
      field('Concurrency limit', number('concurrency_limit', 1), 'runs at once, cluster-wide (not for allow-all)'),
      field('Concurrency key', input('concurrency_key', { maxlength: 64, autocomplete: 'off' }),
        'a limit shared with other jobs; empty = none'),
      field('Shards', number('shard_total', 1)),
      field('Pause after failures', number('pause_after_failures', 0), '0 = never; failed runs in a row'),
      field('Jitter (ms)', number('jitter_ms', 0), '0 = none; up to 3600000, stable per job and time'),
      field('DST gap', select('dst_gap', DST_GAP, job.dst_gap ?? 'auto'), 'a time clocks skip'),
      field('DST repeated time', select('dst_overlap', DST_OVERLAP, job.dst_overlap ?? 'auto'), 'a time that occurs twice'),
      field('Calendar', input('calendar', { maxlength: 191, autocomplete: 'off' }), 'excluded periods; empty = none'),
      field('Start at', h('input', { name: 'start_at', value: instantText(job.start_at), class: 'mono' }),
        'ISO-8601 or epoch ms; empty = now'),
      field('End at', h('input', { name: 'end_at', value: instantText(job.end_at), class: 'mono' }),
        'then the job completes; empty = never'),
      field('Max runs', h('input', { name: 'max_runs', type: 'number', min: 1, step: 1, value: job.max_runs ?? '' }),
        'empty = no limit'),
      h('label', { class: 'wide' }, 'Params', paramsBox,
        h('span', { class: 'hint' }, 'passed to the handler; JSON arrives as JSON'), h('span', { class: 'field-error' })),
      h('label', { class: 'wide' }, 'Description', description, h('span', { class: 'field-error' })),
      h('label', { class: 'check' }, enabled, 'Enabled'),
      h('label', { class: 'check' }, atLeastOnce, 'At least once (retry a run lost with its node)')),
    h('div', { class: 'actions' }, save,
      h('a', { class: 'button', href: id ? `#/jobs/${id}` : '#/jobs' }, 'Cancel')),
    h('datalist', { id: 'zones' }, timeZones().map((z) => h('option', { value: z }))),
    appList, handlerList);

  // The live preview: the next times in the job's zone, or the parser's error at the field.
  const PREVIEW_FIELDS = ['schedule_type', 'schedule_expr', 'time_zone', 'jitter_ms', 'dst_gap', 'dst_overlap'];
  let previewSeq = 0;
  const refreshPreview = debounce(async () => {
    const seq = ++previewSeq;
    exprHint.textContent = EXPR_HINTS[type.value] ?? '';
    const body = { schedule_type: type.value, schedule_expr: expr.value, time_zone: zone.value.trim() || 'UTC',
      count: 5, dst_gap: form.elements.namedItem('dst_gap').value,
      dst_overlap: form.elements.namedItem('dst_overlap').value };
    const jitter = intValue('jitter_ms');
    if (jitter !== undefined) body.jitter_ms = jitter;
    try {
      const result = await post('/api/v1/schedules/validate', body);
      if (seq !== previewSeq) return;
      for (const name of PREVIEW_FIELDS) setFieldError(form, name, '');
      replace(previewList, h('div', { class: 'zone' }, `in ${result.time_zone}`),
        result.times.length
          ? h('ol', { class: 'preview-times' }, result.times.map((t) => h('li', null, fmtTime(t, result.time_zone))))
          : h('div', { class: 'subtle' }, type.value === 'manual' ? 'Runs only when triggered.'
            : 'No fire time after now.'),
        result.uses_hash && !id ? h('div', { class: 'hint' }, 'H is resolved from the job id once the job is saved.')
          : null,
        dstPreview(result.dst, result.time_zone));
    } catch (e) {
      if (seq !== previewSeq) return;
      for (const name of PREVIEW_FIELDS) setFieldError(form, name, '');
      if (!(e instanceof ApiError) || !setFieldError(form, e.field ?? 'schedule_expr', e.message)) {
        replace(previewList, h('div', { class: 'field-error' }, e.message));
        return;
      }
      replace(previewList, h('div', { class: 'subtle' }, 'Fix the schedule to see its next times.'));
    }
  }, 250);
  for (const el of [type, expr, zone]) el.addEventListener('input', refreshPreview);
  type.addEventListener('change', refreshPreview);
  for (const name of ['dst_gap', 'dst_overlap']) form.elements.namedItem(name).addEventListener('change', refreshPreview);
  form.elements.namedItem('jitter_ms').addEventListener('input', refreshPreview);

  // The app and handler inputs suggest what the live executors registered (the handlers of the
  // app typed, or every app's); any other text is still taken, for an app not started yet.
  let executors = [];
  const suggestHandlers = () => {
    const typed = form.elements.namedItem('app').value.trim();
    const apps = executors.filter((a) => a.app === typed);
    const handlers = [...new Set((apps.length ? apps : executors).flatMap((a) => a.handlers))].sort();
    replace(handlerList, handlers.map((name) => h('option', { value: name })));
  };
  get('/api/v1/executors').then((data) => {
    executors = data.apps;
    replace(appList, executors.map((a) => h('option', { value: a.app },
      `${a.alive_instances}/${a.instances} alive`)));
    suggestHandlers();
  }).catch(() => {}); // no suggestions; the inputs stay free text
  form.elements.namedItem('app').addEventListener('input', suggestHandlers);

  const intValue = (name) => {
    const raw = form.elements.namedItem(name).value.trim();
    if (raw === '') return undefined;
    const n = Number(raw);
    return Number.isInteger(n) ? n : raw; // the server names the field when it is not a number
  };
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearErrors(form);
    const body = {
      name: form.elements.namedItem('name').value.trim(),
      app: form.elements.namedItem('app').value.trim(),
      handler: form.elements.namedItem('handler').value.trim(),
      schedule_type: type.value,
      schedule_expr: expr.value,
      time_zone: zone.value.trim() || 'UTC',
      misfire_policy: form.elements.namedItem('misfire_policy').value,
      routing: form.elements.namedItem('routing').value,
      block_strategy: form.elements.namedItem('block_strategy').value,
      dst_gap: form.elements.namedItem('dst_gap').value,
      dst_overlap: form.elements.namedItem('dst_overlap').value,
      params: paramsValue(paramsBox.value),
      description: description.value,
      enabled: enabled.checked,
      at_least_once: atLeastOnce.checked,
    };
    for (const name of ['timeout_ms', 'retry_max', 'retry_backoff_ms', 'concurrency_limit', 'shard_total',
      'pause_after_failures', 'jitter_ms']) {
      const v = intValue(name);
      if (v !== undefined) body[name] = v;
    }
    body.calendar = form.elements.namedItem('calendar').value.trim() || null;
    body.concurrency_key = form.elements.namedItem('concurrency_key').value.trim() || null;
    for (const name of ['start_at', 'end_at']) {
      const raw = form.elements.namedItem(name).value.trim();
      body[name] = raw === '' ? null : /^\d+$/.test(raw) ? Number(raw) : raw;
    }
    body.max_runs = intValue('max_runs') ?? null;
    if (id) body.version = job.version;
    await saveForm({
      collection: '/api/v1/jobs',
      page: 'jobs',
      id,
      body,
      button: save,
      stale: (e) => showError(form, { message: `${e.message}. Reload the page to edit the current version.` }),
      failed: (e) => showError(form, e),
    });
  });

  main.append(h('h1', null, id ? `Edit "${job.name}"` : 'New job'),
    copyOf ? h('div', { class: 'hint copy-of' }, 'A copy of ', h('a', { href: `#/jobs/${copyOf}` }, `job ${copyOf}`),
      '; nothing is saved until Create job.') : null,
    h('div', { class: 'form-layout' }, form,
      h('aside', { class: 'panel preview' }, h('h3', null, 'Next fire times'), previewList)));
  refreshPreview();
  form.elements.namedItem('name').focus();
}
