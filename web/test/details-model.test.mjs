// src/details/model.js (pods, hostfile, ranks, failures, phases) and src/details/logStore.js (merged logs).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { src } from '../test-support/src.mjs';

const d = await src('details/model.js');
const { DOCS, GPU, LABEL_RJOB } = await src('model.js');
const logs = await src('details/logStore.js');

function pod(name, { role = 'node', index = 0, hostname, subdomain = 'pi', state, phase, deletion, created, resources } = {}) {
  return {
    metadata: { name, creationTimestamp: created, deletionTimestamp: deletion,
      labels: { [LABEL_RJOB]: role, [d.LABEL_INDEX]: String(index) } },
    spec: { hostname: hostname ?? name, subdomain, containers: [{ resources }] },
    status: { phase, containerStatuses: state ? [{ state }] : undefined },
  };
}

describe('pods', () => {
  test('sortPods: launcher first, then nodes by completion index (not by name)', () => {
    const pods = [pod('pi-node-0-10', { index: 10 }), pod('pi-node-0-2', { index: 2 }), pod('pi-launcher-0-0', { role: 'launcher' })];
    assert.deepEqual(d.sortPods(pods).map((p) => p.metadata.name), ['pi-launcher-0-0', 'pi-node-0-2', 'pi-node-0-10']);
    assert.equal(pods[0].metadata.name, 'pi-node-0-10'); // a copy is sorted
  });

  test('podStatus reads like kubectl\'s STATUS column', () => {
    assert.equal(d.podStatus(pod('p', { deletion: '2025-01-01T00:00:00Z', state: { running: {} } })), 'Terminating');
    assert.equal(d.podStatus(pod('p', { state: { waiting: { reason: 'ImagePullBackOff' } } })), 'ImagePullBackOff');
    assert.equal(d.podStatus(pod('p', { state: { terminated: { reason: 'OOMKilled', exitCode: 137 } } })), 'OOMKilled');
    assert.equal(d.podStatus(pod('p', { state: { terminated: { signal: 9 } } })), 'Signal:9');
    assert.equal(d.podStatus(pod('p', { state: { terminated: { exitCode: 3 } } })), 'ExitCode:3');
    assert.equal(d.podStatus(pod('p', { state: { running: {} } })), 'Running');
    assert.equal(d.podStatus(pod('p', { phase: 'Pending' })), 'Pending');
    assert.equal(d.podStatus({ metadata: {}, spec: {}, status: {} }), 'Pending');
  });

  test('terminated: by the container\'s state or the pod\'s phase', () => {
    assert.equal(d.terminated(pod('p', { state: { terminated: { exitCode: 0 } } })), true);
    assert.equal(d.terminated(pod('p', { phase: 'Failed' })), true);
    assert.equal(d.terminated(pod('p', { phase: 'Running', state: { running: {} } })), false);
  });

  test('hostOf joins hostname and subdomain; podResources prefers limits', () => {
    assert.equal(d.hostOf(pod('pi-node-0-1')), 'pi-node-0-1.pi');
    assert.equal(d.hostOf(pod('x', { hostname: '' })), '');
    const p = pod('p', { resources: { limits: { cpu: '2', [GPU]: '1' }, requests: { cpu: '1', memory: '1Gi' } } });
    assert.deepEqual(d.podResources(p), { cpu: '2', memory: '1Gi', gpus: '1' });
  });
});

