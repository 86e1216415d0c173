// The REST API as the UI uses it: bearer token, JSON in and out, errors as ApiError.

const KEY = 'sched.token';

export function getToken() {
  return sessionStorage.getItem(KEY) ?? localStorage.getItem(KEY);
}

// A remembered token survives the browser session (localStorage); otherwise the tab's only.
export function setToken(token, remember) {
  clearToken();
  (remember ? localStorage : sessionStorage).setItem(KEY, token);
}

export function clearToken() {
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
  me = null;
  sso = null;
}

// A browser session from single sign-on (the HttpOnly cookie the server set at /auth/callback):
// GET /api/v1/session says who it is and gives the CSRF token every change must carry.
let sso = null;
export async function loadSession() {
  if (getToken()) return null;
  try {
    const res = await fetch('/api/v1/session', { credentials: 'same-origin' });
    const who = res.ok ? await res.json() : null;
    sso = who?.via === 'session' ? who : null;
  } catch {
    sso = null;
  }
  return sso;
}
export const ssoSession = () => sso;
export const signedIn = () => Boolean(getToken() || sso);

// Ends the single sign-on session on the server.
export async function signOutSession() {
  if (!sso) return;
  const csrf = sso.csrf_token;
  sso = null;
  await fetch('/auth/logout', { method: 'POST', credentials: 'same-origin', headers: { 'X-CSRF-Token': csrf } });
}

// Whether the server offers single sign-on (GET /auth/config).
export async function ssoConfig() {
  try {
    const res = await fetch('/auth/config');
    return res.ok ? await res.json() : { oidc: false };
  } catch {
    return { oidc: false };
  }
}

// Who the signed-in token is (GET /api/v1/whoami: name, role, apps), asked once per token. The
// UI shows only what that role can do; the server checks every call regardless.
let me = null;
export async function whoami() {
  const token = getToken();
  if (!token && sso) return sso;
  if (me && me.token === token) return me.who;
  const who = await get('/api/v1/whoami');
  me = { token, who };
  return who;
}

// Jobs (create, edit, delete, pause, resume, trigger) and killing fires.
export const canOperate = (who) => who?.role === 'admin' || who?.role === 'operator';
// Tokens.
export const isAdmin = (who) => who?.role === 'admin';

// {"error": {"code", "message", "field"}} from the server, or a network failure.
export class ApiError extends Error {
  constructor(status, error) {
    super(error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error?.code ?? 'unknown';
    this.field = error?.field ?? null;
  }
}

export async function api(method, path, body, token = getToken()) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  else if (sso && method !== 'GET') headers['X-CSRF-Token'] = sso.csrf_token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(0, { code: 'unavailable', message: `cannot reach the server: ${e.message}` });
  }
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const error = new ApiError(res.status, data?.error ?? { message: text || res.statusText });
    if (res.status === 401) window.dispatchEvent(new CustomEvent('sched:unauthenticated', { detail: error }));
    throw error;
  }
  return data;
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body);
export const put = (path, body) => api('PUT', path, body);
export const del = (path) => api('DELETE', path);

// A form's save: PUT <collection>/<id> (an edit; `body` carries the version it read) or POST
// <collection> (a new one), `button` disabled meanwhile, then the stored one's page,
// #/<page>/<its id>. A 409 naming `version` (someone changed it since it was read) goes to
// `stale(e)`, any other failure to `failed(e)`.
export async function saveForm({ collection, page, id, body, button, stale, failed }) {
  button.disabled = true;
  try {
    const stored = id ? await put(`${collection}/${id}`, body) : await post(collection, body);
    location.hash = `#/${page}/${stored.id}`;
  } catch (e) {
    if (e.status === 409 && e.field === 'version') stale(e);
    else failed(e);
  } finally {
    button.disabled = false;
  }
}

// "/api/v1/fires?job_id=3" from a path and an object of parameters (empty ones left out).
export function withQuery(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}
