// Follows every pod's log of a job live, all over one request: GET /dashboard/api/namespaces/NS/logs
// (server/routes/logfanin.py). A browser gives the page 6 HTTP/1.1 connections to the server, the watches
// hold one, and a job may have 101 pods: one request each would starve the page. A pod that appears
// joins by sending the request again with every pod still followed, each resuming after the lines it
// already brought (`pod=NAME:LINES`), so nothing is fetched twice. Kept outside React, like MergedLog.
import { ApiError, DASHBOARD, RANKS_HEADER, streamLines } from '../api.js';

export const MAX_PODS = 128; // pods one request may follow: the server's bound (logfanin.MAX_PODS)
const JOIN_MS = 100; // pods that a job starts together join one request
const RETRY_MS = 1000; // after a request ended before its pods did (a dropped connection, a server restart)
const HEADERS = { [RANKS_HEADER]: 'true' };

export class PodLogs {
  /**
   * Lines go to `log` (a MergedLog); `onState(pod, state)` hears each pod's state, 'live', 'ended' (its
   * log is complete, or its pod was deleted: its lines stay) or 'error' (not readable: the server said
   * why). `stream` is api.js's streamLines (a test gives its own).
   */
  constructor(namespace, log, onState, stream = streamLines) {
    this.namespace = namespace;
    this.log = log;
    this.onState = onState;
    this.stream = stream;
    this.pods = new Map(); // uid → {uid, name, received, done}: a resumed job's pods come back under the same names
    this.requests = [];
    this.timer = null;
    this.closed = false;
  }

  /** Follow these pods too (Kubernetes Pods); those followed already go on as they are. */
  add(pods) {
    let added = false;
    for (const { metadata: { uid, name } } of pods) {
      if (!this.pods.has(uid)) {
        this.pods.set(uid, { uid, name, received: 0, done: false });
        added = true;
      }
    }
    if (added) this.soon(JOIN_MS);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.requests.forEach((c) => c.abort());
    this.requests = [];
  }

  soon(ms) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), ms);
  }

  /** One request per MAX_PODS pods still followed, in place of those open. */
  connect() {
    this.timer = null;
    this.requests.forEach((c) => c.abort());
    this.requests = [];
    if (this.closed) return;
    const open = [...this.pods.values()].filter((p) => !p.done);
    for (let i = 0; i < open.length; i += MAX_PODS) this.run(open.slice(i, i + MAX_PODS));
  }

  async run(batch) {
    const controller = new AbortController();
    this.requests.push(controller);
    const query = batch.map((p) => `&pod=${encodeURIComponent(p.received ? `${p.name}:${p.received}` : p.name)}`).join('');
    batch.forEach((p) => this.onState(p, 'live'));
    try {
      await this.stream(`${DASHBOARD}/namespaces/${encodeURIComponent(this.namespace)}/logs?timestamps=true${query}`,
        (line) => this.event(batch, line), { signal: controller.signal, headers: HEADERS });
    } catch (err) {
      if (controller.signal.aborted) return;
      if (err instanceof ApiError && err.code < 500) { // the request itself was refused (its session ended): as said
        batch.forEach((p) => { p.done = true; this.onState(p, 'error'); });
        return;
      }
    }
    if (!controller.signal.aborted && batch.some((p) => !p.done)) this.soon(RETRY_MS); // go on where each was
  }

  event(batch, line) {
    if (!line) return;
    const e = JSON.parse(line);
    const p = batch[e.stream];
    if (!p || p.done) return;
    if (e.type === 'LINES') {
      p.received += e.lines.length;
      this.log.addAll(p.uid, p.name, e.lines);
      return;
    }
    p.done = true; // END, or an ERROR: a 404 is a pod deleted meanwhile, whose lines stay
    this.onState(p, e.type === 'END' || (e.object && e.object.code === 404) ? 'ended' : 'error');
  }
}
