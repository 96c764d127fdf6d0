// src/model.js (a TrainJob's state, sizes, times) and src/jobs/rows.js (the jobs table's rows).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { src } from '../test-support/src.mjs';

const m = await src('model.js');
const rows = await src('jobs/rows.js');

const NOW = Date.parse('2025-03-01T12:00:00Z');

function job({ name = 'pi', namespace = 'team-a', conditions = [], jobsStatus, suspend, annotations, labels, trainer, runtimeRef,
  created = '2025-03-01T11:00:00Z', uid = `uid-${name}`, trainerStatus } = {}) {
  return {
    metadata: { name, namespace, uid, creationTimestamp: created, annotations, labels },
    spec: { runtimeRef: runtimeRef || { name: 'mpi-distributed' }, suspend, trainer },
    status: { conditions, jobsStatus, trainerStatus },
  };
}
const cond = (type, extra = {}) => ({ type, status: 'True', lastTransitionTime: '2025-03-01T11:30:00Z', ...extra });

describe('jobState', () => {
  test('Failed wins over every other condition and carries its message', () => {
    const s = m.jobState(job({ conditions: [cond('Complete'), cond('Failed', { message: 'OOMKilled: rank 0', reason: 'X' })] }));
    assert.deepEqual(s, { state: 'Failed', message: 'OOMKilled: rank 0', at: '2025-03-01T11:30:00Z' });
  });

  test('Failed without a message falls back to its reason', () => {
    assert.equal(m.jobState(job({ conditions: [cond('Failed', { reason: 'BackoffLimit' })] })).message, 'BackoffLimit');
  });

  test('a condition that is not True does not count', () => {
    const s = m.jobState(job({ conditions: [{ type: 'Failed', status: 'False' }] }));
    assert.equal(s.state, 'Queued');
  });

  test('Complete is Succeeded; Suspended by condition or by spec.suspend', () => {
    assert.equal(m.jobState(job({ conditions: [cond('Complete')] })).state, 'Succeeded');
    assert.equal(m.jobState(job({ conditions: [cond('Suspended', { message: 'by Kueue' })] })).message, 'by Kueue');
    assert.deepEqual(m.jobState(job({ suspend: true })), { state: 'Suspended', message: 'spec.suspend is true' });
  });

  test('Running only once the launcher is active and ready', () => {
    assert.equal(m.jobState(job({ jobsStatus: [{ name: 'launcher', active: 1, ready: 1 }] })).state, 'Running');
    assert.equal(m.jobState(job({ jobsStatus: [{ name: 'launcher', active: 1, ready: 0 }] })).state, 'Starting');
    assert.equal(m.jobState(job({ jobsStatus: [{ name: 'node', active: 2 }] })).state, 'Starting');
  });

  test('Queued says why: the job\'s own waiting annotation, else the Workload\'s, else a default', () => {
    assert.deepEqual(m.jobState(job()), { state: 'Queued', message: 'waiting to be admitted' });
    const own = job({ annotations: { [m.ANNOTATION_WAITING]: 'quota full' } });
    assert.equal(m.jobState(own).message, 'quota full; no estimate');
    const wl = { metadata: { annotations: { [m.ANNOTATION_WAITING]: 'behind 2 jobs' } } };
    assert.equal(m.jobState(job(), wl).message, 'behind 2 jobs; no estimate');
    // a waiting sentence beats active pods that are not yet the launcher
    assert.equal(m.jobState(job({ jobsStatus: [{ name: 'node', active: 1 }] }), wl).state, 'Queued');
  });
});

describe('waitingSentence', () => {
  const wl = (start) => ({ metadata: { annotations: { [m.ANNOTATION_WAITING]: 'queue full', [m.ANNOTATION_ESTIMATED_START]: start } } });

  test('an estimate ahead is said as a duration', () => {
    const text = m.waitingSentence(job(), wl('2025-03-01T12:04:02Z'), NOW);
    assert.match(text, /^queue full; estimated start in about 4m 2s \(.+\)$/);
  });

  test('an estimate already past is "any moment now"', () => {
    assert.match(m.waitingSentence(job(), wl('2025-03-01T11:00:00Z'), NOW), /^queue full; estimated start any moment now /);
  });

  test('nothing to say without a reason', () => {
    assert.equal(m.waitingSentence(job(), { metadata: { annotations: { [m.ANNOTATION_ESTIMATED_START]: 'x' } } }, NOW), '');
    assert.equal(m.waitingSentence(job(), null, NOW), '');
  });
});

