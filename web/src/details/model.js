// What the details page reads from a TrainJob's objects (pods, Workload, hostfile): pure functions, no I/O.
import { DOCS, GPU, LABEL_RJOB, condition } from '../model.js';

export const LABEL_INDEX = 'batch.kubernetes.io/job-completion-index';

// Copied from mpijob/api/trainer/failures.py ANCHORS: each failure class's section of docs/troubleshooting.md.
export const FAILURE_ANCHORS = {
  SSHAuthenticationRefused: 'ssh-authentication-refused',
  HostNotResolvable: 'host-name-not-resolvable',
  SSHDNotReady: 'sshd-not-ready',
  OOMKilled: 'oom-killed',
  RankKilledBySignal: 'rank-killed-by-a-signal',
  CommandNotFound: 'command-not-found',
  NotEnoughSlots: 'not-enough-slots',
  MPIDaemonLost: 'open-mpi-daemon-lost',
  NCCLError: 'nccl-error-or-timeout',
  OneSidedUnavailable: 'one-sided-communication-unavailable',
  ProgramFailed: 'program-failed',
  MPINotInstalled: 'mpi-implementation-not-installed',
  WireUpTimeout: 'wire-up-timeout',
  Stalled: 'stalled',
};

export const roleOf = (pod) => (pod.metadata.labels || {})[LABEL_RJOB] || '';
export const indexOf = (pod) => Number((pod.metadata.labels || {})[LABEL_INDEX] || 0);
export const container = (pod) => ((pod.status && pod.status.containerStatuses) || [])[0] || null;
export const terminated = (pod) => {
  const c = container(pod);
  return Boolean((c && c.state && c.state.terminated) || ['Succeeded', 'Failed'].includes(pod.status && pod.status.phase));
};
export const hostOf = (pod) => (pod.spec.hostname ? `${pod.spec.hostname}${pod.spec.subdomain ? `.${pod.spec.subdomain}` : ''}` : '');

/** Launcher first, then nodes by completion index: the order of MPI hosts and of the Workers table. */
export function sortPods(pods) {
  const rank = (p) => (roleOf(p) === 'launcher' ? 0 : 1);
  return [...pods].sort((a, b) => rank(a) - rank(b) || indexOf(a) - indexOf(b)
    || a.metadata.name.localeCompare(b.metadata.name));
}

/** The STATUS column of `kubectl get pods`. */
export function podStatus(pod) {
  if (pod.metadata.deletionTimestamp) return 'Terminating';
  const c = container(pod);
  const state = (c && c.state) || {};
  if (state.waiting && state.waiting.reason) return state.waiting.reason;
  if (state.terminated) {
    const t = state.terminated;
    return t.reason || (t.signal ? `Signal:${t.signal}` : `ExitCode:${t.exitCode}`);
  }
  if (state.running) return 'Running';
  return (pod.status && (pod.status.reason || pod.status.phase)) || 'Pending';
}

/** What the pod's container holds: cpu, memory, GPUs (limits, else requests). */
export function podResources(pod) {
  const r = (pod.spec.containers[0] && pod.spec.containers[0].resources) || {};
  const pick = (k) => (r.limits && r.limits[k]) || (r.requests && r.requests[k]) || '';
  return { cpu: pick('cpu'), memory: pick('memory'), gpus: pick(GPU) };
}

export function procsPerNode(job, runtime) {
  const mpi = runtime && runtime.spec.mlPolicy;
  const v = (job.spec.trainer && job.spec.trainer.numProcPerNode)
    ?? (mpi && mpi.numProcPerNode) ?? (mpi && mpi.mpi && mpi.mpi.numProcPerNode) ?? 1;
  return Number(v) || 1;
}

/** `host slots=N` lines of the `NAME-mpi-hostfile` ConfigMap: [{host, slots}]. */
export function parseHostfile(text) {
  return (text || '').split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean).map((l) => {
    const [host, ...opts] = l.split(/\s+/);
    const slots = opts.map((o) => /^slots=(\d+)$/.exec(o)).find(Boolean);
    return { host, slots: slots ? Number(slots[1]) : 1 };
  });
}

/**
 * pod name → {first, last} MPI ranks it holds. mpirun maps ranks by slot with its own host first when
 * that host is in the hostfile (the launcher, with runLauncherAsNode), then the hostfile's order — what
 * Open MPI does for `mpirun` without -np/--map-by. Without the hostfile: numProcPerNode per host.
 */
