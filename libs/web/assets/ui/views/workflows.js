// Workflows (docs/workflows.md): the list, one workflow with its DAG and runs, and one run with
// each step's state on the same DAG, its fires, and "re-run from" a step.

import { canOperate, get, post, withQuery } from '../api.js';
import {
  actor, badge, bannerError, factList, fmtDuration, fmtTime, h, paramsText, replace, table,
  timeCell,
} from '../dom.js';
import { managedNote } from './jobs.js';

const SVG = 'http://www.w3.org/2000/svg';
// The API's bounds (docs/workflows.md "Definition"): drawing never goes past them, whatever comes.
const MAX_STEPS = 64;
const MAX_EDGES = 256;
const STEP_STATES = ['waiting', 'running', 'succeeded', 'failed', 'skipped'];
const RERUNNABLE = new Set(['failed', 'timed-out']);

// The box and the gaps of the DAG drawing, in SVG units (one unit = one CSS pixel).
const NODE_W = 156;
const NODE_H = 44;
const GAP_X = 84;
const GAP_Y = 18;
const PAD = 12;

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  return el;
}

const clip = (text, max) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

function scheduleText(wf) {
  return h('div', null, h('code', null, wf.schedule_expr || '(manual)'),
    h('div', { class: 'hint' }, `${wf.schedule_type} · ${wf.time_zone}`));
}

// Job names for the step tables (one page is enough to label what is on screen).
async function jobNames() {
  try {
    const page = await get('/api/v1/jobs?limit=200');
    return new Map(page.items.map((j) => [j.id, j.name]));
  } catch {
    return new Map();
  }
}
const jobLink = (names, jobId) => h('a', { href: `#/jobs/${jobId}` }, names.get(jobId) ?? `job ${jobId}`);

const pausedBadge = (wf) => (wf.paused ? badge('paused') : badge('active', 'enabled'));

// The steps and edges to draw: at most the API's bounds, edges only between drawn steps.
function bounded(steps, edges) {
  const shown = (steps ?? []).slice(0, MAX_STEPS);
  const names = new Set(shown.map((st) => st.name));
  const links = (edges ?? []).slice(0, MAX_EDGES).filter((e) => names.has(e.parent) && names.has(e.child)
    && e.parent !== e.child);
  return { steps: shown, edges: links, hidden: (steps?.length ?? 0) - shown.length };
}

// Layer of each step = the longest path from a root (Kahn's order over the edges); a step left
// over by a cycle (the API refuses them; drawing must still end) goes after the deepest layer.
export function dagLayers(steps, edges) {
  const layer = new Map(steps.map((st) => [st.name, 0]));
  const indegree = new Map(steps.map((st) => [st.name, 0]));
  const children = new Map(steps.map((st) => [st.name, []]));
  for (const e of edges) {
    children.get(e.parent).push(e.child);
    indegree.set(e.child, indegree.get(e.child) + 1);
  }
  const queue = steps.filter((st) => indegree.get(st.name) === 0).map((st) => st.name);
  const placed = new Set();
  while (queue.length) {
    const name = queue.shift();
    placed.add(name);
    for (const child of children.get(name)) {
      layer.set(child, Math.max(layer.get(child), layer.get(name) + 1));
      indegree.set(child, indegree.get(child) - 1);
      if (indegree.get(child) === 0) queue.push(child);
    }
  }
  const deepest = Math.max(0, ...[...placed].map((n) => layer.get(n)));
  for (const st of steps) if (!placed.has(st.name)) layer.set(st.name, deepest + 1);
  return layer;
}

