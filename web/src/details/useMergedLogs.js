// Reads every pod's log into one MergedLog, each followed live until its container ends: the launcher's
// (every rank's output, forwarded by mpirun) and the nodes' (sshd's lines, or a node's own program), all
// over one request (PodLogs).
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { MergedLog } from './logStore.js';
import { PodLogs } from './podLogs.js';

/** {log, version, states: {uid: {name, state: 'live'|'ended'|'error'}}}. */
export function useMergedLogs(namespace, pods) {
  const log = useMemo(() => new MergedLog(), []);
  const [version, setVersion] = useState(0);
  const [states, setStates] = useState({});
  const follower = useRef(null);
  const latest = useRef(pods);
  latest.current = pods;
  const setState = useCallback((p, state) => setStates((old) => (
    old[p.uid] && old[p.uid].state === state ? old : { ...old, [p.uid]: { name: p.name, state } })), []);

  useEffect(() => log.subscribe(setVersion), [log]);
  useEffect(() => { // made and closed by an effect: a follower outlives no mount
    const f = new PodLogs(namespace, log, setState);
    follower.current = f;
    f.add(latest.current);
    return () => { f.close(); follower.current = null; };
  }, [namespace, log, setState]);
  useEffect(() => { if (follower.current) follower.current.add(pods); }, [pods]);

  return { log, version, states };
}
