// The dashboard's only way to the server: the Kubernetes API of the local cluster, called as the
// logged-in user (the session cookie), so RBAC decides every read and write exactly as for kubectl.
// Mutations carry the session's CSRF token; lists are followed with watches, never polled.

export const TRAINER = '/apis/trainer.kubeflow.org/v1alpha1';
export const KUEUE = '/apis/kueue.x-k8s.io/v1beta2';
export const VISIBILITY = '/apis/visibility.kueue.x-k8s.io/v1beta2';
export const MPIJOB = '/apis/mpijob.io/v1alpha1';
export const CORE = '/api/v1';
export const DASHBOARD = '/dashboard/api';
export const RANKS_HEADER = 'X-Mpijob-Log-Ranks'; // the server prefixes each launcher line with its MPI rank

let csrfToken = '';
const reviews = new Map(); // SelfSubjectAccessReview answers, for the page's life (canI)
let namespaces = null; // the promise of visibleNamespaces(), asked once
let page = new AbortController(); // every request of this page, aborted at once by closeConnections()

/** Ends every request, watch and followed log of the page (it is leaving, see main.jsx). */
export function closeConnections() {
  page.abort();
  page = new AbortController();
}

const withPage = (signal) => (signal ? AbortSignal.any([signal, page.signal]) : page.signal);

/** An error the server answered with: its HTTP code, and the Kubernetes Status (reason, causes). */
export class ApiError extends Error {
  constructor(code, status) {
    super((status && status.message) || `HTTP ${code}`);
    this.code = code;
    this.status = status || {};
  }
  get reason() { return this.status.reason || ''; }
  /** Field errors as kube-apiserver reports them: [{field, message, reason}]. */
  get causes() { return (this.status.details && this.status.details.causes) || []; }
}

async function answer(response) {
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = { message: text }; }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

function started(body) {
  csrfToken = body.csrfToken;
  namespaces = Promise.resolve(body.namespaces); // the server told them with the session: no round trip
  return body;
}

/** The logged-in user ({user, groups, csrfToken, namespaces}), or null when there is no session. */
export async function session() {
  const response = await fetch(`${DASHBOARD}/session`, { cache: 'no-store' });
  if (response.status === 401) return null;
  return started(await answer(response));
}

/** Exchanges a one-time login ticket (from `mpijob dashboard`) for a session cookie. */
export async function login(ticket) {
  reviews.clear(); // another user's answers are not this one's
  namespaces = null;
  return started(await answer(await fetch(`${DASHBOARD}/session`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ticket }),
  })));
}

export async function logout() {
  await send('DELETE', `${DASHBOARD}/session`);
  csrfToken = '';
}

const prefetched = new Map(); // path → its answer, asked while the page that will want it was loading

/** Ask for `path` now; the first `get(path)` takes the answer instead of asking again. */
export function prefetch(path) {
  if (!prefetched.has(path)) prefetched.set(path, get(path).catch(() => null));
}

export async function get(path, { signal, headers } = {}) {
  if (prefetched.has(path) && !headers) {
    const early = await prefetched.get(path);
    prefetched.delete(path);
    if (early) return early;
  }
  return answer(await fetch(path, { signal: withPage(signal), headers: { Accept: 'application/json', ...headers }, cache: 'no-store' }));
}

/** A write (POST, PUT, PATCH, DELETE); `dryRun` asks the server to validate and admit without storing. */
export async function send(method, path, body, { dryRun = false, contentType = 'application/json' } = {}) {
  const url = dryRun ? `${path}${path.includes('?') ? '&' : '?'}dryRun=All` : path;
  const headers = { Accept: 'application/json', 'X-CSRF-Token': csrfToken };
  if (body !== undefined) headers['Content-Type'] = contentType;
  return answer(await fetch(url, {
    method, headers, body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)),
  }));
}

export const create = (path, obj, opts) => send('POST', path, obj, opts);
export const remove = (path) => send('DELETE', path);
export const mergePatch = (path, patch) => send('PATCH', path, patch, { contentType: 'application/merge-patch+json' });

/** Lines of a streamed response, as they arrive; `onLine(text)` for each. Resolves when the stream ends. */
export async function streamLines(path, onLine, { signal, headers } = {}) {
  const response = await fetch(path, { signal: withPage(signal), headers, cache: 'no-store' });
  if (!response.ok) await answer(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      onLine(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
    }
  }
  if (buffered) onLine(buffered);
}

// -- watches: every list the page follows rides one connection (GET /dashboard/api/watch) --------------
// A browser opens 6 HTTP/1.1 connections to a server and a watch holds one for its life: a page that
// follows eight lists would stall itself. So the watches of the page are sent to the server as one set,
// again whenever the set changes (a page mounts or unmounts), each resuming at its last version.