// Positions: one column per layer, left to right; within a column, steps ordered by the mean row
// of their parents (fewer crossings), then by their given order.
function dagLayout(steps, edges) {
  const layer = dagLayers(steps, edges);
  const order = new Map(steps.map((st, i) => [st.name, i]));
  const parents = new Map(steps.map((st) => [st.name, []]));
  for (const e of edges) parents.get(e.child).push(e.parent);
  const columns = [];
  for (const st of steps) (columns[layer.get(st.name)] ??= []).push(st.name);
  const row = new Map();
  for (const column of columns) {
    if (!column) continue;
    const key = (name) => {
      const rows = parents.get(name).map((p) => row.get(p)).filter((r) => r !== undefined);
      return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : order.get(name);
    };
    column.sort((a, b) => key(a) - key(b) || order.get(a) - order.get(b));
    column.forEach((name, i) => row.set(name, i));
  }
  const pos = new Map();
  for (const st of steps) {
    pos.set(st.name, { x: PAD + layer.get(st.name) * (NODE_W + GAP_X), y: PAD + row.get(st.name) * (NODE_H + GAP_Y) });
  }
  const rows = Math.max(1, ...columns.map((c) => c?.length ?? 0));
  return {
    pos,
    width: 2 * PAD + columns.length * NODE_W + Math.max(0, columns.length - 1) * GAP_X,
    height: 2 * PAD + rows * NODE_H + (rows - 1) * GAP_Y,
  };
}

// The DAG as plain SVG: a box per step (class "node <state>", data-step, data-state), a line per
// edge (class "edge <condition>") labelled with its condition unless on-success. `state(step)`
// gives a step's state in a run, or null on the workflow's page; `href(step)` an optional link.
export function dagSvg(allSteps, allEdges, { state = () => null, href = () => null, subtitle } = {}) {
  const { steps, edges, hidden } = bounded(allSteps, allEdges);
  const { pos, width, height } = dagLayout(steps, edges);
  const svg = s('svg', {
    class: 'dag', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': `Workflow graph: ${steps.length} step(s), ${edges.length} edge(s)`,
    'data-steps': steps.length,
  });
  svg.append(s('defs', null, s('marker', {
    id: 'dag-arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto',
  }, s('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrow' }))));
  for (const e of edges) {
    const a = pos.get(e.parent);
    const b = pos.get(e.child);
    const x1 = a.x + NODE_W;
    const y1 = a.y + NODE_H / 2;
    const x2 = b.x;
    const y2 = b.y + NODE_H / 2;
    const bend = Math.max(24, (x2 - x1) / 2);
    const condition = e.condition ?? 'on-success';
    svg.append(s('path', {
      d: `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}`,
      class: `edge ${condition}`, 'marker-end': 'url(#dag-arrow)', 'data-parent': e.parent, 'data-child': e.child,
    }, s('title', null, `${e.parent} → ${e.child} (${condition})`)));
    if (condition !== 'on-success') {
      svg.append(s('text', { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, class: 'edge-label', 'text-anchor': 'middle' },
        condition));
    }
  }
  for (const st of steps) {
    const { x, y } = pos.get(st.name);
    const stepState = state(st);
    const g = s('g', {
      class: stepState ? `node ${stepState}` : 'node', 'data-step': st.name, 'data-state': stepState ?? undefined,
    },
    s('title', null, `${st.name} (job ${st.job_id})${stepState ? `: ${stepState}` : ''}`),
    s('rect', { x, y, width: NODE_W, height: NODE_H, rx: 5 }),
    s('text', { x: x + 10, y: y + 18, class: 'name' }, clip(st.name, 20)),
    s('text', { x: x + 10, y: y + 34, class: 'sub' }, clip(subtitle ? subtitle(st) : `job ${st.job_id}`, 24)));
    const link = href(st);
    svg.append(link ? s('a', { href: link }, g) : g);
  }
  return h('div', { class: 'dag-scroll' }, svg,
    hidden > 0 ? h('div', { class: 'hint' }, `${hidden} more step(s) not drawn (at most ${MAX_STEPS}).`) : null);
}

function stateLegend() {
  return h('div', { class: 'legend' }, STEP_STATES.map((st) =>
    h('span', { 'data-legend': st }, h('span', { class: `swatch step-${st}` }), st)));
}

// ---- the list ----

async function triggerRun(wf, banner) {
  const run = await post(`/api/v1/workflows/${wf.id}/trigger`, {});
  replace(banner, 'Run ', h('a', { href: `#/workflow-runs/${run.id}` }, `#${run.id}`),
    ` of "${wf.name}" created.`);
  banner.className = 'banner info';
  return run;
}

