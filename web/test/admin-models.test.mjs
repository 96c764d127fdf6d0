// src/admin/clusterModel.js (capacity, allocation, use, preemptions) and src/admin/historyModel.js (per-day records).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { src } from '../test-support/src.mjs';

const c = await src('admin/clusterModel.js');
const h = await src('admin/historyModel.js');
const { ANNOTATION_REQUESTER, GPU, LABEL_JOBSET, LABEL_QUEUE } = await src('model.js');

const pod = (name, ns, { job, phase = 'Running', cpu = '1', memory = '1Gi', gpu } = {}) => ({
  metadata: { name, namespace: ns, labels: job ? { [LABEL_JOBSET]: job } : {} },
  spec: { containers: [{ resources: { requests: { cpu, memory, ...(gpu ? { [GPU]: gpu } : {}) } } }] },
  status: { phase },
});

describe('cluster capacity and use', () => {
  test('nodeTotals: capacity and allocatable summed; allocatable falls back to capacity', () => {
    const nodes = [
      { status: { capacity: { cpu: '8', memory: '32Gi', [GPU]: '2' }, allocatable: { cpu: '7500m', memory: '30Gi', [GPU]: '2' } } },
      { status: { capacity: { cpu: '4' } } },
    ];
    assert.deepEqual(c.nodeTotals(nodes), {
      capacity: { cpu: 12, memory: 32 * 2 ** 30, [GPU]: 2 }, allocatable: { cpu: 11.5, memory: 30 * 2 ** 30, [GPU]: 2 } });
  });

  test('allocated counts only pods that hold resources (not Succeeded or Failed)', () => {
    const pods = [pod('a', 'x', { cpu: '2', gpu: '1' }), pod('b', 'x', { phase: 'Pending', cpu: '500m' }), pod('c', 'x', { phase: 'Succeeded', cpu: '8' })];
    assert.deepEqual(c.allocated(pods), { cpu: 2.5, memory: 2 * 2 ** 30, [GPU]: 1 });
  });

  test('nodeUsage sums NodeMetrics', () => {
    assert.deepEqual(c.nodeUsage([{ usage: { cpu: '250m', memory: '1Gi' } }, { usage: { cpu: '750000000n', memory: '1024Mi' } }]),
      { cpu: 1, memory: 2 * 2 ** 30 });
  });

  test('usage by namespace and by user: pods, distinct jobs, requests', () => {
    const jobs = new Map([['x/pi', { metadata: { annotations: { [ANNOTATION_REQUESTER]: 'alice' } } }], ['y/mc', { metadata: {} }]]);
    const pods = [pod('pi-l', 'x', { job: 'pi', gpu: '1' }), pod('pi-n', 'x', { job: 'pi', gpu: '2' }), pod('mc-n', 'y', { job: 'mc' }),
      pod('loose', 'y'), pod('done', 'x', { job: 'pi', phase: 'Failed', gpu: '4' })];
    const ns = Object.fromEntries(c.byNamespace(pods, jobs).map((r) => [r.group, r]));
    assert.deepEqual(ns.x, { group: 'x', jobs: 1, pods: 2, cpu: 2, memory: 2 * 2 ** 30, gpu: 3 });
    assert.equal(ns.y.jobs, 1);
    assert.equal(ns.y.pods, 2);
    const users = Object.fromEntries(c.byUser(pods, jobs).map((r) => [r.group, r.pods]));
    assert.deepEqual(users, { alice: 2, '(unknown)': 1, '(pods of no TrainJob)': 1 });
  });

  const metric = (name, gpus, job) => ({
    metadata: { name, namespace: 'x', labels: job ? { [LABEL_JOBSET]: job } : {}, annotations: gpus === undefined ? {} : { 'mpijob.io/gpus': gpus } },
  });

  test('podGpus reads the annotation; unreadable or absent is none', () => {
    assert.deepEqual(c.podGpus(metric('p', '[{"index":0,"utilization":50}]')), [{ index: 0, utilization: 50 }]);
    assert.deepEqual(c.podGpus(metric('p', 'not json')), []);
    assert.deepEqual(c.podGpus(metric('p', '{"a":1}')), []);
    assert.deepEqual(c.podGpus(metric('p')), []);
  });

  test('idleGpus: per job, mean utilization below the threshold; gpuBusy sums utilizations', () => {
    const ms = [metric('pi-0', '[{"utilization":2},{"utilization":6}]', 'pi'), metric('pi-1', '[{"utilization":4}]', 'pi'),
      metric('mc-0', '[{"utilization":90}]', 'mc'), metric('cpu-only')];
    assert.deepEqual(c.idleGpus(ms), [{ namespace: 'x', name: 'pi', count: 3, sum: 12, utilization: 4 }]);
    assert.deepEqual(c.idleGpus(ms, 95).map((j) => j.name), ['pi', 'mc']);
    assert.ok(Math.abs(c.gpuBusy(ms) - 1.02) < 1e-9);
    assert.equal(c.gpusReported(ms), true);
    assert.equal(c.gpusReported([metric('cpu-only')]), false);
  });
});

