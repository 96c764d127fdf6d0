// src/admin/quantity.js (Kubernetes quantities) and src/admin/queueModel.js (quotas, preemption, pending jobs).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { src } from '../test-support/src.mjs';

const qty = await src('admin/quantity.js');
const q = await src('admin/queueModel.js');
const { GPU, ANNOTATION_ESTIMATED_START } = await src('model.js');

describe('quantities', () => {
  test('parseQuantity: decimal and binary suffixes, exponents, numbers; 0 for nonsense', () => {
    assert.equal(qty.parseQuantity('500m'), 0.5);
    assert.equal(qty.parseQuantity('16Gi'), 16 * 2 ** 30);
    assert.equal(qty.parseQuantity('2k'), 2000);
    assert.equal(qty.parseQuantity('9018n'), 9018e-9);
    assert.equal(qty.parseQuantity('1.5'), 1.5);
    assert.equal(qty.parseQuantity('1e3'), 1000);
    assert.equal(qty.parseQuantity(' 4 '), 4);
    assert.equal(qty.parseQuantity(3), 3);
    assert.equal(qty.parseQuantity('12 Gi'), 0);
    assert.equal(qty.parseQuantity('abc'), 0);
    assert.equal(qty.parseQuantity(undefined), 0);
  });

  test('resourceOrder: cpu, memory, GPUs first, then by name', () => {
    assert.deepEqual(['pods', GPU, 'ephemeral-storage', 'memory', 'cpu'].sort(qty.resourceOrder),
      ['cpu', 'memory', GPU, 'ephemeral-storage', 'pods']);
  });

  test('formatAmount and formatNumber say values in people\'s units', () => {
    assert.equal(qty.formatAmount('cpu', 1), '1 core');
    assert.equal(qty.formatAmount('cpu', 1.234), '1.23 cores');
    assert.equal(qty.formatAmount('memory', 6 * 2 ** 30), '6 GiB');
    assert.equal(qty.formatAmount('memory', 512 * 2 ** 20), '512 MiB');
    assert.equal(qty.formatAmount('memory', 1.25 * 2 ** 30), '1.3 GiB');
    assert.equal(qty.formatAmount(GPU, 2), '2 GPUs');
    assert.equal(qty.formatAmount(GPU, Infinity), 'unlimited');
    assert.equal(qty.formatAmount('pods', 3), '3');
    assert.equal(qty.formatNumber('memory', 3 * 2 ** 30), '3');
    assert.equal(qty.resourceLabel(GPU), 'GPUs');
  });

  test('podRequests: containers add up, an init container counts where it asks more; requests before limits', () => {
    const pod = { spec: {
      containers: [{ resources: { requests: { cpu: '500m' }, limits: { cpu: '2', memory: '1Gi' } } }, { resources: { requests: { cpu: '1', memory: '1Gi' } } }],
      initContainers: [{ resources: { requests: { memory: '4Gi', cpu: '100m' } } }],
    } };
    assert.deepEqual(qty.podRequests(pod), { cpu: 1.5, memory: 4 * 2 ** 30 });
    assert.deepEqual(qty.addInto({ cpu: 1 }, { cpu: 2, memory: 3 }), { cpu: 3, memory: 3 });
  });
});