describe('MPI slots and ranks', () => {
  const runtime = { spec: { mlPolicy: { numProcPerNode: 4, mpi: { numProcPerNode: 8 } } } };
  test('procsPerNode: the job\'s, else the runtime\'s, else its mpi policy\'s, else 1', () => {
    assert.equal(d.procsPerNode({ spec: { trainer: { numProcPerNode: 2 } } }, runtime), 2);
    assert.equal(d.procsPerNode({ spec: {} }, runtime), 4);
    assert.equal(d.procsPerNode({ spec: {} }, { spec: { mlPolicy: { mpi: { numProcPerNode: 8 } } } }), 8);
    assert.equal(d.procsPerNode({ spec: {} }, null), 1);
  });

  test('parseHostfile: comments and blank lines dropped, slots=N read, 1 by default', () => {
    const text = '# hosts\npi-node-0-0.pi slots=4\n\n  pi-node-0-1.pi   slots=2 max_slots=9 # two\npi-launcher-0-0.pi\n';
    assert.deepEqual(d.parseHostfile(text), [
      { host: 'pi-node-0-0.pi', slots: 4 }, { host: 'pi-node-0-1.pi', slots: 2 }, { host: 'pi-launcher-0-0.pi', slots: 1 }]);
    assert.deepEqual(d.parseHostfile(null), []);
  });

  const launcher = pod('pi-launcher-0-0', { role: 'launcher' });
  const n0 = pod('pi-node-0-0', { index: 0 });
  const n1 = pod('pi-node-0-1', { index: 1 });

  test('rankRanges with a hostfile: the launcher\'s own host first, then the hostfile\'s order', () => {
    const hostfile = d.parseHostfile('pi-node-0-1.pi slots=2\npi-node-0-0.pi slots=3\npi-launcher-0-0.pi slots=1');
    const r = d.rankRanges([n0, n1, launcher], hostfile, 99, true);
    assert.deepEqual(Object.fromEntries(r), {
      'pi-launcher-0-0': { first: 0, last: 0 }, 'pi-node-0-1': { first: 1, last: 2 }, 'pi-node-0-0': { first: 3, last: 5 },
    });
  });

  test('rankRanges without a hostfile: perNode each, the launcher only when it runs ranks', () => {
    assert.deepEqual(Object.fromEntries(d.rankRanges([n1, launcher, n0], [], 2, false)), {
      'pi-node-0-0': { first: 0, last: 1 }, 'pi-node-0-1': { first: 2, last: 3 } });
    assert.deepEqual(Object.fromEntries(d.rankRanges([n1, launcher, n0], null, 1, true)), {
      'pi-launcher-0-0': { first: 0, last: 0 }, 'pi-node-0-0': { first: 1, last: 1 }, 'pi-node-0-1': { first: 2, last: 2 } });
  });
});

