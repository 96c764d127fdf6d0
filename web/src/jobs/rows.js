// The table's rows: what model.js reads from each TrainJob, read once per change of the list, then
// filtered, sorted and paged as plain data (1,000 jobs stay fast).
import {
  creatorOf, durationSeconds, gpus, jobState, jobType, numNodes, progressOf, queueOf, runtimeOf, STATES,
} from '../model.js';

export function toRow(job, runtimes, workloads = new Map()) {
  const runtime = runtimeOf(job, runtimes);
  const { state, message } = jobState(job, workloads.get(job.metadata.uid));
  return {
    key: `${job.metadata.namespace}/${job.metadata.name}`,
    job,
    name: job.metadata.name,
    namespace: job.metadata.namespace,
    type: jobType(job, runtime),
    state,
    message,
    progress: progressOf(job),
    nodes: numNodes(job, runtime),
    gpus: gpus(job, runtime),
    queue: queueOf(job),
    creator: creatorOf(job),
    created: Date.parse(job.metadata.creationTimestamp) || 0,
  };
}

export const EMPTY_FILTERS = {
  text: '', type: [], state: [], namespace: [], queue: [], creator: [], after: '', before: '',
};

/** The select filters: the key in the filters, its label, and the row field it matches. */
export const CATEGORIES = [
  ['type', 'Type'], ['state', 'State'], ['namespace', 'Namespace'], ['queue', 'Queue'], ['creator', 'Creator'],
];

// A date input's value (YYYY-MM-DD) as local midnight: "created after 2025-01-02" keeps that day's jobs.
const dayStart = (day) => new Date(`${day}T00:00:00`).getTime();
const DAY = 86400000;

export function matches(row, f) {
  if (f.text) {
    const t = f.text.toLowerCase();
    if (![row.name, row.namespace, row.queue, row.creator].some((v) => v.toLowerCase().includes(t))) return false;
  }
  for (const [key] of CATEGORIES) {
    if (f[key].length && !f[key].includes(row[key])) return false;
  }
  if (f.after && row.created < dayStart(f.after)) return false;
  if (f.before && row.created >= dayStart(f.before) + DAY) return false;
  return true;
}

export const activeFilterCount = (f) => (f.text ? 1 : 0) + (f.after ? 1 : 0) + (f.before ? 1 : 0)
  + CATEGORIES.reduce((n, [key]) => n + f[key].length, 0);

/** The values seen in the rows for each select filter (states: all six, in their order). */
export function options(rows) {
  const seen = Object.fromEntries(CATEGORIES.map(([key]) => [key, new Set()]));
  for (const row of rows) for (const [key] of CATEGORIES) seen[key].add(row[key]);
  const sorted = (s) => [...s].sort((a, b) => a.localeCompare(b));
  return {
    type: sorted(seen.type), state: STATES, namespace: sorted(seen.namespace),
    queue: sorted(seen.queue), creator: sorted(seen.creator),
  };
}

/** The sortable columns: their header, and the value a row is ordered by. */
export const SORTS = {
  name: (r) => r.name,
  namespace: (r) => r.namespace,
  state: (r) => STATES.indexOf(r.state),
  created: (r) => r.created,
  duration: (r, now) => durationSeconds(r.job, now),
  nodes: (r) => r.nodes,
  gpus: (r) => r.gpus,
};

export function sortRows(rows, by, direction, now) {
  const value = SORTS[by];
  const sign = direction === 'desc' ? -1 : 1;
  return [...rows].sort((a, b) => {
    const x = value(a, now);
    const y = value(b, now);
    const c = typeof x === 'string' ? x.localeCompare(y) : x - y;
    return sign * (c || a.key.localeCompare(b.key));
  });
}
