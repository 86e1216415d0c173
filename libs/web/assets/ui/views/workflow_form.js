// The workflow editor (operators): a new workflow, or an edit of one made by hand. Its fields are
// the API's WorkflowInput (docs/workflows.md "Definition"); each step picks an existing job, edges
// join steps with a condition, and the DAG is drawn from the form as it is edited. The API checks
// everything (names, jobs, cycles) and its 4xx names the field, which is shown at that field.

import { ApiError, canOperate, get, post, saveForm, withQuery } from '../api.js';
import { debounce, fmtTime, formDenied, h, replace } from '../dom.js';
import { EXPR_HINTS, MISFIRE, SCHEDULE_TYPES, managedNote, select, timeZones } from './jobs.js';
import { dagSvg } from './workflows.js';

// The API's bounds: the form offers no more rows than the API takes.
const MAX_STEPS = 64;
const MAX_EDGES = 256;
const CONDITIONS = ['on-success', 'on-failure', 'always'];
// Jobs offered to a step: pages of 200, at most this many pages (the API's page bound).
const JOB_PAGES = 10;

// Every job the picker offers, by id (name and schedule type), read page by page.
async function allJobs() {
  const jobs = new Map();
  let cursor = '';
  for (let page = 0; page < JOB_PAGES; page += 1) {
    const result = await get(withQuery('/api/v1/jobs', { limit: 200, cursor }));
    for (const j of result.items) jobs.set(j.id, j);
    cursor = result.next_cursor;
    if (!cursor) break;
  }
  return jobs;
}

// An error slot beside each control: `data-for` is the field name the API's error names.
const slot = (name) => h('span', { class: 'field-error', 'data-for': name });
const labelled = (text, control, hint) => h('label', null, text, control,
  hint ? h('span', { class: 'hint' }, hint) : null, slot(control.name));