test('workloadsByJob maps the job-uid label and skips Workloads without one', () => {
  const a = { metadata: { name: 'a', labels: { [m.LABEL_JOB_UID]: 'u1' } } };
  const b = { metadata: { name: 'b' } };
  const map = m.workloadsByJob([a, b]);
  assert.equal(map.size, 1);
  assert.equal(map.get('u1'), a);
});

describe('runtimeOf, jobType, sizes', () => {
  const cluster = { kind: 'ClusterTrainingRuntime', metadata: { name: 'mpi-distributed', labels: { [m.LABEL_FRAMEWORK]: 'mpi' } }, spec: { mlPolicy: { numNodes: 3 } } };
  const localA = { kind: 'TrainingRuntime', metadata: { name: 'mine', namespace: 'team-a' }, spec: {} };
  const localB = { kind: 'TrainingRuntime', metadata: { name: 'mine', namespace: 'team-b' }, spec: {} };
  const runtimes = [localB, localA, cluster];

  test('a ref without kind names a ClusterTrainingRuntime; a TrainingRuntime must be in the job\'s namespace', () => {
    assert.equal(m.runtimeOf(job(), runtimes), cluster);
    assert.equal(m.runtimeOf(job({ runtimeRef: { name: 'mine', kind: 'TrainingRuntime' } }), runtimes), localA);
    assert.equal(m.runtimeOf(job({ namespace: 'team-c', runtimeRef: { name: 'mine', kind: 'TrainingRuntime' } }), runtimes), null);
  });

  test('the type is the runtime\'s framework label', () => {
    assert.equal(m.jobType(job(), cluster), 'mpi');
    assert.equal(m.jobType(job(), localA), 'unknown');
    assert.equal(m.jobType(job(), null), 'unknown');
  });

  test('numNodes: the job\'s own, else the runtime\'s, else 1; GPUs: limits before requests, times nodes', () => {
    assert.equal(m.numNodes(job({ trainer: { numNodes: 5 } }), cluster), 5);
    assert.equal(m.numNodes(job(), cluster), 3);
    assert.equal(m.numNodes(job(), null), 1);
    const j = job({ trainer: { numNodes: 2, resourcesPerNode: { limits: { [m.GPU]: '4' }, requests: { [m.GPU]: '1' } } } });
    assert.equal(m.gpusPerNode(j), 4);
    assert.equal(m.gpus(j, cluster), 8);
    assert.equal(m.gpusPerNode(job({ trainer: { resourcesPerNode: { requests: { [m.GPU]: 2 } } } })), 2);
    assert.equal(m.gpus(job(), cluster), 0);
  });

  test('queue and creator come from the label and the annotation', () => {
    const j = job({ labels: { [m.LABEL_QUEUE]: 'q1' }, annotations: { [m.ANNOTATION_REQUESTER]: 'alice' } });
    assert.equal(m.queueOf(j), 'q1');
    assert.equal(m.creatorOf(j), 'alice');
    assert.equal(m.queueOf(job()), '');
    assert.equal(m.creatorOf(job()), '');
  });
});

test('progressOf keeps a 0 percent and is null without trainerStatus', () => {
  assert.equal(m.progressOf(job()), null);
  assert.deepEqual(m.progressOf(job({ trainerStatus: { progressPercentage: 0 } })), { percent: 0, etaSeconds: null, metrics: [] });
});

describe('durations', () => {
  test('a running job lasts until now; a finished one until its condition', () => {
    assert.equal(m.durationSeconds(job(), NOW), 3600);
    assert.equal(m.durationSeconds(job({ conditions: [cond('Complete')] }), NOW), 1800);
    assert.equal(m.durationSeconds(job({ created: '2025-03-01T13:00:00Z' }), NOW), 0); // a clock behind: never negative
  });

  test('humanDuration: one or two units, kubectl style', () => {
    assert.equal(m.humanDuration(59.9), '59s');
    assert.equal(m.humanDuration(60), '1m 0s');
    assert.equal(m.humanDuration(242), '4m 2s');
    assert.equal(m.humanDuration(3600), '1h 0m');
    assert.equal(m.humanDuration(86400), '1d 0h');
    assert.equal(m.humanDuration(3 * 3600 + 12 * 60 + 5), '3h 12m');
    assert.equal(m.humanDuration(2 * 86400 + 4 * 3600 + 59), '2d 4h');
    assert.equal(m.humanDuration(null), '');
    assert.equal(m.humanDuration(NaN), '');
  });

  test('age counts from the timestamp', () => {
    assert.equal(m.age('2025-03-01T11:58:00Z', NOW), '2m 0s');
  });
});

