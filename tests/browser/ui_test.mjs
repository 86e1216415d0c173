// The web UI as a person uses it, in headless Chromium (Debian's), driven by playwright-core:
// sign in, create a job with a cron expression and watch its live preview, trigger it, and see
// its fire appear and succeed on a real demo-client; then visit every page (the dashboard with a
// failing job beside it), create a viewer and
// an app-scoped executor token, and sign in as the viewer: no mutating control is offered. A
// workflow (a diamond made in the workflow editor, its DAG drawn as the form changes, a step key
// the API refuses shown at its row) shows in the Workflows list, its page and a triggered run's
// page draw its DAG as SVG, one box per step classed by the step's state; an edit saved after a
// concurrent API edit shows the stale-version message; a failed run offers a re-run from its
// failed step. An alert rule managed from a file shows read-only (no Edit or Delete, Send test
// stays). The header's Times switch shows a job's next fire in UTC and keeps the choice across a
// reload; an audited job edit shows next_fire_time as a time; the jobs list sorts by a clicked
// header (kept in the address), Copy fills the create form, bulk Pause and Delete act on the
// selected jobs (a refused one listed, the rest done), and the job form suggests the live
// executors' apps and handlers. Along
// the way: no nav or Sign out on the sign-in page, times in the job's zone with its
// label, a manual fire's epoch is the one its log names, params come back as JSON, the fire
// list filters by job name, a killed fire's log panel shows the ended run, and at 375 px no
// page scrolls sideways. Last, single sign-on on a second node with the test OpenID provider
// (tests/oidc/test_idp.py): Sign in with SSO, the person and provider in the header, a pause
// audited under their name, sign out. A screenshot of each
// step goes to SCHED_SCREENSHOT_DIR. Every process this starts is stopped by its PID.
//
// Environment: SCHED_STANDALONE_BIN, SCHED_DEMO_CLIENT_BIN, SCHED_BROWSER_WORKDIR (where
// `npm ci` installed playwright-core), SCHED_SCREENSHOT_DIR, SCHED_CHROMIUM (/usr/bin/chromium).

import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const env = process.env;
const need = (name) => {
  if (!env[name]) throw new Error(`${name} is not set`);
  return env[name];
};
const standaloneBin = need('SCHED_STANDALONE_BIN');
const demoBin = need('SCHED_DEMO_CLIENT_BIN');
const workDir = need('SCHED_BROWSER_WORKDIR');
const shotsDir = need('SCHED_SCREENSHOT_DIR');
const chromiumPath = env.SCHED_CHROMIUM || '/usr/bin/chromium';
const { chromium } = createRequire(path.join(workDir, 'package.json'))('playwright-core');

const token = `browser-${crypto.randomBytes(12).toString('hex')}`;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sched-browser-'));
const children = [];
// "2026-11-27 09:30:00 CET": a time in Europe/Berlin with its zone label (Chromium's ICU names it
// CET/CEST, or GMT+1/GMT+2 without the names).
const ZONED_BERLIN = (text) => /\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} (CES?T|GMT\+[12]|UTC\+[12])/.test(text);
let passed = 0;

function log(...args) {
  console.log(`[${new Date().toISOString().slice(11, 23)}]`, ...args);
}

