// src/details/stacks.js: the Stacks tab's endpoint, access review and words (the merge is the server's).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { src } from '../test-support/src.mjs';

const s = await src('details/stacks.js');

describe('stacks', () => {
  test('the endpoint and the right it takes', () => {
    assert.equal(s.stacksPath('team-a', 'pi'), '/dashboard/api/namespaces/team-a/trainjobs/pi/stacks');
    assert.deepEqual(s.execAttributes('team-a'), { verb: 'create', resource: 'pods', subresource: 'exec', namespace: 'team-a' });
  });

  test('a frame and the summary read as the CLI prints them', () => {
    assert.equal(s.frameText({ function: 'read_batch', where: 'prog.py:4' }), 'read_batch (prog.py:4)');
    assert.equal(s.frameText({ function: 'main', where: '' }), 'main');
    const dump = { ranks: 4, seconds: 0.5, groups: [{}, {}] };
    assert.equal(s.summary(dump), '4 ranks read in 0.5s: 2 distinct stacks, the odd ones out first, each from the '
      + 'outermost call down to where the rank is now.');
    assert.match(s.summary({ ranks: 1, seconds: 0.1, groups: [{}] }), /1 distinct stack,/);
  });
});
