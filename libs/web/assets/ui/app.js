// The sched web UI: a hash router over plain ES modules (no build step, no dependencies).

import { clearToken, getToken, isAdmin, whoami } from './api.js';
import { h, replace, setTimeRule, timeRule } from './dom.js';
import { signInView } from './views/signin.js';
import { jobsView, jobView, jobFormView } from './views/jobs.js';
import { firesView, fireView } from './views/fires.js';
import { executorsView, clusterView } from './views/cluster.js';
import { tokensView } from './views/tokens.js';
import { dashboardView } from './views/dashboard.js';
import { auditView } from './views/audit.js';
import { calendarsView, calendarView, calendarFormView } from './views/calendars.js';
import { workflowsView, workflowView, workflowRunView } from './views/workflows.js';
import { workflowFormView } from './views/workflow_form.js';
import { alertsView, alertView, alertFormView } from './views/alerts.js';

const routes = [
  [/^\/signin$/, signInView, null],
  [/^\/dashboard$/, dashboardView, 'dashboard'],
  [/^\/jobs$/, jobsView, 'jobs'],
  [/^\/jobs\/new$/, jobFormView, 'jobs'],
  [/^\/jobs\/(\d+)$/, jobView, 'jobs'],
  [/^\/jobs\/(\d+)\/edit$/, jobFormView, 'jobs'],
  [/^\/workflows$/, workflowsView, 'workflows'],
  [/^\/workflows\/new$/, workflowFormView, 'workflows'],
  [/^\/workflows\/(\d+)$/, workflowView, 'workflows'],
  [/^\/workflows\/(\d+)\/edit$/, workflowFormView, 'workflows'],
  [/^\/workflow-runs\/(\d+)$/, workflowRunView, 'workflows'],
  [/^\/calendars$/, calendarsView, 'calendars'],
  [/^\/calendars\/new$/, calendarFormView, 'calendars'],
  [/^\/calendars\/(\d+)$/, calendarView, 'calendars'],
  [/^\/calendars\/(\d+)\/edit$/, calendarFormView, 'calendars'],
  [/^\/fires$/, firesView, 'fires'],
  [/^\/fires\/(\d+)$/, fireView, 'fires'],
  [/^\/executors$/, executorsView, 'executors'],
  [/^\/cluster$/, clusterView, 'cluster'],
  [/^\/tokens$/, tokensView, 'tokens'],
  [/^\/audit$/, auditView, 'audit'],
  [/^\/alerts$/, alertsView, 'alerts'],
  [/^\/alerts\/new$/, alertFormView, 'alerts'],
  [/^\/alerts\/(\d+)$/, alertView, 'alerts'],
  [/^\/alerts\/(\d+)\/edit$/, alertFormView, 'alerts'],
];

const main = document.getElementById('view');
const nav = document.getElementById('nav');
const signOut = document.getElementById('signout');
let current = null; // the mounted view's context: its timers die with it

export function navigate(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

function render() {
  if (current) current.dispose();
  const raw = location.hash.replace(/^#/, '') || '/jobs';
  const [path, query = ''] = raw.split('?');
  const signedIn = Boolean(getToken());
  nav.hidden = !signedIn;
  signOut.hidden = !signedIn;
  if (!signedIn && path !== '/signin') {
    location.hash = `#/signin?next=${encodeURIComponent(raw)}`;
    return;
  }
  for (const [pattern, view, section] of routes) {
    const match = path.match(pattern);
    if (!match) continue;
    for (const a of nav.querySelectorAll('a')) a.classList.toggle('active', a.dataset.section === section);
    const ctx = new ViewContext(match.slice(1), new URLSearchParams(query));
    current = ctx;
    document.title = section ? `sched · ${section}` : 'sched';
    replace(main);
    // Views learn the caller's role first, so they never offer what it cannot do.
    (signedIn ? whoami() : Promise.resolve(null))
      .then((who) => {
        if (ctx.disposed) return undefined;
        ctx.who = who;
        applyRole(who);
        return view(main, ctx);
      })
      .catch((e) => ctx.fail(e));
    return;
  }
  replace(main, h('h1', null, 'Not found'), h('p', null, h('a', { href: '#/jobs' }, 'Back to the jobs')));
}

// The header for this role: the Tokens and Alerts sections are for admins only (as their API
// routes are), and the role is shown.
function applyRole(who) {
  for (const section of ['tokens', 'alerts']) {
    const link = nav.querySelector(`a[data-section="${section}"]`);
    if (link) link.hidden = !isAdmin(who);
  }
  const badge = document.getElementById('whoami');
  if (badge) badge.textContent = who ? `${who.name} (${who.role})` : '';
  if (who) document.body.dataset.role = who.role;
  else delete document.body.dataset.role;
}

// What a view gets: its route parameters, the query, and timers that stop when it is left.
class ViewContext {
  constructor(params, query) {
    this.params = params;
    this.query = query;
    this.timers = [];
    this.disposed = false;
    this.who = null; // GET /api/v1/whoami of the signed-in token
  }
  every(ms, fn) {
    const id = setInterval(() => {
      if (!this.disposed && document.visibilityState === 'visible') fn();
    }, ms);
    this.timers.push(id);
  }
  dispose() {
    this.disposed = true;
    for (const id of this.timers) clearInterval(id);
  }
  fail(error) {
    if (this.disposed || error?.status === 401) return;
    main.prepend(h('div', { class: 'banner' }, error.message ?? String(error)));
  }
}

window.addEventListener('hashchange', render);
window.addEventListener('sched:unauthenticated', () => {
  clearToken();
  const raw = location.hash.replace(/^#/, '');
  if (!raw.startsWith('/signin')) location.hash = `#/signin?expired=1&next=${encodeURIComponent(raw || '/jobs')}`;
});
// Every time shown follows the header's switch; a change re-renders the current view.
const timeSwitch = document.getElementById('time-rule');
timeSwitch.value = timeRule();
timeSwitch.addEventListener('change', () => {
  setTimeRule(timeSwitch.value);
  render();
});
signOut.addEventListener('click', () => {
  clearToken();
  navigate('#/signin');
});
render();
