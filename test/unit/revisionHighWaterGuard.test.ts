// The grant guard in the high-water mark: it survives a restart of the
// process, never moves down within an epoch, and restarts at 0 with an epoch
// advance (the restored cluster's guard key is lower than any old grant).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { RevisionHighWater } from '../../lock/revisionHighWater.js';

const dir = mkdtempSync(path.join(tmpdir(), 'lockaudit-hw-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('RevisionHighWater', () => {
  it('keeps the latest grant revision as the guard across a restart, never lowering it', async () => {
    const file = path.join(dir, 'a.highwater.json');
    const hw = new RevisionHighWater(file);
    assert.deepEqual(hw.mark, { revision: 0n, epoch: 0, guard: 0n });
    hw.see(10n, 1);
    hw.granted(12n);
    hw.granted(11n); // a slower grant's confirmation arriving late
    hw.see(15n, 1);
    await hw.persist();
    const again = new RevisionHighWater(file);
    assert.deepEqual(again.mark, { revision: 15n, epoch: 1, guard: 12n });
  });

  it('a grant above every revision seen raises the mark too (so it is persisted)', async () => {
    const file = path.join(dir, 'b.highwater.json');
    const hw = new RevisionHighWater(file);
    hw.see(5n, 1);
    await hw.persist();
    hw.granted(9n);
    await hw.persist();
    assert.deepEqual(new RevisionHighWater(file).mark, { revision: 9n, epoch: 1, guard: 9n });
  });

  it('a grant another process made (the shared high-water) raises revision and guard, or the epoch; never lowers', () => {
    const hw = new RevisionHighWater(path.join(dir, 'shared.highwater.json'));
    hw.see(50n, 1);
    hw.granted(40n);
    hw.raise(45n, 1); // above this process's guard, below what it saw
    assert.deepEqual(hw.mark, { revision: 50n, epoch: 1, guard: 45n });
    hw.raise(70n, 1);
    assert.deepEqual(hw.mark, { revision: 70n, epoch: 1, guard: 70n });
    hw.raise(60n, 1);
    hw.raise(900n, 0); // an older epoch: below every token of epoch 1
    assert.deepEqual(hw.mark, { revision: 70n, epoch: 1, guard: 70n });
    hw.raise(8n, 2); // a later epoch: its revisions may restart lower
    assert.deepEqual(hw.mark, { revision: 8n, epoch: 2, guard: 8n });
  });

  it('an epoch advance restarts the guard at 0', () => {
    const hw = new RevisionHighWater(path.join(dir, 'c.highwater.json'));
    hw.see(100n, 1);
    hw.granted(100n);
    hw.rebase(40n, 2);
    assert.deepEqual(hw.mark, { revision: 40n, epoch: 2, guard: 0n });
  });

  it('reads a mark written before the guard existed as guard 0', () => {
    const file = path.join(dir, 'd.highwater.json');
    writeFileSync(file, JSON.stringify({ v: 1, revision: '77', epoch: 3 }));
    assert.deepEqual(new RevisionHighWater(file).mark, { revision: 77n, epoch: 3, guard: 0n });
    assert.match(readFileSync(file, 'utf8'), /"77"/);
  });

  it('refuses to start on a damaged mark rather than reopen a rewound cluster', () => {
    const file = path.join(dir, 'e.highwater.json');
    writeFileSync(file, '{"v":1,"revision":"12","epoch":1,"guard":"-3"}');
    assert.throws(() => new RevisionHighWater(file), /not a revision high-water mark/);
  });
});
