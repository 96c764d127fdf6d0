// Reading the job records: not watchable (the server answers a list), so they are read when the range
// changes and again whenever a TrainJob the user can see changes state (that is when records change).
import { useEffect, useState } from 'react';
import {
  canI, get, MPIJOB, visibleNamespaces,
} from '../api.js';
import { FORBIDDEN } from './data.js';

const enc = encodeURIComponent;

async function readAll(since, signal) {
  const query = `since=${enc(since)}&limit=0`;
  const attrs = { verb: 'list', group: 'mpijob.io', resource: 'jobrecords' };
  if (await canI(attrs)) return { items: (await get(`${MPIJOB}/jobrecords?${query}`, { signal })).items || [], scope: 'cluster' };
  // Not allowed across namespaces: each namespace the user may see and read records of.
  const { namespaces } = await visibleNamespaces();
  const allowed = await Promise.all(namespaces.map((namespace) => canI({ ...attrs, namespace })));
  const readable = namespaces.filter((_, i) => allowed[i]);
  if (!readable.length) throw FORBIDDEN;
  const lists = await Promise.all(readable.map((ns) => get(`${MPIJOB}/namespaces/${enc(ns)}/jobrecords?${query}`, { signal })));
  return { items: lists.flatMap((l) => l.items || []), scope: 'namespaces', namespaces: readable };
}

/** {items, loaded, error, scope} of the records since `since`; read again when `trigger` changes. */
export function useRecords(since, trigger) {
  const [state, setState] = useState({ items: [], loaded: false, error: null, scope: '' });
  useEffect(() => {
    const controller = new AbortController();
    readAll(since, controller.signal)
      .then((r) => setState({ ...r, loaded: true, error: null }))
      .catch((error) => { if (error.name !== 'AbortError') setState((s) => ({ ...s, loaded: true, error })); });
    return () => controller.abort();
  }, [since, trigger]);
  return state;
}
