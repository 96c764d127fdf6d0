// Reads every pod's log into one MergedLog. The launcher's log (every rank's output, forwarded by
// mpirun) is followed live. The node pods' logs (their sshd lines) are read whole, once when first seen
// and again when they end: a browser gives the page 6 HTTP/1.1 connections to the server and the
// watches hold some, so following every pod would starve the rest of the page.
// Pods are told apart by uid: a suspended and resumed job gets new pods under the same names.
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { CORE, RANKS_HEADER, streamLines } from '../api.js';
import { MergedLog } from './logStore.js';
import { container, roleOf, terminated } from './model.js';

const HEADERS = { [RANKS_HEADER]: 'true' };
const RETRY_MS = 1000;

const logPath = (namespace, pod, follow) => `${CORE}/namespaces/${namespace}/pods/${pod}/log?timestamps=true${follow ? '&follow=true' : ''}`;
const MAX_FOLLOWED = 2; // of the connections a browser allows, what the logs may hold
const gone = (pod) => !pod || Boolean(pod.metadata.deletionTimestamp);
// a pod its job's suspension stopped is deleted next, its log with it: reading it then would only 404
const suspended = (pod) => { const c = container(pod); return Boolean(c && c.state.terminated && c.state.terminated.reason === 'Suspended'); };

/**
 * {log, version, states: {uid: {name, state: 'live'|'read'|'ended'|'error'}}, reread()}. Pods of
 * `followRole` (launcher; node for a job without one, where each node prints its own output) are followed.
 */
export function useMergedLogs(namespace, pods, followRole) {
  const log = useMemo(() => new MergedLog(), []);
  const [version, setVersion] = useState(0);
  const [states, setStates] = useState({});
  const readers = useRef(new Map()); // uid → {uid, name, controller, ended, mode, received}
  const latest = useRef(pods);
  latest.current = pods;

  useEffect(() => log.subscribe(setVersion), [log]);
  useEffect(() => () => { readers.current.forEach((r) => r.controller.abort()); }, []);

  const setState = useCallback((r, state) => setStates((old) => (
    old[r.uid] && old[r.uid].state === state ? old : { ...old, [r.uid]: { name: r.name, state } })), []);
  const current = (r) => latest.current.find((p) => p.metadata.uid === r.uid);

  const readOnce = useCallback(async (r) => {
    const lines = [];
    try {
      await streamLines(logPath(namespace, r.name, false), (l) => lines.push(l), { signal: r.controller.signal, headers: HEADERS });
      log.replace(r.uid, r.name, lines);
      setState(r, r.ended ? 'ended' : 'read');
    } catch (err) {
      if (!r.controller.signal.aborted) setState(r, err.code === 404 ? 'ended' : 'error'); // 404: deleted, lines kept
    }
  }, [namespace, log, setState]);

  const follow = useCallback(async (r) => {
    let skip = r.received; // a stream starts at the log's first line: skip what an earlier one brought
    setState(r, 'live');
    let failed = null;
    try {
      await streamLines(logPath(namespace, r.name, true), (l) => {
        if (!l) return;
        if (skip > 0) { skip -= 1; return; }
        r.received += 1;
        log.add(r.uid, r.name, l);
      }, { signal: r.controller.signal, headers: HEADERS });
    } catch (err) {
      failed = err;
    }
    if (r.controller.signal.aborted) return;
    const over = () => {
      const pod = current(r);
      return (failed && failed.code === 404) || gone(pod) || terminated(pod);
    };
    if (over()) { r.ended = true; setState(r, 'ended'); return; }
    if (failed) setState(r, 'error');
    setTimeout(() => { // it stopped before its container did (a dropped connection): go on where it was
      if (r.controller.signal.aborted) return;
      if (over()) { r.ended = true; setState(r, 'ended'); } else follow(r);
    }, RETRY_MS);
  }, [namespace, log, setState]);

  useEffect(() => {
    pods.forEach((pod) => {
      const { uid, name } = pod.metadata;
      const ended = terminated(pod);
      let r = readers.current.get(uid);
      if (!r) {
        const followed = [...readers.current.values()].filter((x) => x.mode === 'follow' && !x.ended).length;
        const live = !ended && roleOf(pod) === followRole && followed < MAX_FOLLOWED;
        r = { uid, name, controller: new AbortController(), ended, mode: live ? 'follow' : 'read', received: 0 };
        readers.current.set(uid, r);
        if (live) follow(r); else readOnce(r);
      } else if (ended && !r.ended) {
        r.ended = true;
        if (r.mode === 'read' && !suspended(pod)) readOnce(r); // its last lines
      }
    });
  }, [pods, followRole, follow, readOnce]);

  const reread = useCallback(() => {
    readers.current.forEach((r) => { if (r.mode === 'read' && !gone(current(r))) readOnce(r); });
  }, [readOnce]);

  return { log, version, states, reread };
}