function pauseButton(wf, act, small) {
  const cls = small ? 'small' : undefined;
  return wf.paused
    ? h('button', { class: cls, onclick: () => act(post(`/api/v1/workflows/${wf.id}/resume`)) }, 'Resume')
    : h('button', { class: cls, onclick: () => act(post(`/api/v1/workflows/${wf.id}/pause`)) }, 'Pause');
}

export async function workflowsView(main, ctx) {
  const operate = canOperate(ctx.who); // viewers see no mutating controls
  const banner = h('div', { class: 'banner' });
  const list = h('div');
  const more = h('div', { class: 'more' });
  let workflows = [];
  let cursor = null;

  const act = actor(banner, () => refresh());
  const row = (wf) => h('tr', { 'data-workflow': wf.id },
    h('td', { class: 'wrap' }, h('a', { href: `#/workflows/${wf.id}` }, wf.name),
      wf.description ? h('div', { class: 'hint' }, wf.description) : null),
    h('td', null, scheduleText(wf)),
    h('td', null, pausedBadge(wf)),
    h('td', null, wf.paused ? h('span', { class: 'subtle' }, '—') : timeCell(wf.next_fire_time, wf.time_zone)),
    h('td', { class: 'num', 'data-steps': wf.steps?.length ?? 0 }, wf.steps?.length ?? 0),
    h('td', null, operate ? h('div', { class: 'actions' },
      h('button', { class: 'small', onclick: () => act(triggerRun(wf, banner)) }, 'Trigger'),
      pauseButton(wf, act, true)) : null));
  const draw = () => {
    replace(list, table(['Workflow', 'Schedule', 'State', 'Next run', 'Steps', ''], workflows.map(row),
      operate ? 'No workflows yet. Create one with New workflow.' : 'No workflows yet.'));
    replace(more, cursor ? h('button', { onclick: () => load(true).catch((e) => ctx.fail(e)) }, 'Load more') : null);
  };
  async function load(append = false) {
    const page = await get(withQuery('/api/v1/workflows', { limit: 50, cursor: append ? cursor : '' }));
    workflows = append ? workflows.concat(page.items) : page.items;
    cursor = page.next_cursor;
    draw();
  }
  // Refreshing keeps what is shown (up to one page of 200).
  async function refresh() {
    const page = await get(withQuery('/api/v1/workflows', { limit: Math.min(200, Math.max(50, workflows.length)) }));
    workflows = page.items;
    cursor = page.next_cursor;
    draw();
  }

  main.append(h('h1', null, 'Workflows'),
    h('div', { class: 'toolbar' }, h('span', { class: 'subtle' },
      'Named DAGs of jobs with their own schedule: a step starts when its parents have ended as its edges say.'),
    h('span', { class: 'spacer' }),
    operate ? h('a', { class: 'button primary', href: '#/workflows/new' }, 'New workflow') : null),
    banner, list, more);
  await load();
  ctx.every(5000, () => refresh().catch(() => {}));
}

// ---- one workflow ----

function runRow(run, timeZone) {
  return h('tr', { 'data-run': run.id },
    h('td', null, h('a', { href: `#/workflow-runs/${run.id}` }, `#${run.id}`),
      h('div', { class: 'hint' }, `${run.kind}${run.generation ? ` · re-run ${run.generation}` : ''}`)),
    h('td', null, badge(run.status), run.reason ? h('div', { class: 'hint' }, run.reason) : null),
    h('td', null, timeCell(run.scheduled_time, timeZone)),
    h('td', null, timeCell(run.started_at, timeZone)),
    h('td', { class: 'num' }, run.ended_at != null && run.started_at != null
      ? fmtDuration(run.ended_at - run.started_at) : '—'),
    h('td', null, run.created_by ?? ''));
}

