// src/details/podLogs.js: every pod's log over one request, joined by new pods, resumed where each was.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { src } from '../test-support/src.mjs';

const { PodLogs, MAX_PODS } = await src('details/podLogs.js');
const { MergedLog } = await src('details/logStore.js');
const { ApiError } = await src('api.js');

const JOINED = 250; // ms: past the follower's JOIN_MS
const RETRIED = 1300; // ms: past its RETRY_MS
const sleep = (ms) => new Promise((r) => { setTimeout(r, ms); });
const pod = (name) => ({ metadata: { uid: `uid-${name}`, name } });
const event = (stream, type, extra = {}) => JSON.stringify({ stream, type, ...extra });

/** A stand-in for api.js's streamLines: each request stays open until the test ends or fails it. */
function fakeStream() {
  const requests = [];
  const stream = (path, onLine, { signal, headers }) => new Promise((resolve, reject) => {
    const url = new URL(path, 'https://x');
    const req = { path, pods: url.searchParams.getAll('pod'), url, headers, signal, onLine, end: resolve, fail: reject };
    signal.addEventListener('abort', () => reject(new Error('aborted')));
    requests.push(req);
  });
  return { requests, stream };
}

function follower() {
  const log = new MergedLog();
  const states = {};
  const fake = fakeStream();
  const f = new PodLogs('team-a', log, (p, s) => { states[p.name] = s; }, fake.stream);
  return { f, log, states, requests: fake.requests };
}

describe('PodLogs', () => {
  test('pods that appear together share one request; lines, ends and errors go to their pods', async () => {
    const { f, log, states, requests } = follower();
    f.add([pod('launcher'), pod('node-0'), pod('node-1'), pod('node-2')]);
    f.add([pod('launcher')]); // already followed: nothing new
    await sleep(JOINED);
    assert.equal(requests.length, 1);
    const [r] = requests;
    assert.equal(r.url.pathname, '/dashboard/api/namespaces/team-a/logs');
    assert.equal(r.url.searchParams.get('timestamps'), 'true');
    assert.deepEqual(r.pods, ['launcher', 'node-0', 'node-1', 'node-2']);
    assert.equal(r.headers['X-Mpijob-Log-Ranks'], 'true');
    assert.deepEqual(states, { launcher: 'live', 'node-0': 'live', 'node-1': 'live', 'node-2': 'live' });
    r.onLine(event(1, 'LINES', { lines: ['2025-03-01T10:00:01Z - sshd: Server listening'] }));
    r.onLine(event(0, 'LINES', { lines: ['2025-03-01T10:00:02Z 0 rank 0 says hi', '2025-03-01T10:00:03Z 1 rank 1 says hi'] }));
    r.onLine(event(1, 'END'));
    r.onLine(event(2, 'ERROR', { object: { code: 404 } }));
    r.onLine(event(3, 'ERROR', { object: { code: 403 } }));
    r.onLine('');
    assert.deepEqual(log.lines.map((l) => [l.pod, l.text]), [
      ['node-0', 'sshd: Server listening'], ['launcher', 'rank 0 says hi'], ['launcher', 'rank 1 says hi']]);
    assert.deepEqual(states, { launcher: 'live', 'node-0': 'ended', 'node-1': 'ended', 'node-2': 'error' });
    r.onLine(event(0, 'END'));
    r.end();
    await sleep(RETRIED);
    assert.equal(requests.length, 1, 'every pod ended: nothing to ask again');
    f.close();
    clearTimeout(log.timer);
  });

  test('a pod that appears joins a new request, where the others resume after the lines they have', async () => {
    const { f, log, requests } = follower();
    f.add([pod('launcher'), pod('node-0')]);
    await sleep(JOINED);
    requests[0].onLine(event(0, 'LINES', { lines: ['2025-03-01T10:00:01Z - one', '2025-03-01T10:00:02Z - two'] }));
    requests[0].onLine(event(1, 'END'));
    f.add([pod('launcher'), pod('node-0'), pod('node-1')]);
    await sleep(JOINED);
    assert.equal(requests.length, 2);
    assert.ok(requests[0].signal.aborted, 'the old request is closed');
    assert.deepEqual(requests[1].pods, ['launcher:2', 'node-1']); // node-0 ended: not asked again
    requests[1].onLine(event(0, 'LINES', { lines: ['2025-03-01T10:00:03Z - three'] }));
    assert.deepEqual(log.lines.map((l) => l.text), ['one', 'two', 'three']);
    f.close();
    assert.ok(requests[1].signal.aborted);
    clearTimeout(log.timer);
  });

  test('a request that ends before its pods did is sent again; one the server refuses is not', async () => {
    const { f, log, states, requests } = follower();
    f.add([pod('launcher')]);
    await sleep(JOINED);
    requests[0].onLine(event(0, 'LINES', { lines: ['2025-03-01T10:00:01Z - one'] }));
    requests[0].fail(new TypeError('network error')); // a dropped connection
    await sleep(RETRIED);
    assert.equal(requests.length, 2);
    assert.deepEqual(requests[1].pods, ['launcher:1']);
    requests[1].fail(new ApiError(401, { message: 'the session ended' }));
    await sleep(RETRIED);
    assert.equal(requests.length, 2);
    assert.equal(states.launcher, 'error');
    f.close();
    clearTimeout(log.timer);
  });

  test('more pods than one request may follow are split between requests', async () => {
    const { f, log, requests } = follower();
    f.add(Array.from({ length: MAX_PODS + 3 }, (_, i) => pod(`node-${i}`)));
    await sleep(JOINED);
    assert.deepEqual(requests.map((r) => r.pods.length), [MAX_PODS, 3]);
    f.close();
    assert.ok(requests.every((r) => r.signal.aborted));
    clearTimeout(log.timer);
  });
});
