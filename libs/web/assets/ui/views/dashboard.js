// The dashboard: fires over time by outcome (a stacked SVG bar chart), success and dispatch lag
// per job, fires running and overdue now, and live executors per app.

import { get } from '../api.js';
import { badge, displayZone, fmtDuration, fmtRelative, h, replace, table, timeCell } from '../dom.js';

const SVG = 'http://www.w3.org/2000/svg';
const WINDOWS = ['1h', '6h', '24h'];
// Bottom to top; the colours are CSS classes (style.css), the CSP allows no inline styles.
const STACK = ['succeeded', 'failed', 'timeout', 'lost', 'killed', 'skipped', 'running', 'dispatching', 'pending'];

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs ?? {})) el.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  return el;
}

function timeLabel(ms, withDate, zone) {
  const parts = {};
  const format = new Intl.DateTimeFormat('en-US', {
    month: 'numeric', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZone: zone,
  });
  for (const p of format.formatToParts(new Date(ms))) parts[p.type] = p.value;
  const hm = `${parts.hour}:${parts.minute}`;
  return withDate ? `${parts.month}/${parts.day} ${hm}` : hm;
}

// One bar per bucket, stacked by outcome; each segment has a tooltip with its count.
export function outcomeChart(data) {
  const zone = displayZone();
  const width = 960;
  const height = 220;
  const left = 44;
  const bottom = 22;
  const n = data.buckets.length;
  const totals = data.buckets.map((b) => STACK.reduce((sum, k) => sum + (b.times[k] ?? 0), 0));
  const max = Math.max(1, ...totals);
  const plotH = height - bottom - 8;
  const barW = (width - left) / Math.max(n, 1);
  const svg = s('svg', {
    viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img',
    'aria-label': `Scheduled times by outcome, ${data.window}`, 'data-total': totals.reduce((a, b) => a + b, 0),
  });
  for (const frac of [0, 0.5, 1]) {
    const y = 8 + plotH * (1 - frac);
    svg.append(s('line', { x1: left, x2: width, y1: y, y2: y, class: 'grid' }),
      s('text', { x: left - 6, y: y + 4, class: 'axis', 'text-anchor': 'end' }, Math.round(max * frac)));
  }
  const every = Math.max(1, Math.ceil(n / 8));
  data.buckets.forEach((b, i) => {
    const x = left + i * barW;
    let y = 8 + plotH;
    for (const k of STACK) {
      const count = b.times[k] ?? 0;
      if (count === 0) continue;
      const hgt = (count / max) * plotH;
      y -= hgt;
      svg.append(s('rect', {
        x: x + 0.5, y, width: Math.max(barW - 1, 0.5), height: Math.max(hgt, 0.5),
        class: `seg ${k}`, 'data-outcome': k, 'data-count': count,
      }, s('title', null, `${timeLabel(b.start_ms, data.window === '24h', zone)}: ${count} ${k}`)));
    }
    if (i === 0) {
      // The axis is in the browser's zone or UTC (the chart spans every job): say which.
      svg.append(s('text', { x: width, y: 8 + 12, class: 'axis chart-zone', 'text-anchor': 'end' }, zone));
    }
    if (i % every === 0) {
      svg.append(s('text', { x: x + barW / 2, y: height - 6, class: 'axis', 'text-anchor': 'middle' },
        timeLabel(b.start_ms, false, zone)));
    }
  });
  return svg;
}

function legend(data) {
  const sums = {};
  for (const b of data.buckets) for (const [k, v] of Object.entries(b.times)) sums[k] = (sums[k] ?? 0) + v;
  return h('div', { class: 'legend' }, STACK.filter((k) => sums[k]).map((k) =>
    h('span', { 'data-outcome': k }, h('i', { class: `swatch ${k}` }), `${k} ${sums[k]}`)));
}

function rate(r) {
  if (r === null || r === undefined) return h('span', { class: 'subtle' }, '—');
  const pct = `${(r * 100).toFixed(r === 1 ? 0 : 1)} %`;
  return badge(pct, r >= 0.99 ? 'succeeded' : r >= 0.9 ? 'timeout' : 'failed');
}

function activeRows(fires, now, overdue) {
  return fires.map((f) => h('tr', { 'data-fire': f.id },
    h('td', null, h('a', { href: `#/fires/${f.id}` }, `#${f.id}`)),
    h('td', null, f.job_name ? h('a', { href: `#/jobs/${f.job_id}` }, f.job_name) : `job ${f.job_id}`),
    h('td', null, badge(f.status)),
    h('td', null, timeCell(f.scheduled_time)),
    h('td', { class: 'num' }, overdue ? fmtDuration(now - f.due_at)
      : f.started_at ? fmtDuration(now - f.started_at) : '—'),
    h('td', { class: 'mono' }, f.executor_address ?? f.assigned_node ?? '—')));
}