export async function workflowView(main, ctx) {
  const operate = canOperate(ctx.who);
  const id = ctx.params[0];
  const banner = h('div', { class: 'banner' });
  const header = h('h1');
  const managed = h('div');
  const facts = h('div', { class: 'panel' });
  const graph = h('div', { class: 'panel' });
  const stepList = h('div');
  const runs = h('div');
  const more = h('div', { class: 'more' });
  let wf = null;
  let names = new Map();
  let items = [];
  let cursor = null;

  const act = actor(banner, async () => {
    await loadWorkflow();
    await loadRuns();
  });
  async function loadWorkflow() {
    wf = await get(`/api/v1/workflows/${id}`);
    replace(managed, managedNote(wf));
    replace(header, wf.name, pausedBadge(wf), h('span', { class: 'spacer' }),
      !operate ? null : h('span', { class: 'actions' },
        // A workflow managed from a file is edited in that file (managedNote).
        wf.managed_by ? null : h('a', { class: 'button', href: `#/workflows/${id}/edit` }, 'Edit'),
        h('button', { class: 'primary', onclick: () => act(triggerRun(wf, banner)) }, 'Trigger now'),
        pauseButton(wf, act, false)));
    const rows = [
      ['Schedule', scheduleText(wf)],
      ['Next run', wf.paused ? 'paused' : timeCell(wf.next_fire_time, wf.time_zone)],
      ['Misfire policy', wf.misfire_policy],
      ['Concurrent runs', `at most ${wf.max_concurrent_runs}`],
      ['Run timeout', wf.run_timeout_ms ? fmtDuration(wf.run_timeout_ms) : 'none'],
      ['Description', wf.description || '—'],
      ['Version', wf.version],
      ['Created', fmtTime(wf.created_at)], ['Updated', fmtTime(wf.updated_at)],
      ['Managed by', wf.managed_by ?? 'made by hand'],
    ];
    replace(facts, factList(rows));
    replace(graph, dagSvg(wf.steps, wf.edges, { href: (st) => `#/jobs/${st.job_id}` }));
    const parentsOf = (name) => (wf.edges ?? []).filter((e) => e.child === name)
      .map((e) => (e.condition && e.condition !== 'on-success' ? `${e.parent} (${e.condition})` : e.parent));
    replace(stepList, table(['Step', 'Job', 'After'],
      (wf.steps ?? []).slice(0, MAX_STEPS).map((st) => h('tr', { 'data-step': st.name },
        h('td', null, st.name),
        h('td', { class: 'wrap' }, jobLink(names, st.job_id)),
        h('td', { class: 'wrap' }, parentsOf(st.name).join(', ') || h('span', { class: 'subtle' }, 'start')))),
      'No steps.'));
  }
  const drawRuns = () => {
    replace(runs, table(['Run', 'Status', 'Scheduled', 'Started', 'Duration', 'By'],
      items.map((r) => runRow(r, wf?.time_zone)), 'No runs yet.'));
    replace(more, cursor ? h('button', { onclick: () => loadRuns(true).catch((e) => ctx.fail(e)) }, 'Load more') : null);
  };
  async function loadRuns(append = false) {
    const limit = append ? 20 : Math.min(200, Math.max(20, items.length));
    const page = await get(withQuery(`/api/v1/workflows/${id}/runs`, { limit, cursor: append ? cursor : '' }));
    items = append ? items.concat(page.items) : page.items;
    cursor = page.next_cursor;
    drawRuns();
  }

  main.append(header, managed, banner,
    h('h2', null, 'Graph'), graph,
    h('div', { class: 'columns' },
      h('div', null, h('h2', null, 'Runs'), runs, more),
      h('div', null, h('h2', null, 'Definition'), h('div', { class: 'cards' }, facts, stepList))));
  names = await jobNames();
  await loadWorkflow();
  await loadRuns();
  ctx.every(3000, () => loadRuns().catch(() => {}));
}

// ---- one run ----

function stepFire(st) {
  if (!st.fire_id) return h('span', { class: 'subtle' }, '—');
  return h('a', { href: `#/fires/${st.fire_id}` }, `#${st.fire_id}`,
    st.fire_status ? h('div', { class: 'hint' }, st.fire_status) : null);
}

