// Fire history (status, lag, duration) and one fire with its log and a kill button.

import { canOperate, get, post, withQuery } from '../api.js';
import { badge, bannerError, factList, fmtDuration, h, replace, table, timeCell } from '../dom.js';

const STATUSES = ['pending', 'dispatching', 'running', 'succeeded', 'failed', 'timeout', 'killed', 'lost', 'skipped'];
// Why a fire ended without running, or waits (concurrency) (the ledger; docs/architecture/fire-ledger.md).
const REASONS = ['misfire', 'paused', 'job_deleted', 'blocked', 'no_executor', 'slave_died', 'slave_restarted',
  'executor_gone', 'no_result', 'calendar', 'upstream', 'run_timeout', 'succeeded_late', 'concurrency'];
const reasonText = (f) => (f.reason ? `${f.reason}${f.skipped_count ? ` · ${f.skipped_count} time(s)` : ''}` : '');
const ACTIVE = new Set(['pending', 'dispatching', 'running']);

// The last cells of a row of a fire table (here and on a job's page): lag, duration, executor
// and result.
export const fireOutcomeCells = (f) => [
  h('td', { class: 'num' }, fmtDuration(f.lag_ms)),
  h('td', { class: 'num' }, fmtDuration(f.duration_ms)),
  h('td', null, f.executor_address ?? '—'),
  h('td', { class: 'wrap' }, f.result_message ?? ''),
];

// Job names and zones for the fire tables (one page is enough to label what is on screen).
async function jobInfo() {
  try {
    const page = await get('/api/v1/jobs?limit=200');
    return new Map(page.items.map((j) => [j.id, j]));
  } catch {
    return new Map();
  }
}

// The job filter takes an id or a name: digits are an id; a name is looked up with the jobs
// search (exact name first, case-insensitive; else the one job whose name contains it).
// Resolves to { id } or { error }.
async function resolveJob(text) {
  const wanted = text.trim();
  if (wanted === '') return { id: '' };
  if (/^\d+$/.test(wanted)) return { id: wanted };
  const page = await get(withQuery('/api/v1/jobs', { q: wanted, limit: 200 }));
  const exact = page.items.filter((j) => j.name.toLowerCase() === wanted.toLowerCase());
  const pick = exact.length ? exact : page.items;
  if (pick.length === 1) return { id: String(pick[0].id) };
  if (pick.length === 0) return { error: `No job is named "${wanted}".` };
  return { error: `Several jobs match "${wanted}" (${pick.slice(0, 5).map((j) => `${j.name} in ${j.app}: id ${j.id}`).join(', ')}); enter an id.` };
}

const toMs = (local) => (local ? String(new Date(local).getTime()) : '');

export async function firesView(main, ctx) {
  const names = await jobInfo();
  const jobList = h('datalist', { id: 'fire-job-names' }, [...names.values()].map((j) => h('option', { value: j.name })));
  const jobId = h('input', { name: 'job', type: 'search', placeholder: 'Job name or id', list: 'fire-job-names',
    autocomplete: 'off', value: ctx.query.get('job') ?? ctx.query.get('job_id') ?? '' });
  let jobFilter = '';
  let unresolved = false; // the job filter names no job (or several): nothing to list or refresh
  const status = h('select', { name: 'status' }, h('option', { value: '' }, 'Any status'),
    STATUSES.map((s) => h('option', { value: s }, s)));
  status.value = ctx.query.get('status') ?? '';
  const reason = h('select', { name: 'reason' }, h('option', { value: '' }, 'Any reason'),
    REASONS.map((r) => h('option', { value: r }, r)));
  reason.value = ctx.query.get('reason') ?? '';
  const from = h('input', { type: 'datetime-local', name: 'from', step: 1 });
  const to = h('input', { type: 'datetime-local', name: 'to', step: 1 });
  const banner = h('div', { class: 'banner' });
  const list = h('div');
  const more = h('div', { class: 'more' });
  let fires = [];
  let cursor = null;

  const params = (limit) => ({ job_id: jobFilter, status: status.value, reason: reason.value, from: toMs(from.value), to: toMs(to.value), limit });
  const draw = () => {
    replace(list, table(['Fire', 'Job', 'Status', 'Scheduled', 'Lag', 'Duration', 'Executor', 'Result'],
      fires.map((f) => h('tr', { 'data-fire': f.id },
        h('td', null, h('a', { href: `#/fires/${f.id}` }, `#${f.id}`),
          h('div', { class: 'hint' }, `${f.kind}${f.attempt ? ` · attempt ${f.attempt}` : ''}${f.shard_total > 1 ? ` · shard ${f.shard_index + 1}/${f.shard_total}` : ''}`)),
        h('td', null, h('a', { href: `#/jobs/${f.job_id}` }, names.get(f.job_id)?.name ?? `job ${f.job_id}`)),
        h('td', null, badge(f.status), f.reason ? h('div', { class: 'hint' }, reasonText(f)) : null),
        h('td', null, timeCell(f.scheduled_time, names.get(f.job_id)?.time_zone)),
        ...fireOutcomeCells(f))),
      'No fires match.'));
    replace(more, cursor ? h('button', { onclick: () => load(true).catch((e) => ctx.fail(e)) }, 'Load more') : null);
  };
  async function load(append = false) {
    if (!append) {
      const job = await resolveJob(jobId.value);
      unresolved = Boolean(job.error);
      if (job.error) {
        fires = [];
        cursor = null;
        banner.textContent = job.error;
        replace(list);
        replace(more);
        return;
      }
      jobFilter = job.id;
    }
    const page = await get(withQuery('/api/v1/fires', { ...params(50), cursor: append ? cursor : '' }));
    fires = append ? fires.concat(page.items) : page.items;
    cursor = page.next_cursor;
    banner.textContent = '';
    draw();
  }
  async function refresh() {
    if (unresolved) return;
    const page = await get(withQuery('/api/v1/fires', params(Math.min(200, Math.max(50, fires.length)))));
    fires = page.items;
    cursor = page.next_cursor;
    draw();
  }
  const reload = () => load().catch((e) => { banner.textContent = e.message; });
  for (const el of [jobId, status, reason, from, to]) el.addEventListener('change', reload);

  main.append(h('h1', null, 'Fires'),
    h('div', { class: 'toolbar' }, jobId, jobList, status, reason,
      h('label', null, 'Scheduled from', from), h('label', null, 'to', to)),
    banner, list, more);
  await load();
  ctx.every(5000, () => refresh().catch(() => {}));
}

