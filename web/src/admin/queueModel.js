// What the Queues page says about Kueue's objects: a ClusterQueue's quota per resource against what its
// admitted jobs hold, its preemption policy in words, and a pending job's place, wait and reason.
import { ANNOTATION_ESTIMATED_START, condition } from '../model.js';
import { parseQuantity, resourceOrder } from './quantity.js';

const ANNOTATION_WAITING = 'mpijob.io/waiting';

function byFlavorAndResource(flavors) {
  const out = new Map();
  for (const f of flavors || []) {
    for (const r of f.resources || []) out.set(`${f.name}/${r.name}`, r);
  }
  return out;
}

/**
 * One row per flavor and resource of the queue: nominal quota, the limits (null: none set), what the
 * admitted jobs use and how much of it is borrowed from the cohort. Values in cores, bytes, counts.
 */
export function quotaRows(cq) {
  const status = cq.status || {};
  const usage = byFlavorAndResource(status.flavorsUsage || status.flavorsReservation);
  const reservation = byFlavorAndResource(status.flavorsReservation);
  const rows = [];
  for (const group of (cq.spec && cq.spec.resourceGroups) || []) {
    for (const flavor of group.flavors || []) {
      for (const r of flavor.resources || []) {
        const key = `${flavor.name}/${r.name}`;
        const used = usage.get(key) || {};
        rows.push({
          flavor: flavor.name,
          resource: r.name,
          nominal: parseQuantity(r.nominalQuota),
          borrowingLimit: r.borrowingLimit === undefined ? null : parseQuantity(r.borrowingLimit),
          lendingLimit: r.lendingLimit === undefined ? null : parseQuantity(r.lendingLimit),
          used: parseQuantity(used.total),
          reserved: parseQuantity((reservation.get(key) || {}).total),
          borrowed: parseQuantity(used.borrowed),
        });
      }
    }
  }
  return rows.sort((a, b) => resourceOrder(a.resource, b.resource) || a.flavor.localeCompare(b.flavor));
}

const WITHIN = {
  Never: 'never preempts jobs in its own queue',
  LowerPriority: 'preempts lower-priority jobs in its own queue',
  LowerOrNewerEqualPriority: 'preempts lower-priority, or newer equal-priority, jobs in its own queue',
};
const RECLAIM = {
  Never: '',
  LowerPriority: 'takes back quota it lent by preempting lower-priority jobs of the cohort',
  Any: 'takes back quota it lent by preempting any job of the cohort',
};

