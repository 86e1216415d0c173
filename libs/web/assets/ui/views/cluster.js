// Executors (apps and their instances) and the trigger cluster (leader, epoch, shards, nodes).

import { get } from '../api.js';
import { badge, fmtDuration, fmtTime, h, replace, table } from '../dom.js';

export async function executorsView(main, ctx) {
  const body = h('div', { class: 'cards' });
  async function load() {
    const data = await get('/api/v1/executors');
    if (data.apps.length === 0) {
      replace(body, h('div', { class: 'panel empty' },
        'No executor has registered yet. Business services register through the client SDK.'));
      return;
    }
    replace(body, data.apps.map((app) => h('section', { class: 'panel', 'data-app': app.app },
      h('h2', null, app.app, ' ',
        badge(`${app.alive_instances}/${app.instances} alive`, app.alive_instances > 0 ? 'alive' : 'dead')),
      h('div', { class: 'hint' }, `handlers: ${app.handlers.join(', ') || '—'}`),
      h('br'),
      table(['Instance', 'State', 'Handlers', 'Running / capacity', 'Last heartbeat'],
        data.items.filter((e) => e.app === app.app).map((e) => h('tr', null,
          h('td', { class: 'mono' }, e.address),
          h('td', null, e.alive ? badge('alive') : badge('gone', 'dead')),
          h('td', { class: 'wrap' }, e.handlers.join(', ')),
          h('td', { class: 'num' }, `${e.running} / ${e.capacity}`),
          h('td', null, `${fmtDuration(e.heartbeat_age_ms)} ago`))),
        ''))));
  }
  main.append(h('h1', null, 'Executors'), body);
  await load();
  ctx.every(5000, () => load().catch(() => {}));
}

export async function clusterView(main, ctx) {
  const summary = h('div', { class: 'panel stat' });
  const shards = h('div');
  const nodes = h('div');
  async function load() {
    const c = await get('/api/v1/cluster');
    // One shard is the whole cluster, which the summary already shows.
    replace(shards, c.shard_count > 1 ? [
      h('h2', null, `Shards (${c.shard_count})`),
      table(['Shard', 'Leader', 'Since', 'Epoch'], c.shards.map((s) => h('tr', { 'data-shard': s.shard },
        h('td', { class: 'num' }, s.shard),
        h('td', { class: 'mono' }, s.leader ?? badge('none', 'dead')),
        h('td', null, fmtTime(s.held_since)),
        h('td', { class: 'num' }, s.epoch))), ''),
    ] : []);
    replace(summary,
      h('div', null, h('span', { class: 'subtle' }, 'Leader'), h('b', { 'data-leader': c.leader ?? '' }, c.leader ?? 'none')),
      h('div', null, h('span', { class: 'subtle' }, 'Epoch'), h('b', null, c.epoch)),
      h('div', null, h('span', { class: 'subtle' }, 'Lease renewed'),
        h('b', null, c.lease_age_ms === null ? '—' : `${fmtDuration(c.lease_age_ms)} ago`)),
      h('div', null, h('span', { class: 'subtle' }, 'Lease expires in'),
        h('b', null, c.lease_remaining_ms === null ? '—' : fmtDuration(c.lease_remaining_ms))),
      h('div', null, h('span', { class: 'subtle' }, 'Live nodes'),
        h('b', null, `${c.nodes.filter((n) => n.alive).length} / ${c.nodes.length}`)));
    replace(nodes, table(['Node', 'Address', 'Role', 'State', 'Capacity', 'Last heartbeat', 'Up since'],
      c.nodes.map((n) => h('tr', null,
        h('td', { class: 'mono' }, n.node_id),
        h('td', { class: 'mono' }, n.address),
        h('td', null, n.leader ? badge('master', 'leader') : 'slave',
          c.shard_count > 1 && n.shards_led.length > 0 ? ` · shards ${n.shards_led.join(', ')}` : ''),
        h('td', null, n.alive ? badge('alive') : badge(n.state === 'stopped' ? 'stopped' : 'silent', 'dead')),
        h('td', { class: 'num' }, n.capacity),
        h('td', null, `${fmtDuration(n.heartbeat_age_ms)} ago`),
        h('td', null, fmtTime(n.started_at_ms)))),
      'No trigger node has joined yet.'));
  }
  main.append(h('h1', null, 'Cluster'), summary, shards, h('h2', null, 'Trigger nodes'), nodes);
  await load();
  ctx.every(3000, () => load().catch(() => {}));
}
