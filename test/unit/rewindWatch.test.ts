// The rewind watcher's decision (tailer/recovery/rewindWatch.ts): etcd's position
// against what a running tailer captured.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rewoundBy } from '../../tailer/recovery/rewindWatch.js';

describe('rewoundBy', () => {
  it('names another cluster id first, then a head below the captured revision; nothing else', () => {
    assert.match(rewoundBy({ head: 500n, clusterId: 'b' }, 'a', 100n) ?? '', /cluster id a → b/);
    assert.match(rewoundBy({ head: 99n, clusterId: 'a' }, 'a', 100n) ?? '', /head 99 below the captured revision 100/);
    assert.equal(rewoundBy({ head: 100n, clusterId: 'a' }, 'a', 100n), undefined, 'at the captured revision: nothing rewound');
    assert.equal(rewoundBy({ head: 1_000_100n, clusterId: 'a' }, 'a', 100n), undefined, 'a head past the checkpoint is for the start decision to judge');
  });
});