/** The queue's preemption policy as a sentence ("preempts lower-priority jobs in its own queue; ..."). */
export function preemptionInWords(cq) {
  const p = (cq.spec && cq.spec.preemption) || {};
  const parts = [WITHIN[p.withinClusterQueue || 'Never'] || `withinClusterQueue: ${p.withinClusterQueue}`];
  if (cq.spec && cq.spec.cohortName) {
    const reclaim = RECLAIM[p.reclaimWithinCohort || 'Never'];
    if (reclaim === undefined) parts.push(`reclaimWithinCohort: ${p.reclaimWithinCohort}`);
    else if (reclaim) parts.push(reclaim);
    const borrow = p.borrowWithinCohort;
    if (borrow && borrow.policy && borrow.policy !== 'Never') {
      const limit = borrow.maxPriorityThreshold !== undefined ? ` (priority up to ${borrow.maxPriorityThreshold})` : '';
      parts.push(`may preempt lower-priority jobs of the cohort${limit} to borrow`);
    }
  }
  const text = parts.join('; ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Whether the queue admits jobs, and if not why (its Active condition). */
export function queueStatus(q) {
  const active = ((q.status && q.status.conditions) || []).find((c) => c.type === 'Active');
  if (!active) return { active: true, text: 'Active', message: '' };
  return { active: active.status === 'True', text: active.status === 'True' ? 'Active' : (active.reason || 'Inactive'), message: active.message || '' };
}

// Kueue's value for a queue of weight 0 that borrows (2^63-1), as the double JSON.parse makes of it: 2^63.
const MAX_SHARE = 9223372036854775808;

/** The fair-sharing weighted share as Kueue reports it (per mille of what the cohort lends), as text; '' when absent. */
export function weightedShare(cq) {
  const fs = cq.status && cq.status.fairSharing;
  if (!fs || fs.weightedShare === undefined || fs.weightedShare === null) return '';
  const v = Number(fs.weightedShare);
  if (!Number.isFinite(v) || v >= MAX_SHARE) return '\u221e';
  return String(Math.round(v));
}

/** The TrainJob (namespace, name) a Workload stands for, from its owner reference. */
export function jobOf(workload) {
  const meta = workload.metadata || {};
  const owner = (meta.ownerReferences || []).find((o) => o.kind === 'TrainJob') || (meta.ownerReferences || [])[0];
  return { namespace: meta.namespace, name: owner ? owner.name : '', kind: owner ? owner.kind : '' };
}

export const workloadKey = (namespace, name) => `${namespace}/${name}`;

/** A rough duration for people, as the server's waiting.py writes it: <1 min, ~12 min, ~2 h 5 min. */
export function about(seconds) {
  if (seconds < 60) return '<1 min';
  let minutes = Math.ceil(seconds / 60);
  if (minutes < 90) return `~${minutes} min`;
  let hours = Math.floor(minutes / 60);
  minutes %= 60;
  if (hours < 48) return minutes ? `~${hours} h ${minutes} min` : `~${hours} h`;
  const days = Math.floor(hours / 24);
  hours %= 24;
  return hours ? `~${days} d ${hours} h` : `~${days} d`;
}

/**
 * Why a Workload waits, the whole sentence: the scheduler's facts (annotation) and the estimated start
 * counted from the browser's clock, as every other client joins them. Else its QuotaReserved message.
 */
export function waitingSentence(workload, now = Date.now()) {
  const a = (workload && workload.metadata && workload.metadata.annotations) || {};
  const start = a[ANNOTATION_ESTIMATED_START];
  const estimate = start ? `estimated start in ${about(Math.max(0, (Date.parse(start) - now) / 1000))}` : 'no estimate';
  if (a[ANNOTATION_WAITING]) return `${a[ANNOTATION_WAITING]}; ${estimate}`;
  const reserved = ((workload && workload.status && workload.status.conditions) || []).find((c) => c.type === 'QuotaReserved');
  return (reserved && reserved.status !== 'True' && reserved.message) || '';
}

/** When the job began its current wait: its creation, or its last eviction when it was requeued since. */
export function waitingSince(workload) {
  let since = Date.parse(workload.metadata.creationTimestamp);
  for (const c of (workload.status && workload.status.conditions) || []) {
    if ((c.type === 'Evicted' || c.type === 'Requeued') && c.status === 'True') {
      since = Math.max(since, Date.parse(c.lastTransitionTime) || 0);
    }
  }
  return since;
}

/** Whether the Workload waits for quota: not reserved, not finished, not deactivated. */
export function isPending(workload) {
  if (workload.spec && workload.spec.active === false) return false;
  return !condition(workload, 'QuotaReserved') && !condition(workload, 'Finished');
}

/**
 * The pending jobs of a queue computed from the Workloads, when the visibility API is not readable:
 * Kueue's order (priority, then the time the wait began), positions from 0 as the API counts them.
 */
export function pendingFromWorkloads(workloads, { clusterQueue, namespace, localQueue }, localToCluster) {
  const mine = workloads.filter((w) => isPending(w) && (localQueue
    ? w.metadata.namespace === namespace && w.spec.queueName === localQueue
    : localToCluster.get(workloadKey(w.metadata.namespace, w.spec.queueName)) === clusterQueue));
  mine.sort((a, b) => (b.spec.priority || 0) - (a.spec.priority || 0) || waitingSince(a) - waitingSince(b));
  return mine.map((w, i) => ({
    metadata: { name: w.metadata.name, namespace: w.metadata.namespace, creationTimestamp: w.metadata.creationTimestamp, ownerReferences: w.metadata.ownerReferences },
    priority: w.spec.priority || 0,
    localQueueName: w.spec.queueName,
    positionInClusterQueue: localQueue ? null : i,
    positionInLocalQueue: localQueue ? i : null,
  }));
}