export async function dashboardView(main, ctx) {
  const window = WINDOWS.includes(ctx.query.get('window')) ? ctx.query.get('window') : '1h';
  const picker = h('div', { class: 'actions' }, WINDOWS.map((w) =>
    h('a', { class: `button${w === window ? ' primary' : ''}`, href: `#/dashboard?window=${w}`, 'data-window': w }, w)));
  const summary = h('div', { class: 'panel stat', id: 'dash-summary' });
  const chart = h('div', { class: 'panel', id: 'dash-chart' });
  const jobs = h('div', { id: 'dash-jobs' });
  const live = h('div', { id: 'dash-live' });
  const executors = h('div', { class: 'cards', id: 'dash-executors' });

  async function load() {
    const [data, ex] = await Promise.all([
      get(`/api/v1/dashboard?window=${window}`),
      get('/api/v1/executors'),
    ]);
    if (ctx.disposed) return;
    let ended = 0;
    let ok = 0;
    for (const j of data.jobs) { ended += j.succeeded + j.failed; ok += j.succeeded; }
    const appsDown = ex.apps.filter((a) => a.alive_instances === 0).length;
    replace(summary,
      h('div', null, h('span', { class: 'subtle' }, `Success (${window})`),
        h('b', { 'data-stat': 'success' }, ended ? `${((ok / ended) * 100).toFixed(1)} %` : '—')),
      h('div', null, h('span', { class: 'subtle' }, 'Running now'), h('b', { 'data-stat': 'running' }, data.running)),
      h('div', null, h('span', { class: 'subtle' }, 'Pending'), h('b', { 'data-stat': 'pending' }, data.pending)),
      h('div', null, h('span', { class: 'subtle' }, `Overdue (> ${fmtDuration(data.overdue_after_ms)})`),
        h('b', { 'data-stat': 'overdue', class: data.overdue > 0 ? 'bad' : '' }, data.overdue)),
      h('div', null, h('span', { class: 'subtle' }, 'Jobs with fires'), h('b', { 'data-stat': 'jobs' }, data.jobs_total)),
      h('div', null, h('span', { class: 'subtle' }, 'Apps without a live executor'),
        h('b', { 'data-stat': 'apps-down', class: appsDown > 0 ? 'bad' : '' }, appsDown)));
    replace(chart, h('h2', null, `Scheduled times by outcome, last ${window}`),
      h('div', { class: 'hint' }, `Bars of ${fmtDuration(data.bucket_ms)}; a misfire summary counts every time it skipped.`),
      outcomeChart(data), legend(data));
    replace(jobs, table(['Job', 'App', 'Succeeded', 'Failed', 'Skipped', 'Success', 'Avg lag', 'Max lag', 'Last success'],
      data.jobs.map((j) => h('tr', { 'data-job': j.job_id },
        h('td', null, j.name ? h('a', { href: `#/jobs/${j.job_id}` }, j.name) : h('span', { class: 'subtle' }, `deleted job ${j.job_id}`)),
        h('td', null, j.app || '—'),
        h('td', { class: 'num' }, j.succeeded),
        h('td', { class: 'num' }, j.failed),
        h('td', { class: 'num' }, j.skipped),
        h('td', null, rate(j.success_rate)),
        h('td', { class: 'num' }, fmtDuration(j.lag_avg_ms)),
        h('td', { class: 'num' }, fmtDuration(j.lag_max_ms)),
        h('td', null, j.last_success_ms ? fmtRelative(j.last_success_ms) : '—'))),
      `No fire was scheduled in the last ${window}.`));
    if (data.jobs_total > data.jobs.length) {
      jobs.append(h('div', { class: 'hint' }, `${data.jobs.length} of ${data.jobs_total} jobs shown, most failures first.`));
    }
    replace(live,
      h('h2', null, 'Overdue'),
      table(['Fire', 'Job', 'Status', 'Scheduled', 'Overdue by', 'Node'], activeRows(data.overdue_fires, data.now_ms, true),
        'No fire is overdue.'),
      h('h2', null, 'Running'),
      table(['Fire', 'Job', 'Status', 'Scheduled', 'Running for', 'Executor'], activeRows(data.running_fires, data.now_ms, false),
        'Nothing is running.'));
    replace(executors, ex.apps.length === 0
      ? h('div', { class: 'panel empty' }, 'No executor has registered yet.')
      : ex.apps.map((a) => h('section', { class: 'panel', 'data-app': a.app },
        h('h2', null, a.app, ' ', badge(`${a.alive_instances}/${a.instances} alive`, a.alive_instances > 0 ? 'alive' : 'dead')),
        h('div', { class: 'hint' }, `handlers: ${a.handlers.join(', ') || '—'}`))));
  }

  main.append(h('h1', null, 'Dashboard', h('span', { class: 'spacer' }), picker), summary, chart,
    h('h2', null, 'Jobs'), jobs, live, h('h2', null, 'Executors per app'), executors);
  await load();
  ctx.every(10000, () => load().catch(() => {}));
}
