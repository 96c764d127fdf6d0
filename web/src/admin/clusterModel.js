// What #/cluster computes: the machine's capacity, what pods hold of it (allocation), what they use now,
// who holds it (by namespace, by the user who created the job) and the preemptions Kueue made.
import { ANNOTATION_REQUESTER, GPU, LABEL_JOBSET, queueOf } from '../model.js';
import { addInto, parseQuantity, podRequests } from './quantity.js';
import { jobOf } from './queueModel.js';

const ANNOTATION_GPUS = 'mpijob.io/gpus';

/** Sum of the Nodes' status.capacity and status.allocatable, per resource. */
export function nodeTotals(nodes) {
  const capacity = {};
  const allocatable = {};
  for (const n of nodes) {
    const s = n.status || {};
    for (const [k, v] of Object.entries(s.capacity || {})) capacity[k] = (capacity[k] || 0) + parseQuantity(v);
    for (const [k, v] of Object.entries(s.allocatable || s.capacity || {})) allocatable[k] = (allocatable[k] || 0) + parseQuantity(v);
  }
  return { capacity, allocatable };
}

/** Pods that hold resources: those not finished (kube's scheduler counts the same). */
export const holdsResources = (pod) => {
  const phase = pod.status && pod.status.phase;
  return phase !== 'Succeeded' && phase !== 'Failed';
};

/** What the holding pods request, per resource. */
export function allocated(pods) {
  const total = {};
  for (const p of pods) if (holdsResources(p)) addInto(total, podRequests(p));
  return total;
}

/** The machine's use now from NodeMetrics: {cpu (cores), memory (bytes)}. */
export function nodeUsage(nodeMetrics) {
  const total = { cpu: 0, memory: 0 };
  for (const m of nodeMetrics) {
    total.cpu += parseQuantity(m.usage && m.usage.cpu);
    total.memory += parseQuantity(m.usage && m.usage.memory);
  }
  return total;
}

/** The GPUs a PodMetrics lists in its annotation: [{index, uuid, model, utilization, memoryUsed, memoryTotal}]. */
export function podGpus(podMetric) {
  const text = ((podMetric.metadata || {}).annotations || {})[ANNOTATION_GPUS];
  if (!text) return [];
  try { const v = JSON.parse(text); return Array.isArray(v) ? v : []; } catch { return []; }
}

/** The TrainJob a pod belongs to: its JobSet's name, in its namespace. */
export const podJob = (pod) => ((pod.metadata.labels || {})[LABEL_JOBSET] || '');

const NOT_A_JOB = '(pods of no TrainJob)';

/**
 * Rows of usage, grouped by `groupOf(pod, job)`: {group, jobs, pods, cpu, memory, gpu}. Only pods that
 * hold resources count; `jobs` is how many distinct TrainJobs those pods run.
 */
export function usageBy(pods, jobsByKey, groupOf) {
  const rows = new Map();
  for (const p of pods) {
    if (!holdsResources(p)) continue;
    const jobName = podJob(p);
    const job = jobName ? jobsByKey.get(`${p.metadata.namespace}/${jobName}`) : null;
    const group = groupOf(p, job);
    if (!rows.has(group)) rows.set(group, { group, jobs: new Set(), pods: 0, cpu: 0, memory: 0, gpu: 0 });
    const row = rows.get(group);
    const req = podRequests(p);
    row.pods += 1;
    row.cpu += req.cpu || 0;
    row.memory += req.memory || 0;
    row.gpu += req[GPU] || 0;
    if (jobName) row.jobs.add(`${p.metadata.namespace}/${jobName}`);
  }
  return [...rows.values()].map((r) => ({ ...r, jobs: r.jobs.size }));
}

export const byNamespace = (pods, jobsByKey) => usageBy(pods, jobsByKey, (p) => p.metadata.namespace);
export const byUser = (pods, jobsByKey) => usageBy(pods, jobsByKey,
  (p, job) => (job ? ((job.metadata.annotations || {})[ANNOTATION_REQUESTER] || '(unknown)') : NOT_A_JOB));

/**
 * GPUs held but barely used: per TrainJob, the GPUs its pods report through the metrics API and their
 * mean utilization, for those below `threshold` percent.
 */
export function idleGpus(podMetrics, threshold = 10) {
  const jobs = new Map();
  for (const m of podMetrics) {
    const gpus = podGpus(m);
    if (!gpus.length) continue;
    const name = (m.metadata.labels || {})[LABEL_JOBSET] || m.metadata.name;
    const key = `${m.metadata.namespace}/${name}`;
    if (!jobs.has(key)) jobs.set(key, { namespace: m.metadata.namespace, name, count: 0, sum: 0 });
    const j = jobs.get(key);
    for (const g of gpus) { j.count += 1; j.sum += Number(g.utilization) || 0; }
  }
  return [...jobs.values()].map((j) => ({ ...j, utilization: j.sum / j.count })).filter((j) => j.utilization < threshold);
}

