// What the pages say about a TrainJob, read from the object as every client of the local cluster reads
// it (mpijob/client/phase.py): one place for the state, type, sizes, queue and times of a job.

export const LABEL_FRAMEWORK = 'trainer.kubeflow.org/framework';
export const LABEL_QUEUE = 'kueue.x-k8s.io/queue-name';
export const LABEL_PRIORITY = 'kueue.x-k8s.io/priority-class';
export const LABEL_JOBSET = 'jobset.sigs.k8s.io/jobset-name';
export const LABEL_RJOB = 'jobset.sigs.k8s.io/replicatedjob-name';
export const ANNOTATION_REQUESTER = 'mpijob.io/requester';
export const ANNOTATION_WAITING = 'mpijob.io/waiting';
export const ANNOTATION_ESTIMATED_START = 'mpijob.io/estimated-start';
export const LABEL_JOB_UID = 'kueue.x-k8s.io/job-uid'; // on a Workload: the uid of the TrainJob it admits
export const GPU = 'nvidia.com/gpu';
export const DOCS = '#/docs'; // the project's own docs (served by the local cluster), linked from help texts

export const STATES = ['Queued', 'Starting', 'Running', 'Suspended', 'Succeeded', 'Failed'];

export const condition = (obj, type) => ((obj.status && obj.status.conditions) || [])
  .find((c) => c.type === type && c.status === 'True');

export const localTime = (ts) => (ts ? new Date(ts).toLocaleString() : '');

/**
 * Why a job waits, with its estimated start: the sentence the local cluster's scheduler writes on the
 * job's Workload (mpijob/api/trainer/waiting.py), as `mpijob describe` shows it; '' when none says.
 */
export function waitingSentence(job, workload, now = Date.now()) {
  const own = (job.metadata.annotations || {})[ANNOTATION_WAITING];
  const wl = (workload && workload.metadata.annotations) || {};
  const reason = own || wl[ANNOTATION_WAITING];
  if (!reason) return '';
  const start = wl[ANNOTATION_ESTIMATED_START];
  if (!start) return `${reason}; no estimate`;
  const left = (Date.parse(start) - now) / 1000;
  return `${reason}; estimated start ${left > 0 ? `in about ${humanDuration(left)}` : 'any moment now'} (${localTime(start)})`;
}

/** The Workload (by its job-uid label) of each job uid, from a list of Workloads. */
export const workloadsByJob = (workloads) => new Map(workloads
  .map((w) => [(w.metadata.labels || {})[LABEL_JOB_UID], w]).filter(([uid]) => uid));

/**
 * Queued · Starting · Running · Suspended · Succeeded · Failed, and the sentence that explains it.
 * `workload` (when the user may read it) says why a queued job waits.
 */
export function jobState(job, workload = null) {
  let c;
  if ((c = condition(job, 'Failed'))) return { state: 'Failed', message: c.message || c.reason || '', at: c.lastTransitionTime };
  if ((c = condition(job, 'Complete'))) return { state: 'Succeeded', message: c.message || '', at: c.lastTransitionTime };
  if ((c = condition(job, 'Suspended'))) return { state: 'Suspended', message: c.message || '', at: c.lastTransitionTime };
  if (job.spec && job.spec.suspend) return { state: 'Suspended', message: 'spec.suspend is true' };
  const jobs = (job.status && job.status.jobsStatus) || [];
  const launcher = jobs.find((j) => j.name === 'launcher');
  if (launcher && (launcher.active || 0) > 0 && (launcher.ready || 0) > 0) return { state: 'Running', message: '' };
  const waiting = waitingSentence(job, workload);
  if (waiting) return { state: 'Queued', message: waiting };
  if (jobs.some((j) => (j.active || 0) > 0)) return { state: 'Starting', message: '' };
  return { state: 'Queued', message: 'waiting to be admitted' };
}

export const isFinished = (state) => state === 'Succeeded' || state === 'Failed';

/** The runtime a job refers to, among `runtimes` (ClusterTrainingRuntimes and TrainingRuntimes). */
export function runtimeOf(job, runtimes) {
  const ref = job.spec.runtimeRef || {};
  const kind = ref.kind || 'ClusterTrainingRuntime';
  return runtimes.find((r) => r.kind === kind && r.metadata.name === ref.name
    && (kind === 'ClusterTrainingRuntime' || r.metadata.namespace === job.metadata.namespace)) || null;
}

/** The job's type: its runtime's framework label (mpi, torch, deepspeed, ...), as Trainer's SDK reads it. */
export const jobType = (job, runtime) => (runtime && (runtime.metadata.labels || {})[LABEL_FRAMEWORK]) || 'unknown';

export function numNodes(job, runtime) {
  const own = job.spec.trainer && job.spec.trainer.numNodes;
  if (own) return own;
  const mpi = runtime && runtime.spec.mlPolicy;
  return (mpi && mpi.numNodes) || 1;
}

export function gpusPerNode(job) {
  const r = (job.spec.trainer && job.spec.trainer.resourcesPerNode) || {};
  const v = (r.limits && r.limits[GPU]) || (r.requests && r.requests[GPU]) || 0;
  return Number(v) || 0;
}

export const gpus = (job, runtime) => gpusPerNode(job) * numNodes(job, runtime);
export const queueOf = (job) => (job.metadata.labels || {})[LABEL_QUEUE] || '';
export const creatorOf = (job) => (job.metadata.annotations || {})[ANNOTATION_REQUESTER] || '';

/** Progress the program reported (Trainer's trainerStatus): {percent, etaSeconds, metrics} or null. */
export function progressOf(job) {
  const s = job.status && job.status.trainerStatus;
  if (!s) return null;
  return { percent: s.progressPercentage ?? null, etaSeconds: s.estimatedRemainingSeconds ?? null, metrics: s.metrics || [] };
}

/** Seconds from creation to the end (or to `now` while it lasts). */
export function durationSeconds(job, now = Date.now()) {
  const start = Date.parse(job.metadata.creationTimestamp);
  const { state, at } = jobState(job);
  const end = isFinished(state) && at ? Date.parse(at) : now;
  return Math.max(0, (end - start) / 1000);
}

/** 59s, 4m 2s, 3h 12m, 2d 4h: kubectl's AGE style, one or two units. */
export function humanDuration(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return '';
  const s = Math.floor(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export const age = (timestamp, now = Date.now()) => humanDuration((now - Date.parse(timestamp)) / 1000);
