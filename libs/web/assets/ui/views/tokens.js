// API tokens (admin): create one (its secret is shown once; executor tokens name their apps), list, revoke.

import { del, get, isAdmin, post } from '../api.js';
import { badge, clearErrors, field, fmtRelative, fmtTime, h, replace, showError, table } from '../dom.js';

const ROLES = [
  ['viewer', 'viewer: read only'],
  ['operator', 'operator: jobs, trigger, kill'],
  ['admin', 'admin: everything, tokens too'],
  ['executor', 'executor: a service (SDK) of the apps below'],
];

// What the Apps column says: the scope of an executor token.
function scopeText(t) {
  if (!t.apps) return h('span', { class: 'subtle' }, '—');
  if (t.apps.includes('*')) return badge('all apps (legacy)', 'failed');
  return t.apps.join(', ');
}

export async function tokensView(main, ctx) {
  if (!isAdmin(ctx.who)) {
    main.append(h('h1', null, 'API tokens'),
      h('div', { class: 'panel subtle' }, 'Only admins can see and create tokens.'));
    return;
  }
  const name = h('input', { name: 'name', maxlength: 128, placeholder: 'e.g. ci-deploy' });
  const role = h('select', { name: 'role' }, ROLES.map(([v, text]) => h('option', { value: v }, text)));
  const apps = h('input', { name: 'apps', placeholder: 'e.g. payments, billing' });
  const appsField = field('Apps', apps, 'the app(s) the service runs as, comma-separated');
  const showApps = () => { appsField.hidden = role.value !== 'executor'; };
  role.addEventListener('change', showApps);
  showApps();
  const created = h('div');
  const list = h('div');
  const form = h('form', { class: 'panel', novalidate: true },
    h('div', { class: 'banner' }),
    h('div', { class: 'toolbar' }, field('Name', name), field('Role', role), appsField,
      h('button', { class: 'primary', type: 'submit' }, 'Create token')));

  async function load() {
    try {
      const data = await get('/api/v1/tokens');
      replace(list, table(['Name', 'Role', 'Apps', 'Created', 'Last used', 'State', ''],
        data.items.map((t) => h('tr', null,
          h('td', null, t.name), h('td', null, t.role), h('td', null, scopeText(t)),
          h('td', null, fmtTime(t.created_at), t.created_by ? h('div', { class: 'subtle' }, `by ${t.created_by}`) : null),
          h('td', null, t.last_used_at ? fmtRelative(t.last_used_at) : 'never'),
          h('td', null, t.revoked_at ? badge('revoked', 'failed') : badge('active', 'succeeded')),
          h('td', null, t.revoked_at ? null : h('button', {
            class: 'small danger',
            onclick: async () => {
              if (!confirm(`Revoke token "${t.name}"? Anything using it stops working.`)) return;
              await del(`/api/v1/tokens/${t.id}`);
              await load();
            },
          }, 'Revoke')))),
        'No tokens yet. The cluster token from the configuration is always an admin.'));
    } catch (e) {
      replace(list, h('div', { class: 'panel subtle' },
        e.status === 403 ? 'Only admins can see tokens.' : e.message));
    }
  }
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearErrors(form);
    try {
      const body = { name: name.value.trim(), role: role.value };
      const scope = apps.value.split(',').map((a) => a.trim()).filter((a) => a);
      if (role.value === 'executor' && scope.length) body.apps = scope; // none: the server says it is required
      const t = await post('/api/v1/tokens', body);
      replace(created, h('div', { class: 'secret' },
        h('b', null, `Token "${t.name}" (${t.role}${t.apps ? ` for ${t.apps.join(', ')}` : ''}) created. `
          + 'Copy the secret now: it is not shown again.'),
        h('code', null, t.token)));
      name.value = '';
      apps.value = '';
      await load();
    } catch (e) {
      showError(form, e);
    }
  });
  main.append(h('h1', null, 'API tokens'), created, form, h('h2', null, 'Tokens'), list);
  await load();
}