describe('preemptions', () => {
  test('reasonFromMessage: Kueue\'s words to its reason, the most specific first', () => {
    assert.equal(c.reasonFromMessage('Preempted to accommodate a workload due to reclamation within the cohort while borrowing'), 'InCohortReclaimWhileBorrowing');
    assert.equal(c.reasonFromMessage('... due to reclamation within the cohort'), 'InCohortReclamation');
    assert.equal(c.reasonFromMessage('due to Prioritization in the ClusterQueue'), 'InClusterQueue');
    assert.equal(c.reasonFromMessage('evicted'), '');
  });

  const wl = (name, uid, job, extra = {}) => ({
    metadata: { name, namespace: 'x', uid, ownerReferences: [{ kind: 'TrainJob', name: job }] }, spec: { queueName: 'lq' }, ...extra,
  });
  const job = (name, uid) => ({ metadata: { name, namespace: 'x', uid, labels: { [LABEL_QUEUE]: 'lq' } } });

  test('from Workload conditions and events: one per job and second, newest first, with who preempted', () => {
    const victim = wl('wl-small', 'w1', 'small', { status: { conditions: [{
      type: 'Preempted', status: 'True', reason: 'InClusterQueue', lastTransitionTime: '2025-03-01T10:00:00Z',
      message: 'Preempted to accommodate a workload (UID: 0a2, JobUID: 0b2) due to prioritization in the ClusterQueue' }] } });
    const winner = wl('wl-big', '0a2', 'big');
    const events = [
      { involvedObject: { kind: 'TrainJob', namespace: 'x', name: 'small' }, lastTimestamp: '2025-03-01T10:00:00.500Z',
        message: 'Preempted to accommodate a workload (UID: 0a2, JobUID: 0b2) due to prioritization in the ClusterQueue' },
      { involvedObject: { kind: 'Workload', namespace: 'x', name: 'wl-small' }, lastTimestamp: '2025-03-01T11:00:00Z',
        message: 'preempted by workload x/wl-big; due to reclamation within the cohort', metadata: {} },
    ];
    const out = c.preemptions({ workloads: [victim, winner], events, jobs: [job('small', 'j1'), job('big', '0b2')], localToCluster: new Map([['x/lq', 'cq']]) });
    assert.equal(out.length, 2);
    assert.equal(out[0].time, Date.parse('2025-03-01T11:00:00Z'));
    assert.equal(out[0].job, 'small');
    assert.equal(out[0].reason, 'InCohortReclamation');
    assert.deepEqual(out[0].by, { namespace: 'x', name: 'big', kind: 'TrainJob' });
    // the condition and the event of the same second are one, the condition's reason kept
    assert.equal(out[1].reason, 'InClusterQueue');
    assert.equal(out[1].queue, 'cq');
    assert.deepEqual(out[1].by, { namespace: 'x', name: 'big' });
  });
});

describe('history', () => {
  // local times: the charts count the browser's days
  const at = (y, mo, d, hh = 12) => new Date(y, mo - 1, d, hh).getTime();
  const rec = (ns, state, finished, extra = {}) => ({ metadata: { namespace: ns }, state, finished: finished && new Date(finished).toISOString(), ...extra });

  test('dayKey and lastDays: local calendar days, oldest first, ending today', () => {
    assert.equal(h.dayKey(at(2025, 3, 1, 0)), '2025-03-01');
    assert.equal(h.dayKey(at(2025, 3, 1, 23)), '2025-03-01');
    assert.deepEqual(h.lastDays(3, at(2025, 3, 1, 1)), ['2025-02-27', '2025-02-28', '2025-03-01']);
  });

  test('rangeStart: local midnight days-1 days ago', () => {
    assert.equal(Date.parse(h.rangeStart(7, at(2025, 3, 8, 15))), new Date(2025, 2, 2, 0, 0, 0).getTime());
  });

  test('isEnded: a finished record in an end state', () => {
    assert.equal(h.isEnded(rec('a', 'Complete', at(2025, 3, 1))), true);
    assert.equal(h.isEnded(rec('a', 'Running', at(2025, 3, 1))), false);
    assert.equal(h.isEnded(rec('a', 'Failed', null)), false);
  });

  test('perDay: counts and hours per namespace and day, within the range; cpu only when known', () => {
    const days = h.lastDays(2, at(2025, 3, 2));
    const records = [
      rec('b', 'Complete', at(2025, 3, 2, 9), { gpuHours: 1.5 }),
      rec('b', 'Failed', at(2025, 3, 2, 10), { gpuHours: '0.5', cpuHours: 2 }),
      rec('a', 'Deleted', at(2025, 3, 1, 23), { gpuHours: 3 }),
      rec('c', 'Complete', at(2025, 2, 1), { gpuHours: 9 }), // before the range
      rec('d', 'Running', null),
    ];
    const r = h.perDay(records, days);
    assert.deepEqual(r.namespaces, ['a', 'b']);
    assert.equal(r.jobs.get('b').get('2025-03-02'), 2);
    assert.equal(r.gpuHours.get('b').get('2025-03-02'), 2);
    assert.equal(r.gpuHours.get('a').get('2025-03-01'), 3);
    assert.equal(r.cpuHours.get('b').get('2025-03-02'), 2);
    assert.equal(r.cpuKnown, true);
    assert.equal(h.total(r.jobs), 3);
    assert.equal(h.perDay([records[0]], days).cpuKnown, false);
  });

  test('totalsByNamespace: since the range start, by end state', () => {
    const records = [
      rec('a', 'Complete', at(2025, 3, 2), { gpuHours: 1, cpuHours: 2, runSeconds: 60 }),
      rec('a', 'Failed', at(2025, 3, 3), { gpuHours: 2, runSeconds: 30 }),
      rec('a', 'Deleted', at(2025, 2, 1), { gpuHours: 100 }),
    ];
    assert.deepEqual(h.totalsByNamespace(records, new Date(at(2025, 3, 1, 0)).toISOString()), [
      { namespace: 'a', jobs: 2, complete: 1, failed: 1, deleted: 0, gpuHours: 3, cpuHours: 2, runSeconds: 90 }]);
  });

  test('formatHours: precision for small numbers', () => {
    assert.equal(h.formatHours(0), '0');
    assert.equal(h.formatHours(0.0012345), '0.0012');
    assert.equal(h.formatHours(1.366), '1.37');
    assert.equal(h.formatHours(null), '–');
  });
});