export function rankRanges(pods, hostfile, perNode, launcherRuns) {
  const sorted = sortPods(pods);
  const launcher = sorted.find((p) => roleOf(p) === 'launcher');
  let hosts;
  if (hostfile && hostfile.length) {
    const launcherHost = launcher && hostOf(launcher);
    const short = (h) => h.split('.')[0];
    const own = hostfile.filter((h) => launcher && (h.host === launcherHost || short(h.host) === launcher.spec.hostname));
    hosts = [...own, ...hostfile.filter((h) => !own.includes(h))].map((h) => ({
      ...h, pod: sorted.find((p) => hostOf(p) === h.host || p.spec.hostname === short(h.host)),
    }));
  } else {
    hosts = sorted.filter((p) => roleOf(p) !== 'launcher' || launcherRuns).map((pod) => ({ pod, slots: perNode }));
  }
  const out = new Map();
  let next = 0;
  for (const h of hosts) {
    if (h.pod) out.set(h.pod.metadata.name, { first: next, last: next + h.slots - 1 });
    next += h.slots;
  }
  return out;
}

/**
 * A Failed condition's message as mpijob writes it (`Class: what happened. Fix: remedy See guide#anchor`),
 * split into its parts; `classified` false for any other message (shown as it is).
 */
export function parseFailure(message) {
  const m = /^(\w+): ([\s\S]*?)(?:\.\s+Fix:\s+([\s\S]*?))?(?:\s*See \S*#([\w-]+))?\s*$/.exec(message || '');
  if (!m || !FAILURE_ANCHORS[m[1]]) return { classified: false, message: message || '' };
  const summary = m[2];
  const pod = /\bpod (\S+?)(?=[\s,;)]|$)/.exec(summary);
  const rank = /\brank (\d+)/.exec(summary);
  const host = /\(host (\S+?)\)/.exec(summary);
  const anchor = m[4] || FAILURE_ANCHORS[m[1]];
  return {
    classified: true, reason: m[1], summary, fix: m[3] || '', pod: pod ? pod[1] : '', rank: rank ? rank[1] : '',
    host: host ? host[1] : '', anchor, guide: `${DOCS}/troubleshooting.md#${anchor}`,
  };
}

const transition = (obj, type) => { const c = obj && condition(obj, type); return c ? c.lastTransitionTime : null; };

/**
 * When the job was created, admitted (quota reserved), its launcher started, and it finished. Without a
 * readable Workload, admission is when its first pod was made (pods are made on admission).
 */
export function phaseTimes(job, workload, pods) {
  const launcher = pods.find((p) => roleOf(p) === 'launcher');
  const firstPod = pods.map((p) => p.metadata.creationTimestamp).sort()[0] || null;
  const finished = condition(job, 'Complete') || condition(job, 'Failed');
  const c = launcher && container(launcher);
  const state = (c && c.state) || {};
  return {
    created: job.metadata.creationTimestamp,
    admitted: transition(workload, 'Admitted') || transition(workload, 'QuotaReserved') || firstPod,
    running: (state.running && state.running.startedAt) || (state.terminated && state.terminated.startedAt) || null,
    finished: finished ? finished.lastTransitionTime : null,
  };
}

/** The Workload of a job: owned by it (by uid), the newest if several. */
export function workloadOf(job, workloads) {
  return workloads.filter((w) => (w.metadata.ownerReferences || []).some((o) => o.uid === job.metadata.uid))
    .sort((a, b) => b.metadata.creationTimestamp.localeCompare(a.metadata.creationTimestamp))[0] || null;
}

/** The kind/name of every object whose Events belong on this page. */
export function ownsEvent(event, job, podNames, workloadNames) {
  const o = event.involvedObject || {};
  if (o.kind === 'TrainJob') return o.uid ? o.uid === job.metadata.uid : o.name === job.metadata.name; // not a namesake's
  if (o.kind === 'Pod') return podNames.has(o.name) || o.name.startsWith(`${job.metadata.name}-launcher-`) || o.name.startsWith(`${job.metadata.name}-node-`);
  if (o.kind === 'Workload') return workloadNames.has(o.name);
  return false;
}

/** 1.5 GiB, 300 MiB, 12 KiB: bytes in binary units. */
export function humanBytes(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return `${v >= 100 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

