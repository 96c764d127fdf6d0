// Reading hooks of the admin pages, over api.js. Each read is preceded by an access review (canI,
// remembered for the page's life), so what RBAC refuses is never requested: no failed requests in the
// console, and a clear "you may not see X" instead. A namespaced resource falls back from the
// cluster-wide list to one list per namespace the user may read.
import { useEffect, useState } from 'react';
import { canI, get, visibleNamespaces } from '../api.js';
import { useCanI, useListsWatch, useListWatch } from '../hooks.js';

export const isForbidden = (error) => Boolean(error && error.code === 403);
export const FORBIDDEN = Object.freeze({ code: 403, message: 'forbidden' });

/** `resource` of API `group` as the access review wants them: 'workloads', 'kueue.x-k8s.io'. */
export const access = (resource, group = '') => ({ resource, group });

/** A cluster-wide list, watched when the user may list it: {items, loaded, error (FORBIDDEN when not)}. */
export function useGuardedList(path, { resource, group, namespace = '' }) {
  const allowed = useCanI({ verb: 'list', resource, group, namespace });
  const list = useListWatch(allowed ? path : null);
  if (allowed === null) return { items: [], loaded: false, error: null };
  if (!allowed) return { items: [], loaded: true, error: FORBIDDEN };
  return list;
}

/** The namespaces the user may see ({all, namespaces}); null until the server answered. */
export function useVisibleNamespaces(enabled = true) {
  const [state, setState] = useState(null);
  useEffect(() => {
    if (!enabled) return undefined;
    let live = true;
    visibleNamespaces().then((r) => live && setState(r)).catch(() => live && setState({ all: false, namespaces: [] }));
    return () => { live = false; };
  }, [enabled]);
  return state;
}

/** Of the namespaces the user sees, those where it may `list` the resource; null until known. */
function useListableNamespaces(enabled, { resource, group }) {
  const visible = useVisibleNamespaces(enabled);
  const [allowed, setAllowed] = useState(null);
  const key = visible ? visible.namespaces.join(',') : null;
  useEffect(() => {
    if (!enabled || !visible) return undefined;
    let live = true;
    Promise.all(visible.namespaces.map((namespace) => canI({ verb: 'list', resource, group, namespace })))
      .then((ok) => live && setAllowed(visible.namespaces.filter((_, i) => ok[i])));
    return () => { live = false; };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- key stands for visible's names: a new object with the same names asks nothing again
  }, [enabled, key, resource, group]);
  return allowed;
}

/**
 * A namespaced resource, live: the cluster-wide list when the user may read it, else one list per
 * namespace where they may. {items, loaded, error, forbidden (nowhere readable), scope ('cluster'|'namespaces')}.
 */
export function useScopedList(clusterPath, namespacedPath, attrs) {
  const all = useCanI({ verb: 'list', ...attrs });
  const namespaces = useListableNamespaces(all === false, attrs);
  const cluster = useListWatch(all ? clusterPath : null);
  const per = useListsWatch(namespaces ? namespaces.map(namespacedPath) : []);
  if (all === null) return { items: [], loaded: false, error: null, forbidden: false, scope: '' };
  if (all) return { ...cluster, forbidden: false, scope: 'cluster' };
  if (namespaces === null) return { items: [], loaded: false, error: null, forbidden: false, scope: 'namespaces' };
  if (!namespaces.length) return { items: [], loaded: true, error: FORBIDDEN, forbidden: true, scope: 'namespaces' };
  return { ...per, forbidden: false, scope: 'namespaces' };
}

/** GET `path` again whenever `trigger` changes, if the access review `attrs` allows it: {data, error, loaded}. */
export function useFetch(path, trigger, attrs) {
  const allowed = useCanI(attrs);
  const [state, setState] = useState({ data: null, error: null, loaded: false });
  useEffect(() => {
    if (allowed === null) return undefined;
    if (!allowed) { setState({ data: null, error: FORBIDDEN, loaded: true }); return undefined; }
    const controller = new AbortController();
    get(path, { signal: controller.signal })
      .then((data) => setState({ data, error: null, loaded: true }))
      .catch((error) => { if (error.name !== 'AbortError') setState((s) => ({ ...s, error, loaded: true })); });
    return () => controller.abort();
  }, [path, trigger, allowed]);
  return state;
}

/** GET `path` now and every `ms` while the page is open, if `attrs` allows (the metrics API cannot be watched). */
export function usePoll(path, ms, attrs) {
  const allowed = useCanI(attrs);
  const [state, setState] = useState({ data: null, error: null, loaded: false });
  useEffect(() => {
    if (allowed === null) return undefined;
    if (!allowed) { setState({ data: null, error: FORBIDDEN, loaded: true }); return undefined; }
    let live = true;
    let timer = null;
    const controller = new AbortController();
    const tick = async () => {
      try {
        const data = await get(path, { signal: controller.signal });
        if (live) setState({ data, error: null, loaded: true });
      } catch (error) {
        if (!live || error.name === 'AbortError') return;
        setState((s) => ({ ...s, error, loaded: true }));
        if (isForbidden(error) || error.code === 404) return; // asking again will not change the answer
      }
      if (live) timer = setTimeout(tick, ms);
    };
    tick();
    return () => { live = false; clearTimeout(timer); controller.abort(); };
  }, [path, ms, allowed]);
  return state;
}