describe('ClusterQueue quotas', () => {
  const cq = {
    spec: { resourceGroups: [{ flavors: [
      { name: 'default', resources: [{ name: GPU, nominalQuota: '4', borrowingLimit: '2' }, { name: 'cpu', nominalQuota: '8' }, { name: 'memory', nominalQuota: '32Gi', lendingLimit: '0' }] },
      { name: 'a100', resources: [{ name: 'cpu', nominalQuota: '16' }] },
    ] }] },
    status: {
      flavorsUsage: [{ name: 'default', resources: [{ name: GPU, total: '5', borrowed: '1' }, { name: 'cpu', total: '2500m' }] }],
      flavorsReservation: [{ name: 'default', resources: [{ name: GPU, total: '6' }] }],
    },
  };

  test('quotaRows: one row per flavor and resource, in resource order, with usage, borrowing and limits', () => {
    const rows = q.quotaRows(cq);
    assert.deepEqual(rows.map((r) => `${r.resource}@${r.flavor}`), ['cpu@a100', 'cpu@default', 'memory@default', `${GPU}@default`]);
    const gpu = rows[3];
    assert.deepEqual(gpu, { flavor: 'default', resource: GPU, nominal: 4, borrowingLimit: 2, lendingLimit: null, used: 5, reserved: 6, borrowed: 1 });
    assert.equal(rows[1].used, 2.5);
    assert.equal(rows[2].lendingLimit, 0); // a limit of 0 is a limit, not "none"
    assert.equal(rows[2].nominal, 32 * 2 ** 30);
  });

  test('without flavorsUsage the reservation is the usage', () => {
    const rows = q.quotaRows({ ...cq, status: { flavorsReservation: cq.status.flavorsReservation } });
    assert.equal(rows.find((r) => r.resource === GPU).used, 6);
  });

  test('preemptionInWords: the policy as a sentence; cohort parts only in a cohort', () => {
    assert.equal(q.preemptionInWords({ spec: {} }), 'Never preempts jobs in its own queue');
    const p = { withinClusterQueue: 'LowerPriority', reclaimWithinCohort: 'Any', borrowWithinCohort: { policy: 'LowerPriority', maxPriorityThreshold: 100 } };
    assert.equal(q.preemptionInWords({ spec: { preemption: p } }), 'Preempts lower-priority jobs in its own queue');
    assert.equal(q.preemptionInWords({ spec: { cohortName: 'all', preemption: p } }),
      'Preempts lower-priority jobs in its own queue; takes back quota it lent by preempting any job of the cohort; '
      + 'may preempt lower-priority jobs of the cohort (priority up to 100) to borrow');
    assert.equal(q.preemptionInWords({ spec: { cohortName: 'all', preemption: { withinClusterQueue: 'Odd', reclaimWithinCohort: 'Strange' } } }),
      'WithinClusterQueue: Odd; reclaimWithinCohort: Strange');
  });

  test('queueStatus: active without an Active condition; else its reason and message', () => {
    assert.deepEqual(q.queueStatus({}), { active: true, text: 'Active', message: '' });
    assert.deepEqual(q.queueStatus({ status: { conditions: [{ type: 'Active', status: 'False', reason: 'FlavorNotFound', message: 'no flavor a100' }] } }),
      { active: false, text: 'FlavorNotFound', message: 'no flavor a100' });
  });

  test('weightedShare: rounded, infinite at Kueue\'s maximum, empty when absent', () => {
    assert.equal(q.weightedShare({ status: { fairSharing: { weightedShare: 333.6 } } }), '334');
    assert.equal(q.weightedShare({ status: { fairSharing: { weightedShare: 0 } } }), '0');
    assert.equal(q.weightedShare({ status: { fairSharing: { weightedShare: JSON.parse('9223372036854775807') } } }), '\u221e');
    const below = 2 ** 63 - 1024; // the double just below Kueue's maximum: still a number
    assert.equal(q.weightedShare({ status: { fairSharing: { weightedShare: below } } }), String(below));
    assert.equal(q.weightedShare({ status: {} }), '');
  });
});

