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

/** The logged-in user ({user, groups, csrfToken}), or null when there is no session. */
export async function session() {
  const response = await fetch(`${DASHBOARD}/session`, { cache: 'no-store' });
  if (response.status === 401) return null;
  const body = await answer(response);
  csrfToken = body.csrfToken;
  return body;
}

/** Exchanges a one-time login ticket (from `mpijob dashboard`) for a session cookie. */
export async function login(ticket) {
  const body = await answer(await fetch(`${DASHBOARD}/session`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ticket }),
  }));
  csrfToken = body.csrfToken;
  return body;
}

export async function logout() {
  await send('DELETE', `${DASHBOARD}/session`);
  csrfToken = '';
}

export async function get(path, { signal, headers } = {}) {
  return answer(await fetch(path, { signal, headers: { Accept: 'application/json', ...headers }, cache: 'no-store' }));
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
  const response = await fetch(path, { signal, headers, cache: 'no-store' });
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

/**
 * List `path`, then follow it with a watch from the list's resourceVersion, re-listing when the watch
 * ends or the version expired (410). `onChange(items)` gets the whole current list (a Map by uid) after
 * the list and after every event. Returns a function that stops it.
 */
export function listAndWatch(path, onChange, onError = () => {}) {
  const controller = new AbortController();
  const items = new Map();
  let stopped = false;
  const sep = path.includes('?') ? '&' : '?';
  (async () => {
    let failures = 0;
    while (!stopped) {
      try {
        const list = await get(path, { signal: controller.signal });
        items.clear();
        for (const o of list.items || []) items.set(o.metadata.uid, o);
        onChange(items);
        onError(null);
        let version = list.metadata.resourceVersion;
        await streamLines(`${path}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${version}`, (line) => {
          if (!line.trim()) return;
          const event = JSON.parse(line);
          const o = event.object;
          if (event.type === 'ERROR') throw new ApiError(o.code || 500, o);
          if (o && o.metadata && o.metadata.resourceVersion) version = o.metadata.resourceVersion;
          if (event.type === 'BOOKMARK') return;
          if (event.type === 'DELETED') items.delete(o.metadata.uid);
          else items.set(o.metadata.uid, o);
          onChange(items);
        }, { signal: controller.signal });
        failures = 0;
      } catch (err) {
        if (stopped) return;
        failures += 1;
        onError(err);
        if (err instanceof ApiError && (err.code === 401 || err.code === 403)) return;
        await new Promise((r) => setTimeout(r, Math.min(5000, 250 * 2 ** failures)));
      }
    }
  })();
  return () => { stopped = true; controller.abort(); };
}

const reviews = new Map();

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

/** The namespaces whose TrainJobs the user may list: {all: bool, namespaces: [name]}. */
export const visibleNamespaces = () => get(`${DASHBOARD}/namespaces`);

/** Per-pod CPU, memory and GPU use of a TrainJob over its life: {pods: [{name, points: [...]}]}. */
export const usage = (namespace, name) => get(`${DASHBOARD}/namespaces/${namespace}/trainjobs/${name}/usage`);

export const trainjobsPath = (namespace) => (namespace ? `${TRAINER}/namespaces/${namespace}/trainjobs` : `${TRAINER}/trainjobs`);
export const trainjobPath = (namespace, name) => `${trainjobsPath(namespace)}/${name}`;