// Starts a process with its output in files under tmp; resolves with the first stdout match of
// `ready`, rejects when it exits first or `timeoutMs` passes.
function start(name, bin, args, extraEnv, ready, timeoutMs = 20000) {
  const out = fs.openSync(path.join(tmp, `${name}.out`), 'w');
  const child = spawn(bin, args, {
    cwd: tmp,
    env: { ...env, ...extraEnv },
    stdio: ['ignore', 'pipe', fs.openSync(path.join(tmp, `${name}.err`), 'w')],
  });
  children.push({ name, child });
  return new Promise((resolve, reject) => {
    if (!ready) {
      child.once('spawn', () => resolve(['']));
      child.once('error', reject);
      return;
    }
    let text = '';
    const timer = setTimeout(() => reject(new Error(`${name} not ready within ${timeoutMs} ms`)), timeoutMs);
    child.stdout.on('data', (chunk) => {
      fs.writeSync(out, chunk);
      text += chunk;
      const match = text.match(ready);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited early (${code ?? signal}); see ${tmp}/${name}.err`));
    });
  });
}

async function stopAll() {
  for (const { name, child } of children.reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(child.pid, 'SIGTERM');
    const timer = setTimeout(() => {
      log(`${name} (pid ${child.pid}) ignored SIGTERM for 10 s: SIGKILL`);
      process.kill(child.pid, 'SIGKILL');
    }, 10000);
    await exited;
    clearTimeout(timer);
  }
}

// A second scheduler-standalone with single sign-on through the test OpenID provider
// (tests/oidc/test_idp.py, Python 3): alice is in the group mapped to admin.
async function startSsoScheduler() {
  const users = path.join(tmp, 'idp-users.json');
  fs.writeFileSync(users, JSON.stringify({
    alice: { sub: 'u-alice', email: 'alice@example.com', name: 'Alice', groups: ['sched-admins'] } }));
  const secret = path.join(tmp, 'idp-secret');
  fs.writeFileSync(secret, crypto.randomBytes(16).toString('hex'));
  const idpScript = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'oidc', 'test_idp.py');
  const [, issuer] = await start('test-idp', 'python3', [idpScript, '--users', users, '--client-id', 'sched-ui',
    '--client-secret-file', secret, '--api-audience', 'sched-api'], {}, /test-idp listening on (\S+)/);
  const port = await new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address();
      probe.close(() => resolve(free));
    });
  });
  const base = `http://127.0.0.1:${port}`;
  fs.mkdirSync(path.join(tmp, 'sso'), { recursive: true });
  fs.writeFileSync(path.join(tmp, 'sso', 'standalone.yaml'),
    `http:\n  listen: "127.0.0.1:${port}"\ndatabase:\n  url: "sqlite://${tmp}/sso/scheduler.db"\n`
    + `oidc:\n  issuer: "${issuer}"\n  client-id: sched-ui\n  client-secret-file: "${secret}"\n`
    + `  audience: sched-api\n  public-url: "${base}"\n  role-mapping:\n    admin: [sched-admins]\n`);
  await start('standalone-sso', standaloneBin, ['--config', path.join(tmp, 'sso', 'standalone.yaml')],
    { SCHED_TOKEN: token }, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
  return base;
}

// Polls the API until the demo-client's first heartbeat has registered it.
async function waitForExecutor(base, timeoutMs = 20000) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const res = await fetch(`${base}/api/v1/executors?app=demo`, { headers: { Authorization: `Bearer ${token}` } });
    if (res.ok && (await res.json()).items.some((e) => e.alive)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`demo-client did not register within ${timeoutMs} ms; see ${tmp}/demo-client.err`);
}

async function step(name, fn) {
  log(`step: ${name}`);
  await fn();
  passed += 1;
}

async function shot(page, file) {
  await page.screenshot({ path: path.join(shotsDir, file), fullPage: true });
}

async function main() {
  fs.mkdirSync(shotsDir, { recursive: true });
  fs.writeFileSync(path.join(tmp, 'standalone.yaml'),
    `http:\n  listen: "127.0.0.1:0"\ndatabase:\n  url: "sqlite://${tmp}/scheduler.db"\n`
    // The alert receiver below listens on loopback, which webhooks may reach only when allowed.
    + 'scheduler:\n  alert-addresses:\n    allow: ["127.0.0.1"]\n');
  const [, port] = await start('standalone', standaloneBin, ['--config', path.join(tmp, 'standalone.yaml')],
    { SCHED_TOKEN: token }, /listening on http:\/\/127\.0\.0\.1:(\d+)/);
  const base = `http://127.0.0.1:${port}`;
  log(`scheduler-standalone on ${base}`);
  const api = async (method, route, body) => {
    const res = await fetch(`${base}${route}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  // Polls the API until `done(fires)` holds for the job's fires.
  const waitForFires = async (jobId, done, what) => {
    const end = Date.now() + 30000;
    for (;;) {
      const fires = await api('GET', `/api/v1/fires?job_id=${jobId}`);
      if (done(fires.items)) return fires.items;
      if (Date.now() > end) throw new Error(`${what}: ${JSON.stringify(fires.items)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  // No element may be hidden by the page's own CSS while it still shows (the [hidden] rule).
  const notShown = async (page, what, locator) => {
    if (await locator.isVisible()) throw new Error(`${what} shows on the sign-in page`);
  };
  fs.writeFileSync(path.join(tmp, 'demo.yaml'),
    `log:\n  level: warn\nexecutor:\n  app: demo\n  web-endpoints: ["${base}"]\n  heartbeat-interval: 1s\n` +
    `  spool-dir: "${tmp}/spool"\n  http:\n    listen: "127.0.0.1:0"\n`);
  await start('demo-client', demoBin, ['--config', path.join(tmp, 'demo.yaml')], { SCHED_TOKEN: token }, null);
  await waitForExecutor(base);

  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    chromiumSandbox: false, // --no-sandbox: containers and CI runners have no user namespaces
    // Playwright adds --headless and a fresh temporary --user-data-dir itself.
    args: ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.setDefaultTimeout(15000);
    const problems = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      // A refused token shows up as a failed resource load; that one is expected.
      if (m.type() === 'error' && !m.text().includes('Failed to load resource')) problems.push(m.text());
    });

    await step('the UI asks for a token', async () => {
      await page.goto(`${base}/`);
      await page.getByRole('heading', { name: 'Sign in to sched' }).waitFor();
      await notShown(page, 'the nav bar', page.locator('#nav'));
      await notShown(page, 'Sign out', page.getByRole('button', { name: 'Sign out' }));
      await shot(page, '01-signin.png');
    });

    await step('a wrong token is refused next to the field', async () => {
      await page.getByLabel('API token').fill('not-a-token');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('.field-error', { hasText: 'not valid' }).waitFor();
      await shot(page, '02-signin-refused.png');
    });

    await step('sign in', async () => {
      await page.getByLabel('API token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Jobs' }).waitFor();
      await page.getByText('No jobs yet').waitFor();
      await shot(page, '03-jobs-empty.png');
    });

    await step('an invalid cron expression is explained at the field, with its position', async () => {
      await page.getByRole('link', { name: 'New job' }).click();
      await page.getByRole('heading', { name: 'New job' }).waitFor();
      await page.locator('input[name="name"]').fill('browser-hello');
      await page.locator('input[name="app"]').fill('demo');
      await page.locator('input[name="handler"]').fill('echo');
      await page.locator('input[name="schedule_expr"]').fill('0 0 12 32 * ?');
      await page.locator('label.invalid .field-error', { hasText: 'out of range 1-31 (at position' }).waitFor();
      await shot(page, '04-job-form-error.png');
    });

    await step('a valid one previews its next times in the job\'s time zone', async () => {
      await page.locator('input[name="schedule_expr"]').fill('0 30 9 * * ?');
      await page.locator('input[name="time_zone"]').fill('Europe/Berlin');
      await page.locator('.preview-times li').nth(4).waitFor();
      const times = await page.locator('.preview-times li').allTextContents();
      // One format for every time: the job's zone, with its label.
      if (times.length !== 5 || !times.every((t) => ZONED_BERLIN(t) && t.includes(' 09:30:00 '))) {
        throw new Error(`unexpected preview: ${JSON.stringify(times)}`);
      }
      if (await page.locator('label.invalid').count() !== 0) throw new Error('the fixed error is still shown');
      await page.locator('textarea[name="params"]').fill('{"from": "the browser test"}');
      await shot(page, '05-job-form-preview.png');
    });

    await step('create the job', async () => {
      await page.getByRole('button', { name: 'Create job' }).click();
      await page.getByRole('heading', { name: /browser-hello/ }).waitFor();
      await page.getByText('No fires yet.').waitFor();
      await shot(page, '06-job.png');
    });

    await step('trigger it and see its fire appear and succeed', async () => {
      await page.getByRole('button', { name: 'Trigger now' }).click();
      await page.locator('.banner.info', { hasText: 'created' }).waitFor();
      const row = page.locator('tr[data-fire]').first();
      await row.waitFor();
      await row.locator('.badge', { hasText: 'succeeded' }).waitFor({ timeout: 30000 });
      await shot(page, '07-job-fired.png');
    });

    await step('the fire history shows it with lag and duration, and its log', async () => {
      await page.getByRole('link', { name: 'Fires', exact: true }).click();
      const row = page.locator('tr[data-fire]').first();
      await row.locator('.badge', { hasText: 'succeeded' }).waitFor();
      await row.getByRole('link', { name: 'browser-hello' }).waitFor();
      // The job's zone, labelled (the job runs in Europe/Berlin).
      const scheduled = await row.locator('td').nth(3).textContent();
      if (!ZONED_BERLIN(scheduled)) throw new Error(`the scheduled time is not in the job's zone: ${scheduled}`);
      await shot(page, '08-fires.png');
      await row.locator('a').first().click();
      await page.locator('pre.log', { hasText: 'the browser test' }).waitFor();
      // A manual fire shows the epoch it was dispatched under: the one its log names.
      const logText = await page.locator('pre.log').textContent();
      const logged = logText.match(/epoch (\d+)/);
      if (!logged) throw new Error(`the log names no epoch: ${logText}`);
      await page.locator(`[data-epoch="${logged[1]}"]`).waitFor();
      if (logged[1] === '0') throw new Error('the fire was dispatched under epoch 0');
      await shot(page, '09-fire.png');
    });

    await step('the jobs list shows the last result', async () => {
      await page.getByRole('link', { name: 'Jobs', exact: true }).click();
      const row = page.locator('tr[data-job]', { hasText: 'browser-hello' });
      await row.locator('.badge', { hasText: 'succeeded' }).waitFor();
      await row.locator('.badge', { hasText: 'enabled' }).waitFor();
      await shot(page, '10-jobs.png');
    });

    await step('executors: the demo app with its handlers', async () => {
      await page.getByRole('link', { name: 'Executors' }).click();
      await page.locator('section[data-app="demo"]', { hasText: '1/1 alive' }).waitFor();
      await page.getByText('handlers: conformance.echo, conformance.fail, conformance.sleep, count, echo, fail, pay, sleep').waitFor();
      await shot(page, '11-executors.png');
    });

    await step('cluster: the leader, its epoch and the node', async () => {
      await page.getByRole('link', { name: 'Cluster' }).click();
      await page.locator('b[data-leader]:not([data-leader=""])').waitFor();
      await page.locator('td .badge', { hasText: 'master' }).waitFor();
      await shot(page, '12-cluster.png');
    });

    await step('cluster: a sharded cluster shows each shard\'s leader, since when and its epoch', async () => {
      // One shard: no shards table.
      if (await page.locator('tr[data-shard]').count() !== 0) throw new Error('a shards table for one shard');
      // The standalone node runs one shard: its answer, re-shaped as a two-shard cluster's.
      await page.route('**/api/v1/cluster', async (route) => {
        const response = await route.fetch();
        const c = await response.json();
        const leader = c.nodes[0].node_id;
        c.shard_count = 2;
        c.shards = [
          { ...c.shards[0], held_since: Date.UTC(2026, 0, 2, 12, 0, 0) },
          { shard: 1, lease: 'master/1', leader: null, epoch: 41, held_since: null, lease_remaining_ms: null },
        ];
        c.nodes[0].shards_led = [0];
        await route.fulfill({ response, json: c });
      });
      await page.reload();
      await page.getByRole('heading', { name: 'Shards (2)' }).waitFor();
      const first = page.locator('tr[data-shard="0"]');
      await first.locator('td', { hasText: await page.locator('b[data-leader]').getAttribute('data-leader') }).waitFor();
      await first.locator('td', { hasText: '2026-01-02' }).waitFor();
      const second = page.locator('tr[data-shard="1"]');
      await second.locator('.badge', { hasText: 'none' }).waitFor();
      await second.locator('td', { hasText: '41' }).waitFor();
      await page.locator('td', { hasText: 'shards 0' }).waitFor();
      await shot(page, '12-cluster-shards.png');
      await page.unroute('**/api/v1/cluster');
    });

    await step('dashboard: outcomes over time, success per job, executors per app', async () => {
      // A failing job beside the succeeding one, fired through the API.
      const job = await api('POST', '/api/v1/jobs',
        { name: 'browser-fails', app: 'demo', handler: 'fail', schedule_type: 'manual', schedule_expr: '' });
      await api('POST', `/api/v1/jobs/${job.id}/trigger`, {});
      await waitForFires(job.id, (items) => items.some((f) => f.status === 'failed'), 'the failing job\'s fire did not fail');
      await page.getByRole('link', { name: 'Dashboard' }).click();
      await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
      // The aggregates are cached for 5 s and the view polls every 10 s.
      await page.locator('svg.chart rect.seg.failed').first().waitFor({ timeout: 30000 });
      await page.locator('svg.chart rect.seg.succeeded').first().waitFor();
      await page.locator('tr[data-job]', { hasText: 'browser-hello' }).locator('.badge', { hasText: '100 %' }).waitFor();
      await page.locator('tr[data-job]', { hasText: 'browser-fails' }).locator('.badge', { hasText: '0 %' }).waitFor();
      // Most failures first.
      const first = await page.locator('#dash-jobs tr[data-job]').first().textContent();
      if (!first.includes('browser-fails')) throw new Error(`the failing job is not listed first: ${first}`);
      await page.locator('#dash-executors section[data-app="demo"]', { hasText: '1/1 alive' }).waitFor();
      await page.locator('b[data-stat="overdue"]', { hasText: /^0$/ }).waitFor();
      await shot(page, '12b-dashboard.png');
      await page.locator('a[data-window="24h"]').click();
      await page.locator('svg.chart[aria-label$="24h"] rect.seg.failed').first().waitFor();
      await shot(page, '12c-dashboard-24h.png');
    });

    await step('params are JSON through the API, and the job page shows them', async () => {
      const jobs = await api('GET', '/api/v1/jobs?q=browser-hello');
      const params = jobs.items[0].params;
      if (JSON.stringify(params) !== JSON.stringify({ from: 'the browser test' })) {
        throw new Error(`params are not returned as JSON: ${JSON.stringify(params)}`);
      }
      await page.goto(`${base}/#/jobs/${jobs.items[0].id}`);
      await page.locator('dd code', { hasText: '"from": "the browser test"' }).waitFor();
      // The form shows them as JSON text and saves them as JSON: stored compact, read back as JSON.
      await page.getByRole('link', { name: 'Edit', exact: true }).click();
      const box = page.locator('textarea[name="params"]');
      await box.waitFor();
      if (!(await box.inputValue()).includes('"from": "the browser test"')) {
        throw new Error(`the form shows params as ${await box.inputValue()}`);
      }
      await box.fill('{"from": "the edited form", "n": [1, 2]}');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.locator('dd code', { hasText: '"the edited form"' }).waitFor();
      const edited = (await api('GET', `/api/v1/jobs/${jobs.items[0].id}`)).params;
      if (JSON.stringify(edited) !== JSON.stringify({ from: 'the edited form', n: [1, 2] })) {
        throw new Error(`edited params: ${JSON.stringify(edited)}`);
      }
    });

    await step('fires filter by job name as well as by id', async () => {
      await page.goto(`${base}/#/fires`);
      await page.getByRole('heading', { name: 'Fires' }).waitFor();
      const filter = page.locator('input[name="job"]');
      await filter.fill('browser-fails');
      await filter.press('Enter');
      await page.locator('tr[data-fire]', { hasText: 'browser-fails' }).first().waitFor();
      await page.waitForFunction(() => [...document.querySelectorAll('tr[data-fire]')]
        .every((r) => r.textContent.includes('browser-fails')));
      const failing = (await api('GET', '/api/v1/jobs?q=browser-fails')).items[0];
      await filter.fill(String(failing.id));
      await filter.press('Enter');
      await page.waitForFunction(() => [...document.querySelectorAll('tr[data-fire]')]
        .every((r) => r.textContent.includes('browser-fails')));
      await filter.fill('no-such-job');
      await filter.press('Enter');
      await page.locator('.banner', { hasText: 'No job is named "no-such-job"' }).waitFor();
      await shot(page, '12d-fires-by-name.png');
    });

    let killedFire = 0;
    await step('after a kill the log panel shows the final state, not "still running"', async () => {
      const job = await api('POST', '/api/v1/jobs', {
        name: 'browser-sleeps', app: 'demo', handler: 'sleep', schedule_type: 'manual', schedule_expr: '',
        params: { ms: 60000 },
      });
      await api('POST', `/api/v1/jobs/${job.id}/trigger`, {});
      const [fire] = await waitForFires(job.id, (items) => items.some((f) => f.status === 'running'),
        'the sleeping fire did not start');
      killedFire = fire.id;
      await page.goto(`${base}/#/fires/${fire.id}`);
      await page.locator('h1 .badge', { hasText: 'running' }).waitFor();
      await page.locator('.hint', { hasText: 'still running' }).waitFor();
      page.once('dialog', (d) => d.accept());
      await page.getByRole('button', { name: 'Kill' }).click();
      await page.locator('h1 .badge', { hasText: 'killed' }).waitFor();
      await page.locator('.hint', { hasText: /run ended \(killed\)|stored with the result/ }).waitFor();
      if (await page.getByText('still running').count() !== 0) throw new Error('the log still says "still running"');
      await shot(page, '12e-fire-killed.png');
    });

    await step('pause with a note: the job shows who and why, its History and the Audit view show the change', async () => {
      const hello = (await api('GET', '/api/v1/jobs?q=browser-hello')).items[0];
      await page.goto(`${base}/#/jobs/${hello.id}`);
      await page.locator('tr[data-audit]').first().waitFor();
      page.once('dialog', (d) => d.accept('db migration until 14:00'));
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      await page.locator('.paused-note', { hasText: 'db migration until 14:00' }).waitFor();
      await page.locator('.history tr[data-audit]', { hasText: 'pause' }).first().waitFor();
      await page.locator('.history table.diff', { hasText: 'enabled' }).first().waitFor();
      await shot(page, '12f-job-paused-history.png');
      await page.getByRole('button', { name: 'Resume' }).click();
      await page.locator('h1 .badge', { hasText: 'enabled' }).waitFor();
      await page.goto(`${base}/#/audit?target_kind=job&target_id=${hello.id}`);
      await page.locator('tr[data-audit]', { hasText: 'resume' }).first().waitFor();
      await page.locator('tr[data-audit]', { hasText: 'create' }).first().waitFor();
      await shot(page, '12g-audit.png');
    });

    await step('managed from a file: the label, no Edit or Delete, Trigger and Pause stay, the edit address shows the note', async () => {
      // Created through the API with managed_by, as `schedctl apply` does.
      const managed = await api('POST', '/api/v1/jobs', { name: 'browser-managed', app: 'demo', handler: 'echo',
        schedule_type: 'manual', schedule_expr: '', managed_by: 'jobs.yaml' });
      if (managed.managed_by !== 'jobs.yaml') throw new Error(`managed_by came back as ${managed.managed_by}`);
      await page.goto(`${base}/#/jobs/${managed.id}`);
      await page.locator('.managed-note[data-managed-by="jobs.yaml"]', { hasText: 'Managed by jobs.yaml, edit the file' })
        .waitFor();
      await page.getByRole('button', { name: 'Trigger now' }).waitFor();
      await page.getByRole('button', { name: 'Pause', exact: true }).waitFor();
      if (await page.getByRole('link', { name: 'Edit', exact: true }).count() !== 0) {
        throw new Error('a job managed from a file offers Edit');
      }
      if (await page.getByRole('button', { name: 'Delete', exact: true }).count() !== 0) {
        throw new Error('a job managed from a file offers Delete');
      }
      await shot(page, '12g2-job-managed.png');
      await page.goto(`${base}/#/jobs/${managed.id}/edit`);
      await page.locator('.managed-note', { hasText: 'Managed by jobs.yaml' }).waitFor();
      if (await page.locator('form').count() !== 0) throw new Error('the edit address of a managed job shows a form');

      // A job made by hand, on the same page for the same operator: Edit and Delete, no note.
      const hello = (await api('GET', '/api/v1/jobs?q=browser-hello')).items[0];
      if (hello.managed_by !== null) throw new Error(`a job made by hand has managed_by ${hello.managed_by}`);
      await page.goto(`${base}/#/jobs/${hello.id}`);
      await page.getByRole('link', { name: 'Edit', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Delete', exact: true }).waitFor();
      if (await page.locator('.managed-note').count() !== 0) throw new Error('a job made by hand shows the managed note');

      // A workflow managed from a file shows the same note; triggering stays.
      const step = await api('POST', '/api/v1/jobs', { name: 'browser-managed-step', app: 'demo', handler: 'echo',
        schedule_type: 'manual', schedule_expr: '', managed_by: 'flows.yaml' });
      const wf = await api('POST', '/api/v1/workflows', { name: 'browser-managed-flow', schedule_type: 'manual',
        steps: [{ name: 'only', job_id: step.id }], managed_by: 'flows.yaml' });
      await page.goto(`${base}/#/workflows/${wf.id}`);
      await page.locator('.managed-note[data-managed-by="flows.yaml"]', { hasText: 'Managed by flows.yaml, edit the file' })
        .waitFor();
      await page.getByRole('button', { name: 'Trigger now' }).waitFor();
      if (await page.getByRole('link', { name: 'Edit', exact: true }).count() !== 0) {
        throw new Error('a workflow managed from a file offers Edit');
      }
      await shot(page, '12g3-workflow-managed.png');
      await page.goto(`${base}/#/workflows/${wf.id}/edit`);
      await page.locator('.managed-note', { hasText: 'Managed by flows.yaml' }).waitFor();
      if (await page.locator('form').count() !== 0) throw new Error('the edit address of a managed workflow shows a form');
    });

    await step('calendars: a validation error at its field, create, preview, used by a job, delete refused, stale edit', async () => {
      await page.getByRole('link', { name: 'Calendars' }).click();
      await page.getByRole('heading', { name: 'Calendars' }).waitFor();
      await page.getByText('No calendars yet').waitFor();
      await page.getByRole('link', { name: 'New calendar' }).click();
      await page.getByRole('heading', { name: 'New calendar' }).waitFor();
      await page.locator('input[name="name"]').fill('browser-holidays');
      await page.locator('input[name="time_zone"]').fill('Europe/Berlin');
      await page.locator('input[name="excluded_weekdays"]').fill('sat, funday');
      await page.getByRole('button', { name: 'Create calendar' }).click();
      await page.locator('label.invalid .field-error', { hasText: 'excluded_weekdays[1]: expected mon' }).waitFor();
      await shot(page, '12h-calendar-invalid.png');
      await page.locator('input[name="excluded_weekdays"]').fill('sat, sun');
      await page.locator('textarea[name="excluded_times"]').fill('22:00-06:00');
      await page.locator('textarea[name="excluded_dates"]').fill('2026-12-24..2026-12-26');
      await page.getByRole('button', { name: 'Create calendar' }).click();
      await page.getByRole('heading', { name: 'Calendar "browser-holidays"' }).waitFor();
      // The preview: 14 local days; a weekend day is excluded whole, a weekday only at night.
      await page.locator('tr[data-day]').nth(13).waitFor();
      if (await page.locator('tr[data-day]').count() !== 14) throw new Error('the preview does not show 14 days');
      await page.locator('tr[data-day]', { hasText: 'excluded all day' }).first().waitFor();
      await page.locator('tr[data-day]', { hasText: '00:00–06:00, 22:00–24:00' }).first().waitFor();
      await page.locator('tr[data-day]', { hasText: '06:00–22:00' }).first().waitFor();
      await page.locator('.history tr[data-audit]', { hasText: 'create' }).waitFor();
      await shot(page, '12i-calendar-preview.png');

      const calendar = (await api('GET', '/api/v1/calendars')).items.find((c) => c.name === 'browser-holidays');
      await api('POST', '/api/v1/jobs', { name: 'browser-cal-job', app: 'demo', handler: 'echo',
        schedule_type: 'manual', schedule_expr: '', calendar: 'browser-holidays' });
      await page.getByRole('link', { name: 'Calendars' }).click();
      const row = page.locator('tr[data-calendar]', { hasText: 'browser-holidays' });
      await row.waitFor();
      await row.locator('td', { hasText: 'Europe/Berlin' }).waitFor();
      await row.locator('td', { hasText: 'sat, sun · 2026-12-24..2026-12-26 · 22:00-06:00' }).waitFor();
      await row.getByRole('link', { name: 'browser-cal-job' }).waitFor();
      page.once('dialog', (d) => d.accept());
      await row.getByRole('button', { name: 'Delete' }).click();
      await page.locator('.banner', { hasText: /Not deleted: .*browser-cal-job/ }).waitFor();
      await shot(page, '12j-calendars-delete-refused.png');

      // Someone else saves while the form is open: the form says so instead of overwriting.
      await row.getByRole('link', { name: 'Edit' }).click();
      await page.getByRole('heading', { name: 'Edit calendar "browser-holidays"' }).waitFor();
      await api('PUT', `/api/v1/calendars/${calendar.id}`, { version: calendar.version, description: 'changed elsewhere' });
      await page.locator('textarea[name="excluded_times"]').fill('23:00-05:00');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.locator('form .banner', { hasText: 'Someone changed this calendar since you opened it' }).waitFor();
      await page.reload();
      await page.locator('textarea[name="description"]').waitFor();
      await page.locator('textarea[name="excluded_times"]').fill('23:00-05:00');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByRole('heading', { name: 'Calendar "browser-holidays"' }).waitFor();
      await page.locator('dd', { hasText: '23:00-05:00' }).waitFor();
      await page.locator('dd', { hasText: 'changed elsewhere' }).waitFor();
      await page.goto(`${base}/#/audit?target_kind=calendar`);
      await page.locator('tr[data-audit]', { hasText: 'update' }).first()
        .locator(`a[href="#/calendars/${calendar.id}"]`).waitFor();
    });

    // Each step's box in the run's DAG is classed by the state the step table shows, as wanted.
    const checkSteps = async (wanted) => {
      for (const [st, want] of Object.entries(wanted)) {
        const node = page.locator(`svg.dag g.node[data-step="${st}"]`);
        const cls = (await node.getAttribute('class')).split(' ');
        const state = await node.getAttribute('data-state');
        const shown = (await page.locator(`tr[data-step="${st}"] td`).nth(1).locator('.badge').textContent()).trim();
        if (state !== want || !cls.includes(want) || shown !== want) {
          throw new Error(`step ${st}: class "${cls.join(' ')}", data-state ${state}, table ${shown}; wanted ${want}`);
        }
      }
    };
    let workflow = null;
    let workflowRun = null;
    await step('workflows: a diamond made in the editor, its DAG drawn live, a field error from the API at its row', async () => {
      // The diamond of docs/workflows.md (a -> b, a -> c, b -> d, c -> d always): its jobs through
      // the API, the workflow in the editor.
      for (const name of ['a', 'b', 'c', 'd']) {
        await api('POST', '/api/v1/jobs', { name: `browser-wf-${name}`, app: 'demo', handler: 'echo',
          schedule_type: 'manual', schedule_expr: '' });
      }
      await page.getByRole('link', { name: 'Workflows', exact: true }).click();
      await page.getByRole('link', { name: 'New workflow' }).click();
      await page.getByRole('heading', { name: 'New workflow' }).waitFor();
      await page.locator('input[name="name"]').fill('browser-diamond');
      await page.locator('textarea[name="description"]').fill('a, then b and c, then d');
      await page.locator('input[name="time_zone"]').fill('Europe/Berlin');
      // Step b's key is mistyped first: the API's 400 is shown at that row's field.
      const keys = ['a', 'b c', 'c', 'd'];
      for (let i = 0; i < keys.length; i += 1) {
        if (i > 0) await page.getByRole('button', { name: 'Add step' }).click();
        await page.locator(`input[name="steps[${i}].name"]`).fill(keys[i]);
        await page.locator(`select[name="steps[${i}].job_id"]`).selectOption({ label: `browser-wf-${'abcd'[i]}` });
      }
      const graphNodes = page.locator('aside svg.dag g.node');
      if (await graphNodes.count() !== 4) throw new Error(`the live DAG has ${await graphNodes.count()} nodes, not 4`);
      const links = [['a', 'b c', 'on-success'], ['a', 'c', 'on-success'], ['b c', 'd', 'on-success'], ['c', 'd', 'always']];
      for (let i = 0; i < links.length; i += 1) {
        await page.getByRole('button', { name: 'Add edge' }).click();
        await page.locator(`select[name="edges[${i}].parent"]`).selectOption({ label: links[i][0] });
        await page.locator(`select[name="edges[${i}].child"]`).selectOption({ label: links[i][1] });
        await page.locator(`select[name="edges[${i}].condition"]`).selectOption(links[i][2]);
        // Drawn as the form changes: one more edge per row.
        await page.locator('aside svg.dag path.edge').nth(i).waitFor({ state: 'attached' });
      }
      await page.locator('aside svg.dag text.edge-label', { hasText: 'always' }).waitFor();
      await shot(page, '12k0-workflow-editor.png');
      await page.getByRole('button', { name: 'Create workflow' }).click();
      await page.locator('label.invalid .field-error[data-for="steps[1].name"]').waitFor();
      // Renaming the step keeps its edges (they follow the row, not the old name).
      await page.locator('input[name="steps[1].name"]').fill('b');
      await page.locator('select[name="edges[0].child"] option:checked', { hasText: /^b$/ }).waitFor({ state: 'attached' });
      await page.locator('aside svg.dag g.node[data-step="b"]').waitFor();
      await shot(page, '12k1-workflow-editor-error.png');
      await page.getByRole('button', { name: 'Create workflow' }).click();
      await page.getByRole('heading', { name: /browser-diamond/ }).waitFor();
      const created = (await api('GET', '/api/v1/workflows?limit=200')).items.find((w) => w.name === 'browser-diamond');
      if (!created) throw new Error('the editor created no workflow');
      const edges = created.edges.map((e) => `${e.parent}->${e.child}:${e.condition}`).join(' ');
      if (edges !== 'a->b:on-success a->c:on-success b->d:on-success c->d:always' || created.time_zone !== 'Europe/Berlin'
        || created.steps.map((st) => st.name).join() !== 'a,b,c,d') {
        throw new Error(`the editor created ${JSON.stringify(created)}`);
      }
      workflow = created;
    });

    await step('workflows: the list, a diamond\'s DAG, a triggered run\'s DAG with each step\'s state', async () => {
      await page.getByRole('link', { name: 'Workflows', exact: true }).click();
      await page.getByRole('heading', { name: 'Workflows' }).waitFor();
      const row = page.locator(`tr[data-workflow="${workflow.id}"]`);
      await row.getByRole('link', { name: 'browser-diamond' }).waitFor();
      await row.locator('td[data-steps="4"]').waitFor();
      await row.locator('.badge', { hasText: 'active' }).waitFor();
      await shot(page, '12k-workflows.png');

      // The workflow's page: one box per step, layered by the longest path from the root.
      await row.getByRole('link', { name: 'browser-diamond' }).click();
      await page.getByRole('heading', { name: /browser-diamond/ }).waitFor();
      await page.getByText('No runs yet.').waitFor();
      const nodes = page.locator('svg.dag g.node');
      if (await nodes.count() !== 4) throw new Error(`the workflow's DAG has ${await nodes.count()} nodes, not 4`);
      if (await page.locator('svg.dag path.edge').count() !== 4) throw new Error('the DAG does not draw 4 edges');
      await page.locator('svg.dag text.edge-label', { hasText: 'always' }).waitFor();
      if (await page.locator('svg.dag text.edge-label').count() !== 1) throw new Error('an on-success edge is labelled');
      const x = async (step) => Number(await page.locator(`svg.dag g.node[data-step="${step}"] rect`).getAttribute('x'));
      const [xa, xb, xc, xd] = [await x('a'), await x('b'), await x('c'), await x('d')];
      if (!(xa < xb && xb === xc && xc < xd)) throw new Error(`layers a ${xa}, b ${xb}, c ${xc}, d ${xd}`);

      // Pause and resume from the page, then trigger a run.
      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      await page.locator('h1 .badge', { hasText: 'paused' }).waitFor();
      await page.getByRole('button', { name: 'Resume', exact: true }).click();
      await page.locator('h1 .badge', { hasText: 'active' }).waitFor();
      await page.getByRole('button', { name: 'Trigger now' }).click();
      await page.locator('.banner.info', { hasText: 'created' }).waitFor();
      const runRow = page.locator('tr[data-run]').first();
      await runRow.waitFor();
      await shot(page, '12l-workflow.png');

      // The run: the same DAG, each box classed by its step's state, as the step table says. The
      // master runs the diamond on the demo-client (echo): the page follows it to the end.
      await runRow.locator('a').first().click();
      await page.getByRole('heading', { name: /^Run #\d+ of browser-diamond/ }).waitFor();
      workflowRun = Number((await page.locator('h1').textContent()).match(/^Run #(\d+)/)[1]);
      const runNodes = page.locator('svg.dag g.node');
      await runNodes.first().waitFor();
      if (await runNodes.count() !== 4) throw new Error(`the run's DAG has ${await runNodes.count()} nodes, not 4`);
      await page.locator('h1 .badge', { hasText: 'succeeded' }).waitFor({ timeout: 30000 });
      await checkSteps({ a: 'succeeded', b: 'succeeded', c: 'succeeded', d: 'succeeded' });
      for (const state of ['waiting', 'running', 'succeeded', 'failed', 'skipped']) {
        await page.locator(`.legend [data-legend="${state}"] .swatch.step-${state}`).waitFor();
      }
      // Each step links its fire; a succeeded run offers no re-run.
      for (const st of ['a', 'b', 'c', 'd']) await page.locator(`tr[data-step="${st}"] a[href^="#/fires/"]`).waitFor();
      if (await page.getByRole('button', { name: 'Re-run from here' }).count() !== 0) {
        throw new Error('a succeeded run offers a re-run');
      }
      await shot(page, '12m-workflow-run.png');
    });

    await step('workflows: Edit sends the version read; an edit made meanwhile through the API is a stale-version message', async () => {
      await page.goto(`${base}/#/workflows/${workflow.id}`);
      await page.getByRole('link', { name: 'Edit', exact: true }).click();
      await page.getByRole('heading', { name: 'Edit "browser-diamond"' }).waitFor();
      // The form holds the definition: the steps with their jobs, the edges with their conditions.
      if (await page.locator('input[name="steps[3].name"]').inputValue() !== 'd'
        || await page.locator('select[name="edges[3].condition"]').inputValue() !== 'always') {
        throw new Error('the editor does not show the workflow\'s steps and edges');
      }
      await page.locator('aside svg.dag g.node').nth(3).waitFor();
      const current = await api('GET', `/api/v1/workflows/${workflow.id}`);
      await api('PUT', `/api/v1/workflows/${workflow.id}`, { version: current.version, description: 'changed through the API' });
      await page.locator('textarea[name="description"]').fill('changed in the browser');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.locator('.banner.stale-version', { hasText: 'changed by someone else since you opened it — reload' }).waitFor();
      await shot(page, '12m2-workflow-stale.png');
      if ((await api('GET', `/api/v1/workflows/${workflow.id}`)).description !== 'changed through the API') {
        throw new Error('a stale save overwrote the edit made meanwhile');
      }
      // Reload shows the current version, and saving it goes through.
      await page.locator('.banner.stale-version').getByRole('button', { name: 'Reload' }).click();
      await page.waitForFunction(() => document.querySelector('textarea[name="description"]')?.value
        === 'changed through the API');
      await page.locator('textarea[name="description"]').fill('a, then b and c, then d');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByRole('heading', { name: /browser-diamond/ }).waitFor();
      const saved = await api('GET', `/api/v1/workflows/${workflow.id}`);
      if (saved.description !== 'a, then b and c, then d' || saved.version !== current.version + 2
        || saved.edges.length !== 4) {
        throw new Error(`the edit saved ${JSON.stringify(saved)}`);
      }
    });

    await step('workflows: a failed step skips its child, the run page colours it and re-runs from it', async () => {
      const ok = await api('POST', '/api/v1/jobs', { name: 'browser-wf-ok', app: 'demo', handler: 'echo',
        schedule_type: 'manual', schedule_expr: '' });
      const bad = await api('POST', '/api/v1/jobs', { name: 'browser-wf-bad', app: 'demo', handler: 'fail',
        schedule_type: 'manual', schedule_expr: '' });
      const after = await api('POST', '/api/v1/jobs', { name: 'browser-wf-after', app: 'demo', handler: 'echo',
        schedule_type: 'manual', schedule_expr: '' });
      const chain = await api('POST', '/api/v1/workflows', {
        name: 'browser-chain', schedule_type: 'manual', schedule_expr: '',
        steps: [{ name: 'ok', job_id: ok.id }, { name: 'bad', job_id: bad.id }, { name: 'after', job_id: after.id }],
        edges: [{ parent: 'ok', child: 'bad' }, { parent: 'bad', child: 'after' }],
      });
      const run = await api('POST', `/api/v1/workflows/${chain.id}/trigger`, {});
      await page.goto(`${base}/#/workflow-runs/${run.id}`);
      await page.locator('h1 .badge', { hasText: 'failed' }).waitFor({ timeout: 30000 });
      await checkSteps({ ok: 'succeeded', bad: 'failed', after: 'skipped' });
      await page.locator('tr[data-step="after"]', { hasText: 'upstream' }).waitFor();
      await shot(page, '12n-workflow-run-failed.png');
      page.once('dialog', (d) => d.accept());
      await page.locator('tr[data-step="bad"]').getByRole('button', { name: 'Re-run from here' }).click();
      await page.locator('.banner.info', { hasText: 're-runs from "bad"' }).waitFor();
      // The re-run fails at "bad" again: generation 1, from "bad".
      await page.locator('dd', { hasText: '1 (last from "bad")' }).waitFor();
      await page.locator('h1 .badge', { hasText: 'failed' }).waitFor({ timeout: 30000 });
      await checkSteps({ ok: 'succeeded', bad: 'failed', after: 'skipped' });
    });

    // A webhook receiver on loopback: each call's headers and JSON body.
    const received = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => { body += chunk; });
      req.on('end', () => {
        received.push({ headers: req.headers, body: JSON.parse(body || 'null') });
        res.writeHead(204).end();
      });
    });
    await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${receiver.address().port}/hook`;
    try {
      await step('alerts: create a rule for a job, a stale edit refused, send a test and see it delivered, delete', async () => {
        await page.getByRole('link', { name: 'Alerts', exact: true }).click();
        await page.getByRole('heading', { name: 'Alert rules' }).waitFor();
        await page.getByText('No alert rules yet').waitFor();
        await page.getByRole('link', { name: 'New alert rule' }).click();
        await page.getByRole('heading', { name: 'New alert rule' }).waitFor();
        await page.locator('input[name="name"]').fill('browser-pager');
        await page.locator('select[name="job_id"]').selectOption({ label: 'browser-fails' });
        await page.locator('input[name="url"]').fill(receiverUrl);
        await page.locator('input[name="secret"]').fill('short');
        await page.getByRole('button', { name: 'Create alert rule' }).click();
        await page.locator('label.invalid .field-error', { hasText: 'secret: 16 to 255 bytes' }).waitFor();
        await shot(page, '12o-alert-form-invalid.png');
        await page.locator('input[name="secret"]').fill('browser-secret-0123456789');
        await page.getByRole('button', { name: 'Create alert rule' }).click();
        await page.getByRole('heading', { name: 'Alert rule "browser-pager"' }).waitFor();
        await page.locator('dd', { hasText: 'failed, timeout, lost' }).waitFor();
        await page.locator('dd a', { hasText: 'browser-fails' }).waitFor();
        await page.getByText('No deliveries yet.').waitFor();
        const rule = (await api('GET', '/api/v1/alert-rules')).items.find((r) => r.name === 'browser-pager');

        // Someone else saves while the form is open: the form says so instead of overwriting.
        await page.getByRole('link', { name: 'Edit', exact: true }).click();
        await page.getByRole('heading', { name: 'Edit alert rule "browser-pager"' }).waitFor();
        await api('PUT', `/api/v1/alert-rules/${rule.id}`, {
          version: rule.version, name: rule.name, job_id: rule.job_id, events: rule.events,
          consecutive_failures: 2, url: rule.url,
        });
        await page.locator('input[name="consecutive_failures"]').fill('3');
        await page.getByRole('button', { name: 'Save changes' }).click();
        await page.locator('.banner', { hasText: 'Someone changed this alert rule since you opened it' }).waitFor();
        await page.locator('.banner', { hasText: 'changed since it was read' }).waitFor();
        await shot(page, '12p-alert-stale-edit.png');
        await page.reload();
        await page.getByRole('heading', { name: 'Edit alert rule "browser-pager"' }).waitFor();
        await page.locator('input[name="consecutive_failures"]').fill('3');
        await page.getByRole('button', { name: 'Save changes' }).click();
        await page.getByRole('heading', { name: 'Alert rule "browser-pager"' }).waitFor();
        await page.locator('dd', { hasText: '3 failed run(s)' }).waitFor();

        // The master sends the test like any delivery: signed, to the receiver, then delivered.
        await page.getByRole('button', { name: 'Send test' }).click();
        await page.locator('.banner.info', { hasText: 'Test delivery' }).waitFor();
        const row = page.locator('tr[data-delivery]', { hasText: 'test' }).first();
        await row.waitFor();
        await row.locator('.badge', { hasText: 'delivered' }).waitFor({ timeout: 30000 });
        const call = received.find((r) => r.body?.test === true && r.body?.rule_id === rule.id);
        if (!call) throw new Error(`the receiver got no test call: ${JSON.stringify(received)}`);
        if (call.headers['x-sched-event'] !== 'failed' || !call.headers['x-sched-signature']?.startsWith('sha256=')) {
          throw new Error(`unexpected test call headers: ${JSON.stringify(call.headers)}`);
        }
        await shot(page, '12q-alert-delivered.png');
        await page.reload();
        await page.locator('.history tr[data-audit]', { hasText: 'test' }).first().waitFor();

        // Delete asks first: dismissed, the rule stays; accepted, it is gone.
        await page.getByRole('link', { name: 'Alerts', exact: true }).click();
        const listed = page.locator('tr[data-rule="browser-pager"]');
        await listed.locator('td', { hasText: receiverUrl }).waitFor();
        await shot(page, '12r-alerts.png');
        page.once('dialog', (d) => d.dismiss());
        await listed.getByRole('button', { name: 'Delete' }).click();
        await listed.waitFor();
        page.once('dialog', (d) => d.accept());
        await listed.getByRole('button', { name: 'Delete' }).click();
        await page.getByText('No alert rules yet').waitFor();
        if ((await api('GET', '/api/v1/alert-rules')).items.length !== 0) throw new Error('the rule was not deleted');
      });

      await step('alerts: a rule managed from a file is read-only (no Edit or Delete), Send test stays', async () => {
        // Created through the API with managed_by, as the alerts: section of `schedctl apply` does.
        const filed = await api('POST', '/api/v1/alert-rules', { name: 'browser-filed', events: ['failed'],
          url: receiverUrl, secret: 'browser-secret-0123456789', managed_by: 'ops.yaml' });
        await page.goto(`${base}/#/alerts`);
        await page.reload(); // the list page was already open: read it again
        const listed = page.locator('tr[data-rule="browser-filed"]');
        await listed.locator('[data-managed-by="ops.yaml"]').waitFor();
        await listed.getByRole('button', { name: 'Send test' }).waitFor();
        if (await listed.getByRole('link', { name: 'Edit' }).count() !== 0) throw new Error('a managed rule offers Edit');
        if (await listed.getByRole('button', { name: 'Delete' }).count() !== 0) {
          throw new Error('a managed rule offers Delete');
        }
        await listed.getByRole('link', { name: 'browser-filed' }).click();
        await page.getByRole('heading', { name: 'Alert rule "browser-filed"' }).waitFor();
        await page.locator('.managed-note[data-managed-by="ops.yaml"]', { hasText: 'Managed by ops.yaml, edit the file' })
          .waitFor();
        await page.getByRole('button', { name: 'Send test' }).waitFor();
        if (await page.getByRole('link', { name: 'Edit', exact: true }).count() !== 0
          || await page.getByRole('button', { name: 'Delete', exact: true }).count() !== 0) {
          throw new Error('a managed rule\'s page offers Edit or Delete');
        }
        await shot(page, '12s-alert-managed.png');
        await page.goto(`${base}/#/alerts/${filed.id}/edit`);
        await page.locator('.managed-note', { hasText: 'Managed by ops.yaml' }).waitFor();
        if (await page.locator('form').count() !== 0) throw new Error('the edit address of a managed rule shows a form');
        const res = await fetch(`${base}/api/v1/alert-rules/${filed.id}`,
          { method: 'DELETE', headers: { Authorization: `Bearer ${token}` } });
        if (res.status !== 204) throw new Error(`deleting the managed rule through the API: ${res.status}`);
      });
    } finally {
      receiver.close();
    }

    await step('at phone width (375 px) no page scrolls sideways', async () => {
      await page.setViewportSize({ width: 375, height: 800 });
      const hello = (await api('GET', '/api/v1/jobs?q=browser-hello')).items[0];
      for (const [route, ready] of [
        ['#/jobs', 'tr[data-job]'], [`#/jobs/${hello.id}`, 'tr[data-fire]'], ['#/fires', 'tr[data-fire]'],
        [`#/fires/${killedFire}`, 'dl.facts'], ['#/dashboard', 'svg.chart'], ['#/executors', 'section[data-app]'],
        ['#/cluster', 'td .badge'], ['#/tokens', 'input[name="name"]'], ['#/jobs/new', 'textarea[name="params"]'],
        ['#/audit', 'tr[data-audit]'], ['#/calendars', 'tr[data-calendar]'], ['#/workflows', 'tr[data-workflow]'],
        [`#/workflows/${workflow.id}`, 'svg.dag'], [`#/workflow-runs/${workflowRun}`, 'svg.dag']]) {
        await page.goto(`${base}/${route}`);
        await page.locator(ready).first().waitFor();
        const width = await page.evaluate(() => document.documentElement.scrollWidth);
        if (width > 375) throw new Error(`${route} is ${width} px wide at a 375 px viewport`);
      }
      await page.goto(`${base}/#/fires`);
      await page.locator('tr[data-fire]').first().waitFor();
      await shot(page, '12f-fires-phone.png');
      await page.setViewportSize({ width: 1280, height: 860 });
    });

    // Jobs for the UI conveniences below, in Europe/Berlin so the time switch shows.
    const sortJob = (name, app, expr) => api('POST', '/api/v1/jobs', { name, app, handler: 'echo',
      schedule_type: 'cron', schedule_expr: expr, time_zone: 'Europe/Berlin' });
    const sortA = await sortJob('ui-sort-a', 'mmm', '0 0 3 * * ?');
    const sortB = await sortJob('ui-sort-b', 'zzz', '0 0 2 * * ?');
    const sortC = await sortJob('ui-sort-c', 'aaa', '0 0 1 * * ?');
    // "2026-11-27 08:30:00 UTC": UTC itself, not a UTC offset.
    const IN_UTC = /\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC(?![+\-\d])/;
    const BERLIN = /\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} (CES?T|GMT\+[12]|UTC\+[12])/;

    await step('times: the header switch shows every time in UTC, and a reload keeps the choice', async () => {
      await page.goto(`${base}/#/jobs?q=ui-sort`);
      const next = () => page.locator(`tr[data-job="${sortB.id}"] td.next-fire`);
      await next().waitFor();
      if (!BERLIN.test(await next().textContent())) throw new Error(`next fire not in the job's zone: ${await next().textContent()}`);
      await page.locator('#time-rule').selectOption('utc');
      await page.locator(`tr[data-job="${sortB.id}"] td.next-fire`, { hasText: IN_UTC }).waitFor();
      await page.reload();
      await page.locator(`tr[data-job="${sortB.id}"] td.next-fire`, { hasText: IN_UTC }).waitFor();
      if (await page.locator('#time-rule').inputValue() !== 'utc') throw new Error('the time switch forgot UTC');
      await page.goto(`${base}/#/jobs/${sortB.id}`);
      await page.locator('.preview li', { hasText: IN_UTC }).first().waitFor();
      if (await page.locator('.preview li', { hasText: BERLIN }).count() !== 0) throw new Error('a next time stayed in Berlin');
      await shot(page, '14a-times-utc.png');
      await page.locator('#time-rule').selectOption('job');
      await page.locator('.preview li', { hasText: BERLIN }).first().waitFor();
    });

    await step('times: in a browser in New York, "browser" and "UTC" apply to a job\'s times and the dashboard axis', async () => {
      const ny = await browser.newPage({ viewport: { width: 1280, height: 860 }, timezoneId: 'America/New_York' });
      try {
        ny.setDefaultTimeout(15000);
        await ny.goto(`${base}/`);
        await ny.getByLabel('API token').fill(token);
        await ny.getByRole('button', { name: 'Sign in' }).click();
        await ny.getByRole('heading', { name: 'Jobs' }).waitFor();
        await ny.locator('#time-rule').selectOption('browser');
        await ny.goto(`${base}/#/jobs/${sortB.id}`);
        // New York's label: EST/EDT, or GMT−5 with a Unicode minus where ICU has no short name.
        await ny.locator('.preview li', { hasText: /\d{2}:\d{2}:\d{2} (EST|EDT|(GMT|UTC)[-\u2212][45])/ }).first().waitFor();
        if (await ny.locator('.preview li', { hasText: BERLIN }).count() !== 0) throw new Error('"browser" left a time in Berlin');
        await ny.goto(`${base}/#/dashboard`);
        await ny.locator('svg.chart text.chart-zone', { hasText: 'America/New_York' }).waitFor();
        await ny.locator('#time-rule').selectOption('utc');
        await ny.locator('svg.chart text.chart-zone', { hasText: /^UTC$/ }).waitFor();
      } finally {
        await ny.close();
      }
    });

    await step('audit: a job edit shows its times as times, the epoch ms in the title', async () => {
      const current = await api('GET', `/api/v1/jobs/${sortB.id}`);
      const edited = await api('PUT', `/api/v1/jobs/${sortB.id}`, { schedule_expr: '0 0 4 * * ?', version: current.version });
      if (edited.next_fire_time === current.next_fire_time) throw new Error('the edit did not move next_fire_time');
      await page.goto(`${base}/#/audit?target_kind=job&target_id=${sortB.id}&action=update`);
      const change = page.locator('tr[data-audit]', { hasText: 'update' }).first()
        .locator('table.diff tr', { hasText: 'next_fire_time' });
      const after = change.locator('td.after .audit-time');
      await after.waitFor();
      if (!BERLIN.test(await after.textContent())) throw new Error(`next_fire_time shows as ${await after.textContent()}`);
      if (await after.getAttribute('title') !== String(edited.next_fire_time)) {
        throw new Error(`the raw value is not in the title: ${await after.getAttribute('title')}`);
      }
      if (/\d{13}/.test(await change.textContent())) throw new Error(`a 13-digit number shows: ${await change.textContent()}`);
      await shot(page, '14b-audit-times.png');
    });

    // The job names in the list, top to bottom, once they equal `expected` (the click redraws).
    const listOrder = async (expected) => {
      const end = Date.now() + 5000;
      for (;;) {
        const names = await page.locator('tr[data-job] a[href^="#/jobs/"]').allTextContents();
        if (JSON.stringify(names) === JSON.stringify(expected)) return;
        if (Date.now() > end) throw new Error(`list order ${JSON.stringify(names)}, wanted ${JSON.stringify(expected)}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    await step('jobs: a click on a header sorts the list, the sort kept in the address', async () => {
      await page.goto(`${base}/#/jobs?q=ui-sort`);
      await page.locator('tr[data-job]').nth(2).waitFor();
      await page.locator('button[data-sort="name"]').click();
      await listOrder(['ui-sort-a', 'ui-sort-b', 'ui-sort-c']);
      if (!page.url().includes('sort=name') || !page.url().includes('q=ui-sort')) throw new Error(`address ${page.url()}`);
      await page.locator('button[data-sort="name"]').click();
      await listOrder(['ui-sort-c', 'ui-sort-b', 'ui-sort-a']);
      if (!page.url().includes('sort=-name')) throw new Error(`address ${page.url()}`);
      await page.locator('button[data-sort="app"]').click();
      await listOrder(['ui-sort-c', 'ui-sort-a', 'ui-sort-b']); // aaa, mmm, zzz
      // By next fire: the order the API's times give (which day each falls on depends on the hour).
      const byNext = (await api('GET', '/api/v1/jobs?q=ui-sort')).items
        .sort((a, b) => a.next_fire_time - b.next_fire_time).map((j) => j.name);
      await page.locator('button[data-sort="next"]').click();
      await listOrder(byNext);
      await page.reload();
      await listOrder(byNext);
      await page.locator('button[data-sort="next"].active').waitFor();
      await shot(page, '14c-jobs-sorted.png');
    });

    await step('jobs: Copy opens the create form filled in, named "<name> (copy)"', async () => {
      await page.goto(`${base}/#/jobs/${sortB.id}`);
      await page.getByRole('link', { name: 'Copy', exact: true }).click();
      await page.getByRole('heading', { name: 'New job' }).waitFor();
      await page.locator('.copy-of').waitFor();
      const value = (name) => page.locator(`[name="${name}"]`).inputValue();
      const got = { name: await value('name'), app: await value('app'), handler: await value('handler'),
        expr: await value('schedule_expr'), zone: await value('time_zone') };
      const want = { name: 'ui-sort-b (copy)', app: 'zzz', handler: 'echo', expr: '0 0 4 * * ?', zone: 'Europe/Berlin' };
      if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`copy form ${JSON.stringify(got)}`);
      await page.locator('.preview-times li').first().waitFor();
      await page.getByRole('button', { name: 'Create job' }).click();
      await page.getByRole('heading', { name: /ui-sort-b \(copy\)/ }).waitFor();
      const copy = (await api('GET', `/api/v1/jobs?q=${encodeURIComponent('ui-sort-b (copy)')}`)).items[0];
      if (!copy || copy.id === sortB.id || copy.schedule_expr !== '0 0 4 * * ?' || copy.app !== 'zzz') {
        throw new Error(`the copy: ${JSON.stringify(copy)}`);
      }
    });

    await step('jobs: bulk pause of two selected jobs, then a bulk delete that goes on past a failure', async () => {
      await page.goto(`${base}/#/jobs?q=ui-sort`);
      await page.locator('tr[data-job]').nth(3).waitFor();
      if (!await page.locator('button[data-bulk="Pause"]').isDisabled()) throw new Error('Pause offered with nothing selected');
      await page.locator(`tr[data-job="${sortA.id}"] input.select-job`).check();
      await page.locator(`tr[data-job="${sortC.id}"] input.select-job`).check();
      await page.locator('.bulk-count', { hasText: '2 selected' }).waitFor();
      await page.locator('button[data-bulk="Pause"]').click();
      await page.locator('.bulk-results li.ok').nth(1).waitFor();
      for (const job of [sortA, sortC]) {
        await page.locator(`tr[data-job="${job.id}"] .badge`, { hasText: 'paused' }).waitFor();
        if ((await api('GET', `/api/v1/jobs/${job.id}`)).enabled) throw new Error(`${job.name} is not paused`);
      }
      if (!(await api('GET', `/api/v1/jobs/${sortB.id}`)).enabled) throw new Error('an unselected job was paused');
      await shot(page, '14d-jobs-bulk-paused.png');

      // Delete all four; the server refuses one of them (injected), the others still go.
      await page.locator('input.select-all').check();
      await page.locator('.bulk-count', { hasText: '4 selected' }).waitFor();
      await page.route(`**/api/v1/jobs/${sortB.id}`, (route) => (route.request().method() === 'DELETE'
        ? route.fulfill({ status: 503, contentType: 'application/json',
          body: JSON.stringify({ error: { code: 'unavailable', message: 'database unavailable' } }) })
        : route.continue()));
      let asked = '';
      page.once('dialog', (d) => { asked = d.message(); d.accept(); });
      await page.locator('button[data-bulk="Delete"]').click();
      await page.locator('.bulk-results li').nth(3).waitFor();
      await page.unroute(`**/api/v1/jobs/${sortB.id}`);
      if (!asked.includes('Delete 4 jobs')) throw new Error(`the confirmation said: ${asked}`);
      await page.locator(`.bulk-results li.error[data-job="${sortB.id}"]`, { hasText: 'database unavailable' }).waitFor();
      if (await page.locator('.bulk-results li.ok', { hasText: 'deleted' }).count() !== 3) throw new Error('not three deleted');
      const left = (await api('GET', '/api/v1/jobs?q=ui-sort')).items.map((j) => j.id);
      if (JSON.stringify(left) !== JSON.stringify([sortB.id])) throw new Error(`left after the bulk delete: ${left}`);
      await page.locator('tr[data-job]').nth(1).waitFor({ state: 'detached' });
      await shot(page, '14e-jobs-bulk-delete.png');
    });

    await step('job form: the app and handler inputs suggest the live executors\' apps and handlers', async () => {
      await page.goto(`${base}/#/jobs/new`);
      await page.getByRole('heading', { name: 'New job' }).waitFor();
      if (await page.locator('input[name="app"]').getAttribute('list') !== 'executor-apps'
        || await page.locator('input[name="handler"]').getAttribute('list') !== 'executor-handlers') {
        throw new Error('the app and handler inputs have no suggestion lists');
      }
      await page.locator('datalist#executor-apps option[value="demo"]').waitFor({ state: 'attached' });
      await page.locator('input[name="app"]').fill('demo');
      await page.locator('datalist#executor-handlers option[value="echo"]').waitFor({ state: 'attached' });
      const handlers = await page.locator('datalist#executor-handlers option')
        .evaluateAll((options) => options.map((o) => o.value));
      const want = ['conformance.echo', 'conformance.fail', 'conformance.sleep', 'count', 'echo', 'fail', 'pay', 'sleep'];
      if (JSON.stringify(handlers) !== JSON.stringify(want)) throw new Error(`handlers suggested: ${handlers}`);
      // Free text stays: an app no executor registered yet is kept as typed.
      await page.locator('input[name="app"]').fill('not-started-yet');
      if (await page.locator('input[name="app"]').inputValue() !== 'not-started-yet') throw new Error('the app input refused free text');
    });

    let viewerToken = '';
    await step('tokens: create one and see its secret once', async () => {
      await page.getByRole('link', { name: 'Tokens' }).click();
      // The page before may hold a form with a `name` input too: fill only once this one shows.
      await page.getByRole('heading', { name: 'API tokens' }).waitFor();
      await page.locator('input[name="name"]').fill('ci-viewer');
      if (await page.locator('input[name="apps"]').isVisible()) throw new Error('apps offered for a viewer token');
      await page.getByRole('button', { name: 'Create token' }).click();
      const secret = page.locator('.secret code', { hasText: /^sched_[0-9a-f]{64}$/ });
      await secret.waitFor();
      viewerToken = await secret.textContent();
      await page.locator('td', { hasText: 'ci-viewer' }).waitFor();
      await shot(page, '13-tokens.png');
    });

    await step('tokens: an executor token is scoped to its apps', async () => {
      await page.locator('input[name="name"]').fill('billing-svc');
      await page.locator('select[name="role"]').selectOption('executor');
      await page.locator('input[name="apps"]').waitFor();
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.locator('label.invalid .field-error', { hasText: 'apps: required' }).waitFor();
      await page.locator('input[name="apps"]').fill('demo, billing');
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.locator('.secret', { hasText: 'for demo, billing' }).waitFor();
      await page.locator('tr', { hasText: 'billing-svc' }).locator('td', { hasText: 'demo, billing' }).waitFor();
      await shot(page, '14-tokens-executor.png');
    });

    await step('a viewer sees no New job, Trigger, Pause, Delete or token form', async () => {
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in to sched' }).waitFor();
      await notShown(page, 'the nav bar', page.locator('#nav'));
      await notShown(page, 'Sign out', page.getByRole('button', { name: 'Sign out' }));
      await page.getByLabel('API token').fill(viewerToken);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Jobs' }).waitFor();
      const row = page.locator('tr[data-job]', { hasText: 'browser-hello' });
      await row.waitFor();
      await page.locator('#whoami', { hasText: 'ci-viewer (viewer)' }).waitFor();
      const none = async (what, locator) => {
        const n = await locator.count();
        if (n !== 0) throw new Error(`a viewer is offered ${what} (${n})`);
      };
      await none('New job', page.getByRole('link', { name: 'New job' }));
      await none('Trigger/Pause in the list', row.locator('button'));
      await none('the Tokens section', page.locator('nav a[data-section="tokens"]:visible'));
      await shot(page, '15-viewer-jobs.png');
      await row.getByRole('link', { name: 'browser-hello' }).click();
      await page.getByRole('heading', { name: /browser-hello/ }).waitFor();
      await page.locator('tr[data-fire]').first().waitFor();
      for (const name of ['Trigger now', 'Pause', 'Resume', 'Delete']) {
        await none(name, page.getByRole('button', { name, exact: true }));
      }
      await none('Edit', page.getByRole('link', { name: 'Edit', exact: true }));
      await shot(page, '16-viewer-job.png');
      await page.goto(`${base}/#/tokens`);
      await page.getByText('Only admins can see and create tokens.').waitFor();
      await none('the token form', page.getByRole('button', { name: 'Create token' }));
      await page.goto(`${base}/#/jobs/new`);
      await page.getByText('cannot create or edit jobs').waitFor();
      await none('the job form', page.getByRole('button', { name: 'Create job' }));
      await page.goto(`${base}/#/calendars`);
      const calendarRow = page.locator('tr[data-calendar]', { hasText: 'browser-holidays' });
      await calendarRow.waitFor();
      await none('New calendar', page.getByRole('link', { name: 'New calendar' }));
      await none('Edit/Delete of a calendar', calendarRow.locator('button, a.button'));
      await calendarRow.getByRole('link', { name: 'browser-holidays' }).click();
      await page.locator('tr[data-day]').first().waitFor();
      await none('Edit or Delete on the calendar page', page.locator('h1 .actions'));
      await page.goto(`${base}/#/workflows/${workflow.id}`);
      await page.locator('svg.dag g.node').first().waitFor();
      await none('Trigger/Pause on the workflow page', page.locator('h1 button'));
      await none('Edit on the workflow page', page.getByRole('link', { name: 'Edit', exact: true }));
      await page.goto(`${base}/#/workflows`);
      await page.locator(`tr[data-workflow="${workflow.id}"]`).waitFor();
      await none('Trigger/Pause in the workflows list', page.locator('tr[data-workflow] button'));
      await none('New workflow', page.getByRole('link', { name: 'New workflow' }));
      await page.goto(`${base}/#/workflows/new`);
      await page.getByText('cannot create or edit workflows').waitFor();
      await none('the workflow form', page.getByRole('button', { name: 'Create workflow' }));
      await shot(page, '17-viewer-no-forms.png');
    });

    await step('a viewer sees no Alerts section, and the page says alert rules are for admins', async () => {
      if (await page.locator('nav a[data-section="alerts"]:visible').count() !== 0) {
        throw new Error('a viewer is offered the Alerts section');
      }
      await page.goto(`${base}/#/alerts`);
      await page.getByText('Only admins can see and change alert rules.').waitFor();
      if (await page.getByRole('link', { name: 'New alert rule' }).count() !== 0) throw new Error('a viewer is offered New alert rule');
    });

    await step('a viewer gets no row selection, bulk actions or Copy', async () => {
      await page.goto(`${base}/#/jobs?sort=name`);
      const row = page.locator('tr[data-job]').first();
      await row.waitFor();
      for (const [what, locator] of [['a row checkbox', page.locator('input.select-job, input.select-all')],
        ['bulk actions', page.locator('button[data-bulk]')]]) {
        if (await locator.count() !== 0) throw new Error(`a viewer is offered ${what}`);
      }
      await page.locator('button[data-sort="name"].active').waitFor();
      await row.locator('a[href^="#/jobs/"]').click();
      await page.locator('dl.facts').waitFor();
      if (await page.getByRole('link', { name: 'Copy', exact: true }).count() !== 0) throw new Error('a viewer is offered Copy');
    });

    await step('single sign-on: Sign in with SSO, the person and provider in the header, a pause audited under their name', async () => {
      const ssoBase = await startSsoScheduler();
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      try {
        const sso = await context.newPage();
        sso.setDefaultTimeout(15000);
        sso.on('pageerror', (e) => problems.push(`page error (SSO): ${e.message}`));
        await sso.goto(`${ssoBase}/`);
        await sso.getByRole('button', { name: 'Sign in with SSO' }).click();
        // The test provider's form asks which user signs in.
        await sso.getByLabel('user').fill('alice');
        await sso.getByRole('button', { name: 'Sign in' }).click();
        await sso.locator('#whoami', { hasText: 'alice@example.com (admin) · 127.0.0.1:' }).waitFor();
        await sso.getByRole('heading', { name: 'Jobs' }).waitFor();
        await shot(sso, '19-sso-signed-in.png');
        const res = await fetch(`${ssoBase}/api/v1/jobs`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ name: 'sso-job', app: 'demo', handler: 'echo', schedule_type: 'manual',
            schedule_expr: '' }),
        });
        if (res.status !== 201) throw new Error(`creating sso-job: ${res.status} ${await res.text()}`);
        const job = await res.json();
        await sso.goto(`${ssoBase}/#/jobs/${job.id}`);
        sso.once('dialog', (d) => d.accept('paused through SSO'));
        await sso.getByRole('button', { name: 'Pause', exact: true }).click();
        await sso.locator('.paused-note', { hasText: 'paused through SSO' }).waitFor();
        await sso.goto(`${ssoBase}/#/audit?target_kind=job&target_id=${job.id}`);
        await sso.locator('tr[data-audit]', { hasText: 'alice@example.com' }).first().waitFor();
        await shot(sso, '20-sso-audit.png');
        await sso.getByRole('button', { name: 'Sign out' }).click();
        await sso.getByRole('heading', { name: 'Sign in to sched' }).waitFor();
        await sso.goto(`${ssoBase}/#/jobs`);
        await sso.getByRole('heading', { name: 'Sign in to sched' }).waitFor();
      } finally {
        await context.close();
      }
    });

    if (problems.length) throw new Error(`the page reported errors:\n  ${problems.join('\n  ')}`);
  } finally {
    await browser.close();
  }
}

let failed = false;
const onSignal = (signal) => {
  stopAll().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
};
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);
try {
  await main();
} catch (e) {
  failed = true;
  console.error(`FAILED: ${e.stack ?? e}`);
  console.error(`process logs are in ${tmp}`);
} finally {
  await stopAll();
}
log(`screenshots in ${shotsDir}`);
console.log(`${passed} passed, ${failed ? 1 : 0} failed`);
if (!failed) fs.rmSync(tmp, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