export const gpusReported = (podMetrics) => podMetrics.some((m) => podGpus(m).length > 0);

/** GPU-equivalents busy now (the sum of utilizations): the "used now" of GPUs. */
export const gpuBusy = (podMetrics) => podMetrics.reduce((n, m) => n + podGpus(m).reduce((s, g) => s + (Number(g.utilization) || 0) / 100, 0), 0);

export const PREEMPTION_REASONS = {
  InClusterQueue: 'a higher-priority job of the same ClusterQueue needed the quota',
  InCohortReclamation: 'the queue that lent the quota took it back',
  InCohortFairSharing: 'fair sharing in the cohort',
  InCohortReclaimWhileBorrowing: 'a queue of the cohort reclaimed quota while borrowing',
};

// Kueue's preemption messages name the cause in words; its reason travels only on the Workload's condition.
const CAUSES = [
  ['reclamation within the cohort while borrowing', 'InCohortReclaimWhileBorrowing'],
  ['reclamation within the cohort', 'InCohortReclamation'],
  ['fair sharing within the cohort', 'InCohortFairSharing'],
  ['prioritization in the clusterqueue', 'InClusterQueue'],
];
export const reasonFromMessage = (message) => {
  const m = (message || '').toLowerCase();
  const found = CAUSES.find(([words]) => m.includes(words));
  return found ? found[1] : '';
};

const UIDS = /\(UID: ([0-9a-f-]+), JobUID: ([0-9a-f-]+)\)/;
const BY_WORKLOAD = /preempted by workload ([^/\s]+)\/([^\s;,]+)/;

/**
 * Preemptions, newest first: from the Workloads' Preempted conditions (which keep Kueue's reason) and
 * the TrainJobs' Preempted events (which outlive a later admission). One per job and second.
 */
export function preemptions({ workloads, events, jobs, localToCluster }) {
  const workloadsByUid = new Map(workloads.map((w) => [w.metadata.uid, w]));
  const workloadsByKey = new Map(workloads.map((w) => [`${w.metadata.namespace}/${w.metadata.name}`, w]));
  const jobsByUid = new Map(jobs.map((j) => [j.metadata.uid, j]));
  const jobsByKey = new Map(jobs.map((j) => [`${j.metadata.namespace}/${j.metadata.name}`, j]));
  const queueOfJob = (namespace, name) => {
    const j = jobsByKey.get(`${namespace}/${name}`);
    return j ? localToCluster.get(`${namespace}/${queueOf(j)}`) || '' : '';
  };
  const preemptor = (message) => {
    const named = BY_WORKLOAD.exec(message || '');
    if (named) {
      const w = workloadsByKey.get(`${named[1]}/${named[2]}`);
      return w ? jobOf(w) : { namespace: named[1], name: '', workload: named[2] };
    }
    const uids = UIDS.exec(message || '');
    if (!uids) return null;
    const job = jobsByUid.get(uids[2]);
    if (job) return { namespace: job.metadata.namespace, name: job.metadata.name };
    const w = workloadsByUid.get(uids[1]);
    return w ? jobOf(w) : null;
  };
  const found = new Map();
  const add = (r) => {
    const key = `${r.namespace}/${r.job}/${Math.floor(r.time / 1000)}`;
    found.set(key, { ...found.get(key), ...Object.fromEntries(Object.entries(r).filter(([, v]) => v)) });
  };
  for (const w of workloads) {
    const c = ((w.status && w.status.conditions) || []).find((x) => x.type === 'Preempted' && x.status === 'True');
    if (!c) continue;
    const job = jobOf(w);
    add({
      time: Date.parse(c.lastTransitionTime), namespace: job.namespace, job: job.name, reason: c.reason, message: c.message,
      by: preemptor(c.message), queue: localToCluster.get(`${w.metadata.namespace}/${w.spec.queueName}`) || '',
    });
  }
  for (const e of events) {
    const o = e.involvedObject || {};
    const time = Date.parse(e.lastTimestamp || e.eventTime || e.metadata.creationTimestamp);
    const job = o.kind === 'Workload' ? jobOf(workloadsByKey.get(`${o.namespace}/${o.name}`) || { metadata: { namespace: o.namespace } }).name : o.name;
    add({
      time, namespace: o.namespace, job, message: e.message, by: preemptor(e.message), queue: queueOfJob(o.namespace, job),
      reason: reasonFromMessage(e.message),
    });
  }
  return [...found.values()].sort((a, b) => b.time - a.time);
}