describe('failures', () => {
  test('parseFailure splits mpijob\'s message: class, summary, fix, pod, rank, host, guide anchor', () => {
    // the shape of mpijob/api/trainer/failures.py Failure.message
    const msg = 'OOMKilled: rank 3 on pod pi-node-0-1 (host pi-node-0-1.pi) ran out of memory. '
      + 'Fix: ask for more memory per node. See docs/troubleshooting.md#oom-killed';
    assert.deepEqual(d.parseFailure(msg), {
      classified: true, reason: 'OOMKilled', summary: 'rank 3 on pod pi-node-0-1 (host pi-node-0-1.pi) ran out of memory',
      fix: 'ask for more memory per node.', pod: 'pi-node-0-1', rank: '3', host: 'pi-node-0-1.pi',
      anchor: 'oom-killed', guide: `${DOCS}/troubleshooting.md#oom-killed`,
    });
  });

  test('without "See" the class\'s own anchor is the guide', () => {
    const f = d.parseFailure('WireUpTimeout: not every rank ran within 300s. Fix: check the network.');
    assert.equal(f.anchor, 'wire-up-timeout');
    assert.equal(f.fix, 'check the network.');
    assert.equal(f.pod, '');
  });

  test('any other message is not classified and shown as it is', () => {
    assert.deepEqual(d.parseFailure('BackoffLimitExceeded: Job has reached the specified backoff limit'),
      { classified: false, message: 'BackoffLimitExceeded: Job has reached the specified backoff limit' });
    assert.deepEqual(d.parseFailure(undefined), { classified: false, message: '' });
  });

  test('every failure anchor is a heading of docs/troubleshooting.md, and mpijob\'s ANCHORS are all here', () => {
    const root = new URL('../../', import.meta.url);
    const guide = readFileSync(new URL('docs/troubleshooting.md', root), 'utf8');
    const slug = (h) => h.trim().toLowerCase().replace(/[^\w\s-]/g, '').replace(/\s/g, '-');
    const headings = new Set([...guide.matchAll(/^#{1,6} (.+)$/gm)].map((x) => slug(x[1])));
    for (const [cls, anchor] of Object.entries(d.FAILURE_ANCHORS)) assert.ok(headings.has(anchor), `${cls}: #${anchor}`);
    const py = readFileSync(new URL('mpijob/api/trainer/failures.py', root), 'utf8');
    const block = /^ANCHORS = \{([\s\S]*?)^\}/m.exec(py)[1];
    const pyAnchors = [...block.matchAll(/: "([\w-]+)"/g)].map((x) => x[1]);
    assert.ok(pyAnchors.length >= 10);
    for (const a of pyAnchors) assert.ok(Object.values(d.FAILURE_ANCHORS).includes(a), `#${a} of failures.py`);
  });
});

describe('phases, Workload, events', () => {
  const job = { metadata: { name: 'pi', uid: 'j1', creationTimestamp: '2025-03-01T10:00:00Z' },
    status: { conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: '2025-03-01T10:30:00Z' }] } };

  test('phaseTimes: admitted from the Workload, else the first pod; running from the launcher', () => {
    const launcher = pod('pi-launcher-0-0', { role: 'launcher', created: '2025-03-01T10:02:00Z',
      state: { terminated: { startedAt: '2025-03-01T10:03:00Z' } } });
    const node = pod('pi-node-0-0', { created: '2025-03-01T10:01:00Z' });
    const wl = { status: { conditions: [{ type: 'QuotaReserved', status: 'True', lastTransitionTime: '2025-03-01T10:00:30Z' }] } };
    assert.deepEqual(d.phaseTimes(job, wl, [launcher, node]), {
      created: '2025-03-01T10:00:00Z', admitted: '2025-03-01T10:00:30Z', running: '2025-03-01T10:03:00Z', finished: '2025-03-01T10:30:00Z' });
    assert.equal(d.phaseTimes(job, null, [launcher, node]).admitted, '2025-03-01T10:01:00Z');
    assert.deepEqual(d.phaseTimes({ metadata: { creationTimestamp: 'c' } }, null, []), { created: 'c', admitted: null, running: null, finished: null });
  });

  test('workloadOf: owned by the job\'s uid, the newest', () => {
    const w = (name, uid, t) => ({ metadata: { name, creationTimestamp: t, ownerReferences: [{ uid }] } });
    const ws = [w('old', 'j1', '2025-03-01T10:00:00Z'), w('new', 'j1', '2025-03-01T11:00:00Z'), w('other', 'j2', '2025-03-01T12:00:00Z')];
    assert.equal(d.workloadOf(job, ws).metadata.name, 'new');
    assert.equal(d.workloadOf(job, [ws[2]]), null);
  });

  test('ownsEvent: the job by uid (not a namesake), its pods, its Workloads', () => {
    const ev = (o) => ({ involvedObject: o });
    const pods = new Set(['pi-node-0-0']);
    const wls = new Set(['trainjob-pi-1']);
    assert.equal(d.ownsEvent(ev({ kind: 'TrainJob', name: 'pi', uid: 'j1' }), job, pods, wls), true);
    assert.equal(d.ownsEvent(ev({ kind: 'TrainJob', name: 'pi', uid: 'old' }), job, pods, wls), false);
    assert.equal(d.ownsEvent(ev({ kind: 'Pod', name: 'pi-node-0-0' }), job, pods, wls), true);
    assert.equal(d.ownsEvent(ev({ kind: 'Pod', name: 'pi-launcher-0-0-abc' }), job, new Set(), wls), true);
    assert.equal(d.ownsEvent(ev({ kind: 'Pod', name: 'pipe-node-0-0' }), job, new Set(), wls), false);
    assert.equal(d.ownsEvent(ev({ kind: 'Workload', name: 'trainjob-pi-1' }), job, pods, wls), true);
    assert.equal(d.ownsEvent(ev({ kind: 'Node', name: 'pi' }), job, pods, wls), false);
  });

  test('humanBytes in binary units', () => {
    assert.equal(d.humanBytes(512), '512 B');
    assert.equal(d.humanBytes(1536), '1.5 KiB');
    assert.equal(d.humanBytes(300 * 2 ** 20), '300 MiB');
    assert.equal(d.humanBytes(null), '');
  });
});

describe('merged logs', () => {
  test('parseLine: with a rank, with "-", and without the ranks header', () => {
    assert.deepEqual(logs.parseLine('2025-03-01T10:00:00.123456789Z 3 hello world'), { ts: '2025-03-01T10:00:00.123456789Z', rank: '3', text: 'hello world' });
    assert.deepEqual(logs.parseLine('2025-03-01T10:00:00Z - x'), { ts: '2025-03-01T10:00:00Z', rank: null, text: 'x' });
    assert.deepEqual(logs.parseLine('2025-03-01T10:00:00Z plain text'), { ts: '2025-03-01T10:00:00Z', rank: null, text: 'plain text' });
  });

  test('timeKey keeps the sub-millisecond digits that order lines', () => {
    const a = logs.timeKey('2025-03-01T10:00:00.000100Z');
    const b = logs.timeKey('2025-03-01T10:00:00.000200Z');
    assert.ok(a < b);
    assert.equal(Math.floor(a), Date.parse('2025-03-01T10:00:00Z'));
    assert.equal(logs.timeKey('not a time'), 0);
  });

  test('add places a late line by its time; addAll places a batch; text writes them out', () => {
    const log = new logs.MergedLog();
    log.add('u1', 'a', '2025-03-01T10:00:02Z 0 two');
    log.add('u2', 'b', '2025-03-01T10:00:01Z 1 one');
    log.add('u2', 'b', '2025-03-01T10:00:03Z 1 three');
    assert.deepEqual(log.lines.map((l) => l.text), ['one', 'two', 'three']);
    log.addAll('u2', 'b', ['2025-03-01T10:00:00Z 1 zero', '', '2025-03-01T10:00:04Z 1 four']);
    assert.deepEqual(log.lines.map((l) => l.text), ['zero', 'one', 'two', 'three', 'four']);
    assert.equal(log.text(log.lines.slice(0, 2)), '2025-03-01T10:00:00Z b 1 zero\n2025-03-01T10:00:01Z b 1 one\n');
    assert.equal(log.text([]), '');
    clearTimeout(log.timer);
  });

  test('a large batch (a whole log) is merged by time, equal times after the lines already there', () => {
    const log = new logs.MergedLog();
    const at = (i) => `2025-03-01T10:00:00.${String(i).padStart(6, '0')}Z`; // microseconds: a key's precision
    log.addAll('u1', 'launcher', Array.from({ length: 100 }, (_, i) => `${at(2 * i)} 0 l${i}`));
    log.addAll('u2', 'node', Array.from({ length: 100 }, (_, i) => `${at(2 * i + 1)} - n${i}`));
    log.addAll('u3', 'other', Array.from({ length: 70 }, (_, i) => `${at(2 * i)} - o${i}`));
    const keys = log.lines.map((l) => l.key);
    assert.deepEqual(keys, [...keys].sort((a, b) => a - b));
    assert.equal(log.lines.length, 270);
    assert.deepEqual(log.lines.slice(0, 4).map((l) => l.text), ['l0', 'o0', 'n0', 'l1']);
    clearTimeout(log.timer);
  });

  test('a late line of the same time goes after the ones already there (arrival order)', () => {
    const log = new logs.MergedLog();
    log.add('u1', 'a', '2025-03-01T10:00:02Z 0 first');
    log.add('u1', 'a', '2025-03-01T10:00:03Z 0 later');
    log.add('u2', 'b', '2025-03-01T10:00:02Z 1 second');
    assert.deepEqual(log.lines.map((l) => l.text), ['first', 'second', 'later']);
    clearTimeout(log.timer);
  });

  test('listeners hear of changes once per burst, with the version', async () => {
    const log = new logs.MergedLog();
    const heard = [];
    const stop = log.subscribe((v) => heard.push(v));
    log.add('u', 'p', '2025-03-01T10:00:00Z x');
    log.add('u', 'p', '2025-03-01T10:00:01Z y');
    await new Promise((r) => { setTimeout(r, 150); });
    assert.deepEqual(heard, [2]);
    stop();
    log.add('u', 'p', '2025-03-01T10:00:02Z z');
    await new Promise((r) => { setTimeout(r, 150); });
    assert.deepEqual(heard, [2]);
  });

  test('past MAX_LINES the oldest lines are dropped and counted', () => {
    const log = new logs.MergedLog();
    const n = logs.MAX_LINES + 3;
    log.addAll('u', 'p', Array.from({ length: n }, (_, i) => `2025-03-01T10:00:00.${String(i).padStart(9, '0')}Z l${i}`));
    assert.equal(log.lines.length, logs.MAX_LINES);
    assert.equal(log.dropped, 3);
    assert.equal(log.lines[0].text, 'l3');
    clearTimeout(log.timer);
  });
});