export async function workflowRunView(main, ctx) {
  const operate = canOperate(ctx.who);
  const id = ctx.params[0];
  const banner = h('div', { class: 'banner' });
  const header = h('h1');
  const facts = h('div', { class: 'panel' });
  const graph = h('div', { class: 'panel' });
  const steps = h('div');
  let wf = null;
  let run = null;
  let names = new Map();

  async function rerun(step) {
    if (!confirm(`Re-run run #${run.id} from step "${step}"? It and every step after it run again.`)) return;
    try {
      await post(`/api/v1/workflow-runs/${run.id}/rerun`, { from_step: step });
      replace(banner, `Run #${run.id} re-runs from "${step}".`);
      banner.className = 'banner info';
      await load();
    } catch (e) {
      bannerError(banner, e);
    }
  }
  async function load() {
    run = await get(`/api/v1/workflow-runs/${id}`);
    if (!wf || wf.id !== run.workflow_id) {
      try {
        wf = await get(`/api/v1/workflows/${run.workflow_id}`);
      } catch {
        wf = { id: run.workflow_id, name: `workflow ${run.workflow_id}`, time_zone: undefined };
      }
    }
    const zone = wf.time_zone;
    replace(header, `Run #${run.id} of `, h('a', { href: `#/workflows/${run.workflow_id}` }, wf.name), badge(run.status));
    const rows = [
      ['Status', run.reason ? [badge(run.status), ' ', run.reason] : badge(run.status)],
      ['Kind', run.kind], ['Scheduled', timeCell(run.scheduled_time, zone)],
      ['Started', timeCell(run.started_at, zone)], ['Ended', timeCell(run.ended_at, zone)],
      ['Duration', run.ended_at != null && run.started_at != null ? fmtDuration(run.ended_at - run.started_at) : '—'],
      ['Re-runs', run.generation ? `${run.generation} (last from "${run.from_step}")` : 'none'],
      ['Definition', `version ${run.workflow_version}`],
      ['Params', paramsText(run.params) ? h('code', null, paramsText(run.params)) : '—'],
      ['Created by', run.created_by ?? '—'], ['Created', fmtTime(run.created_at, zone)],
    ];
    replace(facts, factList(rows));
    const byName = new Map((run.steps ?? []).map((st) => [st.name, st]));
    replace(graph, dagSvg(run.steps, run.edges, {
      state: (st) => (STEP_STATES.includes(byName.get(st.name)?.state) ? byName.get(st.name).state : 'waiting'),
      href: (st) => (st.fire_id ? `#/fires/${st.fire_id}` : null),
      subtitle: (st) => `${st.state}${st.attempts > 1 ? ` · ${st.attempts} attempts` : ''}`,
    }), stateLegend());
    const rerunnable = operate && RERUNNABLE.has(run.status);
    replace(steps, table(['Step', 'State', 'Fire', 'Attempts', 'Lag', 'Message', ''],
      (run.steps ?? []).slice(0, MAX_STEPS).map((st) => h('tr', { 'data-step': st.name },
        h('td', null, st.name, h('div', { class: 'hint' }, jobLink(names, st.job_id))),
        h('td', null, badge(st.state), st.reason ? h('div', { class: 'hint' }, st.reason) : null),
        h('td', null, stepFire(st)),
        h('td', { class: 'num' }, st.attempts ?? 0),
        h('td', { class: 'num' }, fmtDuration(st.lag_ms)),
        h('td', { class: 'wrap' }, st.message ?? ''),
        h('td', null, rerunnable
          ? h('button', { class: 'small', onclick: () => rerun(st.name) }, 'Re-run from here') : null))),
      'No steps.'));
  }

  main.append(header, banner, h('h2', null, 'Graph'), graph,
    h('div', { class: 'columns' },
      h('div', null, h('h2', null, 'Steps'), steps),
      h('div', null, h('h2', null, 'Run'), facts)));
  names = await jobNames();
  await load();
  // A running run changes as its steps do; an ended one only by a re-run from this page.
  ctx.every(3000, () => {
    if (run?.status === 'running') load().catch(() => {});
  });
}
