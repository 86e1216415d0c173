// Sign in with an API token (or the cluster token): checked against the API, then kept in
// this tab (or, when remembered, in the browser). When the server offers single sign-on, a
// button leads to the OpenID provider instead (GET /auth/login; the server sets a session cookie
// and sends the browser back to /).

import { api, setToken, ssoConfig } from '../api.js';
import { field, h, showError } from '../dom.js';

export async function signInView(main, ctx) {
  const next = ctx.query.get('next') || '/jobs';
  const token = h('input', { name: 'token', type: 'password', autocomplete: 'current-password', required: true,
    placeholder: 'sched_… or the cluster token' });
  const remember = h('input', { type: 'checkbox', name: 'remember' });
  const submit = h('button', { class: 'primary', type: 'submit' }, 'Sign in');
  const form = h('form', { class: 'panel', novalidate: true },
    h('div', { class: 'banner' }, ctx.query.get('expired') ? 'Your token was refused; sign in again.' : ''),
    field('API token', token, 'Ask an admin for a token, or use the one the scheduler printed at start-up.'),
    h('label', { class: 'check' }, remember, 'Remember on this browser'),
    submit);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const value = token.value.trim();
    if (!value) {
      showError(form, { field: 'token', message: 'Enter a token.' });
      return;
    }
    submit.disabled = true;
    try {
      await api('GET', '/api/v1/jobs?limit=1', undefined, value);
      setToken(value, remember.checked);
      location.hash = `#${next}`;
    } catch (e) {
      const message = e.status === 401 ? 'This token is not valid (or was revoked).'
        : e.status === 403 ? 'This token cannot use the UI (executor tokens only reach the SDK routes).'
          : e.message;
      showError(form, { field: 'token', message });
    } finally {
      submit.disabled = false;
    }
  });
  const box = h('div', { class: 'signin' }, h('h1', null, 'Sign in to sched'), form);
  main.append(box);
  token.focus();
  const config = await ssoConfig();
  if (config.oidc && !ctx.disposed) {
    const sso = h('button', { class: 'primary', type: 'button', id: 'sso-signin' }, 'Sign in with SSO');
    sso.addEventListener('click', () => {
      location.href = config.login_url;
    });
    box.insertBefore(h('div', { class: 'panel' }, sso, h('p', { class: 'subtle' }, `through ${config.issuer}`)), form);
  }
}