describe('jobs table rows', () => {
  const cluster = { kind: 'ClusterTrainingRuntime', metadata: { name: 'mpi-distributed', labels: { [m.LABEL_FRAMEWORK]: 'mpi' } }, spec: { mlPolicy: { numNodes: 2 } } };
  const mk = (name, extra) => rows.toRow(job({ name, ...extra }), [cluster]);
  const a = mk('alpha', { namespace: 'ns1', labels: { [m.LABEL_QUEUE]: 'gpu' }, created: '2025-03-01T10:00:00Z',
    annotations: { [m.ANNOTATION_REQUESTER]: 'Alice' }, conditions: [cond('Failed')] });
  const b = mk('beta', { namespace: 'ns2', created: '2025-02-27T10:00:00Z', trainer: { numNodes: 4 }, jobsStatus: [{ name: 'launcher', active: 1, ready: 1 }] });
  const c = mk('gamma', { namespace: 'ns1', created: '2025-02-28T10:00:00Z' });

  test('a row reads the job through model.js, with its workload', () => {
    assert.equal(a.key, 'ns1/alpha');
    assert.equal(a.type, 'mpi');
    assert.equal(a.state, 'Failed');
    assert.equal(b.nodes, 4);
    assert.equal(a.created, Date.parse('2025-03-01T10:00:00Z'));
    const wl = { metadata: { annotations: { [m.ANNOTATION_WAITING]: 'no room' } } };
    const r = rows.toRow(c.job, [cluster], new Map([[c.job.metadata.uid, wl]]));
    assert.equal(r.message, 'no room; no estimate');
  });

  test('text filter matches name, namespace, queue or creator, ignoring case', () => {
    const f = (text) => [a, b, c].filter((r) => rows.matches(r, { ...rows.EMPTY_FILTERS, text })).map((r) => r.name);
    assert.deepEqual(f('ALICE'), ['alpha']);
    assert.deepEqual(f('ns1'), ['alpha', 'gamma']);
    assert.deepEqual(f('gpu'), ['alpha']);
    assert.deepEqual(f('zzz'), []);
  });

  test('category filters and the local-day range', () => {
    const f = (filters) => [a, b, c].filter((r) => rows.matches(r, { ...rows.EMPTY_FILTERS, ...filters })).map((r) => r.name);
    assert.deepEqual(f({ state: ['Running', 'Failed'] }), ['alpha', 'beta']);
    assert.deepEqual(f({ namespace: ['ns2'] }), ['beta']);
    // local days: compute the expected set the way a person in this time zone counts
    const day = (t) => { const d = new Date(t); return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`; };
    assert.deepEqual(f({ after: day(c.created), before: day(c.created) }), ['gamma']);
    assert.equal(rows.activeFilterCount({ ...rows.EMPTY_FILTERS, text: 'x', state: ['Failed', 'Running'], before: '2025-01-01' }), 4);
  });

  test('options: the values seen, sorted; states always all six', () => {
    const o = rows.options([a, b, c]);
    assert.deepEqual(o.namespace, ['ns1', 'ns2']);
    assert.deepEqual(o.queue, ['', 'gpu']);
    assert.deepEqual(o.state, m.STATES);
  });

  test('sortRows: by column and direction, states in their order, ties by key in the same direction', () => {
    const names = (by, dir) => rows.sortRows([a, b, c], by, dir, NOW).map((r) => r.name);
    assert.deepEqual(names('created', 'asc'), ['beta', 'gamma', 'alpha']);
    assert.deepEqual(names('created', 'desc'), ['alpha', 'gamma', 'beta']);
    assert.deepEqual(names('state', 'asc'), ['gamma', 'beta', 'alpha']); // Queued, Running, Failed
    assert.deepEqual(names('nodes', 'desc'), ['beta', 'gamma', 'alpha']); // 4, then 2 and 2 by key (reversed too)
    assert.deepEqual(names('nodes', 'asc'), ['alpha', 'gamma', 'beta']);
    assert.deepEqual(names('duration', 'desc'), ['beta', 'gamma', 'alpha']); // alpha ended after 1.5 h
  });
});