export async function fireView(main, ctx) {
  const operate = canOperate(ctx.who);
  const id = ctx.params[0];
  const header = h('h1');
  const banner = h('div', { class: 'banner' });
  const facts = h('div', { class: 'panel' });
  const log = h('div');
  let fire = null;
  let job = null;
  let logFinal = false; // the log shown is the stored one, or the executor said the run finished
  let extraPolls = 0; // after the run ended, a few more log reads until the stored log arrives

  async function loadFire() {
    fire = await get(`/api/v1/fires/${id}`);
    if (!job) job = await get(`/api/v1/jobs/${fire.job_id}`).catch(() => null);
    replace(header, `Fire #${fire.id}`, badge(fire.status),
      fire.status === 'running' && operate
        ? h('button', {
          class: 'danger',
          onclick: async () => {
            if (!confirm(`Kill fire #${fire.id}?`)) return;
            try {
              const result = await post(`/api/v1/fires/${id}/kill`);
              banner.className = 'banner info';
              banner.textContent = result.executor.delivered
                ? 'Killed; the executor was asked to stop the run.'
                : `Marked killed, but the executor could not be told: ${result.executor.error ?? 'no address'}`;
              // The run has ended: show its final state and the log as it is now, not "still running".
              await loadFire();
              await loadLog();
            } catch (e) {
              bannerError(banner, e);
            }
          },
        }, 'Kill')
        : null);
    const rows = [
      ['Job', h('a', { href: `#/jobs/${fire.job_id}` }, job?.name ?? `job ${fire.job_id}`)],
      ['Kind', `${fire.kind}${fire.attempt ? `, attempt ${fire.attempt}` : ''}`],
      // A workflow step's fire (kind workflow, docs/workflows.md) links to its run.
      ...(fire.workflow_run_id != null ? [['Workflow run', [h('a', { href: `#/workflow-runs/${fire.workflow_run_id}` },
        `#${fire.workflow_run_id}`), fire.workflow_step ? ` step "${fire.workflow_step}"` : '']]] : []),
      ['Shard', `${fire.shard_index + 1} of ${fire.shard_total}`],
      ['Scheduled', timeCell(fire.scheduled_time, job?.time_zone)],
      ['Dispatched', timeCell(fire.dispatched_at, job?.time_zone)],
      ['Lag', fmtDuration(fire.lag_ms)],
      ['Started', timeCell(fire.started_at, job?.time_zone)],
      ['Finished', timeCell(fire.finished_at, job?.time_zone)],
      ['Duration', fmtDuration(fire.duration_ms)],
      ['Trigger node', fire.assigned_node ?? '—'],
      ['Executor', fire.executor_address ?? '—'],
      // The epoch the executor was given (and logs) is the dispatch epoch; a manual fire is
      // inserted by the API under no master (epoch 0), so show the dispatch epoch once it exists.
      ['Epoch', fire.dispatch_epoch != null
        ? h('span', { 'data-epoch': fire.dispatch_epoch }, String(fire.dispatch_epoch),
          h('div', { class: 'hint' }, fire.epoch ? `dispatched; planned under ${fire.epoch}` : 'dispatched; created by the API'))
        : h('span', { class: 'subtle', 'data-epoch': '' }, 'not dispatched yet')],
      ['Result', fire.result_message ?? '—'],
      ['Reason', reasonText(fire) || '—'],
      ...(fire.skipped_until != null ? [['Skipped until', timeCell(fire.skipped_until, job?.time_zone)]] : []),
    ];
    replace(facts, factList(rows));
  }
  async function loadLog() {
    try {
      const page = await get(`/api/v1/fires/${id}/log`);
      logFinal = page.source === 'stored' || page.finished;
      replace(log, h('pre', { class: 'log' }, page.lines.length ? page.lines.join('\n') : '(no lines)'),
        h('div', { class: 'hint' }, page.source === 'stored'
          ? `stored with the result from ${page.executor_address ?? '—'}` +
            (page.truncated_bytes > 0 ? ` (last part only: ${page.truncated_bytes} bytes cut from the start)` : '')
          : `live from ${page.executor_address}${page.finished || !ACTIVE.has(page.fire_status)
            ? `, run ended (${page.fire_status})` : ', still running'}`));
    } catch (e) {
      replace(log, h('div', { class: 'panel subtle' }, e.message));
    }
  }

  main.append(header, banner, h('div', { class: 'columns' },
    h('div', null, h('h2', null, 'Log'), log), h('div', null, h('h2', null, 'Details'), facts)));
  await loadFire();
  await loadLog();
  ctx.every(3000, async () => {
    if (!fire) return;
    if (!ACTIVE.has(fire.status)) {
      // Ended (e.g. killed) while the log shown is still the live one: read it again a few
      // times, until the executor's stored log replaces it.
      if (logFinal || extraPolls >= 10) return;
      extraPolls += 1;
      await loadLog();
      return;
    }
    await loadFire().catch(() => {});
    await loadLog(); // also once more after the run ended, so its final log and state show
  });
}