export async function workflowFormView(main, ctx) {
  const id = ctx.params[0];
  if (!canOperate(ctx.who)) return formDenied(main, ctx.who, id ? 'Edit workflow' : 'New workflow', 'workflows');
  const wf = id ? await get(`/api/v1/workflows/${id}`) : {
    name: '', description: '', schedule_type: 'manual', schedule_expr: '', time_zone: 'UTC',
    misfire_policy: 'fire-once-now', max_concurrent_runs: 1, run_timeout_ms: 0, steps: [], edges: [],
  };
  if (wf.managed_by) {
    // Reached by its address only (the workflow's page has no Edit): the note instead of a form.
    main.append(h('h1', null, `Edit "${wf.name}"`), managedNote(wf),
      h('a', { class: 'button', href: `#/workflows/${id}` }, 'Back to the workflow'));
    return undefined;
  }
  const jobs = await allJobs();

  // The rows as state: a step's `key` stays the same while its name is edited, so the edges
  // that join it follow a rename; names are what the body and the drawing use.
  let nextKey = 0;
  const steps = (wf.steps ?? []).map((st) => ({ key: nextKey++, name: st.name, job_id: st.job_id }));
  if (steps.length === 0) steps.push({ key: nextKey++, name: '', job_id: null });
  const keyOf = (name) => steps.find((st) => st.name === name)?.key ?? null;
  const edges = (wf.edges ?? []).map((e) => ({
    parent: keyOf(e.parent), child: keyOf(e.child), condition: e.condition ?? 'on-success',
  }));
  const nameOf = (key) => steps.find((st) => st.key === key)?.name ?? '';

  const input = (name, props = {}) => h('input', { name, value: wf[name] ?? '', ...props });
  const number = (name, min, max) => h('input', { name, type: 'number', min, max, step: 1, value: wf[name] });
  const type = select('schedule_type', SCHEDULE_TYPES, wf.schedule_type);
  const expr = input('schedule_expr', { class: 'mono', autocomplete: 'off', spellcheck: 'false' });
  const zone = input('time_zone', { list: 'zones', autocomplete: 'off' });
  const exprHint = h('span', { class: 'hint' });
  const description = h('textarea', { name: 'description', class: 'plain' });
  description.value = wf.description ?? '';
  const stepRows = h('div', { class: 'rows' });
  const edgeRows = h('div', { class: 'rows' });
  const graph = h('div', { class: 'wf-graph' });
  const previewList = h('div', { class: 'preview-body' });
  const banner = h('div', { class: 'banner' });
  const save = h('button', { class: 'primary', type: 'submit' }, id ? 'Save changes' : 'Create workflow');
  const addStep = h('button', { type: 'button', onclick: () => {
    steps.push({ key: nextKey++, name: '', job_id: null });
    drawSteps();
    stepRows.querySelector(`[name="steps[${steps.length - 1}].name"]`).focus();
  } }, 'Add step');
  const addEdge = h('button', { type: 'button', onclick: () => {
    const [first, second] = steps;
    edges.push({ parent: first?.key ?? null, child: second?.key ?? null, condition: 'on-success' });
    drawEdges();
  } }, 'Add edge');

  // The DAG of what the form says now: named steps once each, edges between drawn steps.
  function drawGraph() {
    const seen = new Set();
    const drawn = [];
    for (const st of steps) {
      const name = st.name.trim();
      if (!name || seen.has(name)) continue;
      seen.add(name);
      drawn.push({ name, job_id: st.job_id });
    }
    const links = edges.map((e) => ({ parent: nameOf(e.parent).trim(), child: nameOf(e.child).trim(),
      condition: e.condition }));
    replace(graph, drawn.length ? dagSvg(drawn, links, {
      subtitle: (st) => (st.job_id ? jobs.get(st.job_id)?.name ?? `job ${st.job_id}` : 'no job picked'),
    }) : h('div', { class: 'subtle' }, 'Name a step to see the graph.'));
  }

  function jobPicker(st, i) {
    const options = [...jobs.values()].map((j) => h('option', { value: j.id },
      j.schedule_type === 'manual' ? j.name : `${j.name} (${j.schedule_type})`));
    // A job the list did not reach (past its pages) still shows as what the step has.
    if (st.job_id && !jobs.has(st.job_id)) options.unshift(h('option', { value: st.job_id }, `job ${st.job_id}`));
    const el = h('select', { name: `steps[${i}].job_id` }, h('option', { value: '' }, 'pick a job'), options);
    el.value = st.job_id ? String(st.job_id) : '';
    el.addEventListener('change', () => {
      st.job_id = el.value ? Number(el.value) : null;
      drawGraph();
    });
    return el;
  }

  function drawSteps() {
    replace(stepRows, steps.map((st, i) => {
      const name = h('input', { name: `steps[${i}].name`, value: st.name, maxlength: 64, autocomplete: 'off',
        spellcheck: 'false', placeholder: 'extract' });
      name.addEventListener('input', () => {
        st.name = name.value;
        drawEdges();
      });
      return h('div', { class: 'row', 'data-step-row': i },
        labelled('Step key', name), labelled('Job', jobPicker(st, i)),
        h('div', { class: 'row-actions' }, h('button', { type: 'button', class: 'small', disabled: steps.length === 1,
          onclick: () => {
            steps.splice(i, 1);
            for (let k = edges.length - 1; k >= 0; k -= 1) {
              if (edges[k].parent === st.key || edges[k].child === st.key) edges.splice(k, 1);
            }
            drawSteps();
          } }, 'Remove')),
        slot(`steps[${i}]`));
    }));
    addStep.disabled = steps.length >= MAX_STEPS;
    drawEdges();
  }

  function stepSelect(name, key) {
    const el = h('select', { name }, h('option', { value: '' }, 'pick a step'),
      steps.map((st, i) => h('option', { value: st.key }, st.name.trim() || `(step ${i + 1}, unnamed)`)));
    el.value = key === null ? '' : String(key);
    return el;
  }

  function drawEdges() {
    replace(edgeRows, edges.length ? edges.map((e, i) => {
      const parent = stepSelect(`edges[${i}].parent`, e.parent);
      const child = stepSelect(`edges[${i}].child`, e.child);
      const condition = select(`edges[${i}].condition`, CONDITIONS, e.condition);
      parent.addEventListener('change', () => { e.parent = parent.value === '' ? null : Number(parent.value); drawGraph(); });
      child.addEventListener('change', () => { e.child = child.value === '' ? null : Number(child.value); drawGraph(); });
      condition.addEventListener('change', () => { e.condition = condition.value; drawGraph(); });
      return h('div', { class: 'row', 'data-edge-row': i },
        labelled('From', parent), labelled('To', child), labelled('Condition', condition),
        h('div', { class: 'row-actions' }, h('button', { type: 'button', class: 'small', onclick: () => {
          edges.splice(i, 1);
          drawEdges();
        } }, 'Remove')),
        slot(`edges[${i}]`));
    }) : h('div', { class: 'subtle' }, 'No edges: every step starts when the run starts.'));
    addEdge.disabled = edges.length >= MAX_EDGES;
    drawGraph();
  }

  const form = h('form', { class: 'panel workflow-form', novalidate: true },
    banner,
    h('div', { class: 'grid' },
      labelled('Name', input('name', { required: true, maxlength: 128, autocomplete: 'off' }),
        'letters, digits, _ . -'),
      labelled('Schedule type', type),
      h('label', { class: 'wide' }, 'Schedule', expr, exprHint, slot('schedule_expr')),
      labelled('Time zone', zone, `IANA name; your browser: ${Intl.DateTimeFormat().resolvedOptions().timeZone}`),
      labelled('Misfire policy', select('misfire_policy', MISFIRE, wf.misfire_policy)),
      labelled('Concurrent runs', number('max_concurrent_runs', 1, 100), 'at most this many running at once'),
      labelled('Run timeout (ms)', number('run_timeout_ms', 0, 7 * 24 * 3600 * 1000), '0 = none'),
      h('label', { class: 'wide' }, 'Description', description, slot('description'))),
    h('h3', null, 'Steps'),
    h('div', { class: 'hint' }, 'Each step runs an existing job (normally a manual one); its key names it in runs.'),
    stepRows, slot('steps'), h('div', { class: 'actions' }, addStep),
    h('h3', null, 'Edges'),
    h('div', { class: 'hint' }, 'A step starts when every parent has ended and each incoming edge\'s condition holds.'),
    edgeRows, slot('edges'), h('div', { class: 'actions' }, addEdge),
    h('div', { class: 'actions' }, save,
      h('a', { class: 'button', href: id ? `#/workflows/${id}` : '#/workflows' }, 'Cancel')),
    h('datalist', { id: 'zones' }, timeZones().map((z) => h('option', { value: z }))));

  // An error of the API at the field it names ("steps[1].name", "edges[2].child", "edges"), or in
  // the banner when the form has no such field.
  function clearErrors() {
    for (const el of form.querySelectorAll('.invalid')) el.classList.remove('invalid');
    for (const el of form.querySelectorAll('.field-error')) el.textContent = '';
    banner.textContent = '';
    banner.className = 'banner';
  }
  function showAt(field, message, focus = true) {
    const at = field ? form.querySelector(`.field-error[data-for="${CSS.escape(field)}"]`) : null;
    if (!at) {
      banner.textContent = message;
      return;
    }
    at.textContent = message;
    // A control's label turns red; a row's or a list's error (steps, edges[2]) is its text only.
    if (at.parentElement.tagName === 'LABEL') at.parentElement.classList.toggle('invalid', Boolean(message));
    if (message && focus) form.querySelector(`[name="${CSS.escape(field)}"]`)?.focus();
  }

  // The schedule's next times (the job form's preview, without a job's jitter and DST options).
  const SCHEDULE_FIELDS = ['schedule_type', 'schedule_expr', 'time_zone'];
  let previewSeq = 0;
  const refreshPreview = debounce(async () => {
    const seq = ++previewSeq;
    exprHint.textContent = EXPR_HINTS[type.value] ?? '';
    try {
      const result = await post('/api/v1/schedules/validate', { schedule_type: type.value, schedule_expr: expr.value,
        time_zone: zone.value.trim() || 'UTC', count: 5 });
      if (seq !== previewSeq) return;
      for (const name of SCHEDULE_FIELDS) showAt(name, '');
      replace(previewList, h('div', { class: 'zone' }, `in ${result.time_zone}`),
        result.times.length
          ? h('ol', { class: 'preview-times' }, result.times.map((t) => h('li', null, fmtTime(t, result.time_zone))))
          : h('div', { class: 'subtle' }, type.value === 'manual' ? 'Runs only when triggered.' : 'No run time after now.'));
    } catch (e) {
      if (seq !== previewSeq) return;
      for (const name of SCHEDULE_FIELDS) showAt(name, '');
      const field = e instanceof ApiError ? e.field ?? 'schedule_expr' : null;
      if (field && form.querySelector(`.field-error[data-for="${CSS.escape(field)}"]`)) {
        showAt(field, e.message, false);
        replace(previewList, h('div', { class: 'subtle' }, 'Fix the schedule to see its next times.'));
      } else {
        replace(previewList, h('div', { class: 'field-error' }, e.message));
      }
    }
  }, 250);
  for (const el of [type, expr, zone]) el.addEventListener('input', refreshPreview);
  type.addEventListener('change', refreshPreview);

  const intValue = (name) => {
    const raw = form.elements.namedItem(name).value.trim();
    const n = Number(raw);
    return raw !== '' && Number.isInteger(n) ? n : raw; // the server names the field when not a number
  };
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearErrors();
    const body = {
      name: form.elements.namedItem('name').value.trim(),
      description: description.value,
      schedule_type: type.value,
      schedule_expr: expr.value,
      time_zone: zone.value.trim() || 'UTC',
      misfire_policy: form.elements.namedItem('misfire_policy').value,
      max_concurrent_runs: intValue('max_concurrent_runs'),
      run_timeout_ms: intValue('run_timeout_ms'),
      // Sent as typed: the API names a missing job or a bad name at its row.
      steps: steps.map((st) => ({ name: st.name.trim(), job_id: st.job_id ?? 0 })),
      edges: edges.map((e) => ({ parent: nameOf(e.parent).trim(), child: nameOf(e.child).trim(),
        condition: e.condition })),
    };
    if (id) body.version = wf.version;
    await saveForm({
      collection: '/api/v1/workflows',
      page: 'workflows',
      id,
      body,
      button: save,
      // Saving over it would undo that change unseen: the form keeps what was typed, the user
      // reloads to edit the current version.
      stale: () => {
        banner.className = 'banner stale-version';
        replace(banner, `"${wf.name}" was changed by someone else since you opened it — reload to edit the current `
          + 'version (what you typed here is not saved). ',
        h('button', { type: 'button', class: 'small', onclick: () => window.dispatchEvent(new HashChangeEvent('hashchange')) },
          'Reload'));
        banner.scrollIntoView({ block: 'nearest' });
      },
      failed: (e) => showAt(e.field, e.message),
    });
  });

  main.append(h('h1', null, id ? `Edit "${wf.name}"` : 'New workflow'),
    h('div', { class: 'form-layout' }, form,
      h('aside', { class: 'cards' },
        h('div', { class: 'panel' }, h('h3', null, 'Graph'), graph),
        h('div', { class: 'panel preview' }, h('h3', null, 'Next run times'), previewList))));
  drawSteps();
  refreshPreview();
  form.elements.namedItem('name').focus();
  return undefined;
}