describe('pending jobs', () => {
  test('about: a rough duration as waiting.py writes it', () => {
    assert.equal(q.about(59), '<1 min');
    assert.equal(q.about(61), '~2 min');
    assert.equal(q.about(89 * 60), '~89 min');
    assert.equal(q.about(125 * 60), '~2 h 5 min');
    assert.equal(q.about(3 * 3600), '~3 h');
    assert.equal(q.about(50 * 3600), '~2 d 2 h');
    assert.equal(q.about(48 * 3600), '~2 d');
  });

  const NOW = Date.parse('2025-03-01T12:00:00Z');
  test('waitingSentence: the annotation with the estimate, else the QuotaReserved message', () => {
    const wl = (annotations, conditions) => ({ metadata: { annotations }, status: { conditions } });
    assert.equal(q.waitingSentence(wl({ 'mpijob.io/waiting': 'behind 2 jobs', [ANNOTATION_ESTIMATED_START]: '2025-03-01T12:10:00Z' }), NOW),
      'behind 2 jobs; estimated start in ~10 min');
    assert.equal(q.waitingSentence(wl({ 'mpijob.io/waiting': 'full' }), NOW), 'full; no estimate');
    assert.equal(q.waitingSentence(wl({}, [{ type: 'QuotaReserved', status: 'False', message: 'insufficient quota' }]), NOW), 'insufficient quota');
    assert.equal(q.waitingSentence(wl({}, [{ type: 'QuotaReserved', status: 'True', message: 'reserved' }]), NOW), '');
  });

  const wl = (name, { ns = 'a', queue = 'lq', priority, created = '2025-03-01T10:00:00Z', conditions = [], active } = {}) => ({
    metadata: { name, namespace: ns, creationTimestamp: created, ownerReferences: [{ kind: 'TrainJob', name: `job-${name}` }] },
    spec: { queueName: queue, priority, active },
    status: { conditions },
  });

  test('waitingSince: the last eviction or requeue when later than creation', () => {
    const w = wl('x', { conditions: [{ type: 'Evicted', status: 'True', lastTransitionTime: '2025-03-01T11:00:00Z' },
      { type: 'Requeued', status: 'False', lastTransitionTime: '2025-03-01T11:30:00Z' }] });
    assert.equal(q.waitingSince(w), Date.parse('2025-03-01T11:00:00Z'));
  });

  test('isPending: not reserved, not finished, not deactivated', () => {
    assert.equal(q.isPending(wl('x')), true);
    assert.equal(q.isPending(wl('x', { conditions: [{ type: 'QuotaReserved', status: 'True' }] })), false);
    assert.equal(q.isPending(wl('x', { conditions: [{ type: 'Finished', status: 'True' }] })), false);
    assert.equal(q.isPending(wl('x', { active: false })), false);
  });

  test('pendingFromWorkloads: Kueue\'s order (priority, then wait) and positions from 0', () => {
    const workloads = [
      wl('late', { created: '2025-03-01T11:00:00Z' }),
      wl('early', { created: '2025-03-01T09:00:00Z' }),
      wl('urgent', { priority: 10, created: '2025-03-01T11:30:00Z' }),
      wl('admitted', { conditions: [{ type: 'QuotaReserved', status: 'True' }] }),
      wl('elsewhere', { ns: 'b', queue: 'lq' }),
    ];
    const toCq = new Map([['a/lq', 'cq'], ['b/lq', 'other']]);
    const inCq = q.pendingFromWorkloads(workloads, { clusterQueue: 'cq' }, toCq);
    assert.deepEqual(inCq.map((p) => [p.metadata.name, p.positionInClusterQueue, p.positionInLocalQueue]),
      [['urgent', 0, null], ['early', 1, null], ['late', 2, null]]);
    assert.equal(inCq[0].priority, 10);
    const inLq = q.pendingFromWorkloads(workloads, { namespace: 'b', localQueue: 'lq' }, toCq);
    assert.deepEqual(inLq.map((p) => [p.metadata.name, p.positionInClusterQueue, p.positionInLocalQueue]), [['elsewhere', null, 0]]);
  });

  test('jobOf: the TrainJob owner, else the first owner', () => {
    assert.deepEqual(q.jobOf({ metadata: { namespace: 'a', ownerReferences: [{ kind: 'X', name: 'x' }, { kind: 'TrainJob', name: 'pi' }] } }),
      { namespace: 'a', name: 'pi', kind: 'TrainJob' });
    assert.deepEqual(q.jobOf({ metadata: { namespace: 'a' } }), { namespace: 'a', name: '', kind: '' });
  });
});