const subscriptions = new Set();
let hub = null; // the AbortController of the current connection
let hubTimer = null;

function reconnectSoon() {
  clearTimeout(hubTimer);
  hubTimer = setTimeout(connectHub, 20); // the watches a page starts together share the first connection
}

async function connectHub() {
  if (hub) hub.abort();
  const subs = [...subscriptions];
  if (!subs.length) { hub = null; return; }
  const controller = new AbortController();
  hub = controller;
  const query = subs.map((s) => `path=${encodeURIComponent(`${s.path}${s.path.includes('?') ? '&' : '?'}resourceVersion=${s.version}`)}`);
  try {
    await streamLines(`${DASHBOARD}/watch?${query.join('&')}`, (line) => {
      if (!line.trim()) return;
      const event = JSON.parse(line);
      const sub = subs[event.stream];
      if (!sub || !subscriptions.has(sub)) return;
      if (event.type === 'ERROR') {
        subscriptions.delete(sub);
        sub.onFail(new ApiError(event.object.code || 500, event.object));
        return;
      }
      const meta = event.object && event.object.metadata;
      if (meta && meta.resourceVersion) sub.version = meta.resourceVersion;
      sub.onEvent(event);
    }, { signal: controller.signal });
    if (hub === controller) reconnectSoon(); // the server ended it (its timeout): resume every watch
  } catch (err) {
    if (controller.signal.aborted) return; // replaced by a newer set
    for (const sub of subs) {
      if (subscriptions.delete(sub)) sub.onFail(err); // each re-lists, then comes back
    }
  }
}

function subscribe(path, version, onEvent, onFail) {
  const sub = { path, version, onEvent, onFail };
  subscriptions.add(sub);
  reconnectSoon();
  return () => { if (subscriptions.delete(sub)) reconnectSoon(); };
}

/**
 * List `path`, then follow it from the list's resourceVersion, re-listing when its watch fails or the
 * version expired (410). `onChange(items)` gets the whole current list (a Map by uid) after the list and
 * after every event. Returns a function that stops it.
 */
export function listAndWatch(path, onChange, onError = () => {}) {
  const controller = new AbortController();
  const items = new Map();
  let stopped = false;
  let unsubscribe = null;
  let failures = 0;
  const retry = (err) => {
    unsubscribe = null;
    if (stopped) return;
    failures += 1;
    onError(err);
    if (err instanceof ApiError && (err.code === 401 || err.code === 403)) return;
    setTimeout(relist, Math.min(5000, 250 * 2 ** failures));
  };
  async function relist() {
    if (stopped) return;
    let list;
    try {
      list = await get(path, { signal: controller.signal });
    } catch (err) {
      retry(err);
      return;
    }
    if (stopped) return;
    items.clear();
    for (const o of list.items || []) items.set(o.metadata.uid, o);
    onChange(items);
    onError(null);
    failures = 0;
    unsubscribe = subscribe(path, list.metadata.resourceVersion, (event) => {
      const o = event.object;
      if (event.type === 'BOOKMARK') return;
      if (event.type === 'DELETED') items.delete(o.metadata.uid);
      else items.set(o.metadata.uid, o);
      onChange(items);
    }, retry);
  }
  relist();
  return () => {
    stopped = true;
    controller.abort();
    if (unsubscribe) unsubscribe();
  };
}

/** Whether the user may `verb` the resource (a SelfSubjectAccessReview, remembered for the page's life). */
export function canI({ verb, resource, group = '', namespace = '', subresource = '', name = '' }) {
  const key = [verb, group, resource, subresource, namespace, name].join('/');
  if (!reviews.has(key)) {
    const review = {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { verb, group, resource, subresource, namespace, name } },
    };
    reviews.set(key, send('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', review)
      .then((r) => Boolean(r.status && r.status.allowed))
      .catch(() => false));
  }
  return reviews.get(key);
}

/** The namespaces whose TrainJobs the user may list: {all: bool, namespaces: [name]}, asked once a page. */
export function visibleNamespaces() {
  if (!namespaces) namespaces = get(`${DASHBOARD}/namespaces`).catch((err) => { namespaces = null; throw err; });
  return namespaces;
}

/** Per-pod CPU, memory and GPU use of a TrainJob over its life: {pods: [{name, points: [...]}]}. */
export const usage = (namespace, name) => get(`${DASHBOARD}/namespaces/${namespace}/trainjobs/${name}/usage`);

export const trainjobsPath = (namespace) => (namespace ? `${TRAINER}/namespaces/${namespace}/trainjobs` : `${TRAINER}/trainjobs`);
export const trainjobPath = (namespace, name) => `${trainjobsPath(namespace)}/${name}`;
