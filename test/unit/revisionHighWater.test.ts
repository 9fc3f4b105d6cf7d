// The revision high-water file (lock/revisionHighWater.ts): a grant waits for
// it, so a write goes in place to one of two checksummed slots (one
// fdatasync); a write torn by a crash leaves the previous durable mark.
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { encodeSlot, RevisionHighWater, SLOT_BYTES } from '../../lock/revisionHighWater.js';
import { tempDir } from '../support/env.js';

const tmp = tempDir('lockaudit-highwater-');
after(() => tmp.remove());
let n = 0;
const fresh = (): string => path.join(tmp.dir, `m${n++}.highwater.json`);

async function granted(hw: RevisionHighWater, revision: bigint): Promise<void> {
  hw.see(revision, 1);
  hw.granted(revision);
  await hw.persist();
}

/** Overwrites slot `i` with garbage, as a write torn by a crash might leave it. */
function tear(file: string, i: number): void {
  const bytes = readFileSync(file);
  bytes.fill(0x7a, i * SLOT_BYTES + 3, i * SLOT_BYTES + 40);
  writeFileSync(file, bytes);
}

describe('revision high-water file', () => {
  it('persists in place after the first write: the file is not replaced on every grant', async () => {
    const file = fresh();
    const hw = new RevisionHighWater(file);
    await granted(hw, 10n);
    const inode = statSync(file).ino;
    await granted(hw, 11n);
    await granted(hw, 12n);
    assert.equal(statSync(file).ino, inode);
    assert.equal(statSync(file).size, 2 * SLOT_BYTES);
    assert.deepEqual(new RevisionHighWater(file).mark, { revision: 12n, epoch: 1, guard: 12n });
  });

  it('a torn latest slot leaves the previous durable mark, also for writes after a reload', async () => {
    const file = fresh();
    const hw = new RevisionHighWater(file);
    await granted(hw, 10n); // makes the file: both slots 10
    await granted(hw, 20n); // slot 0
    await granted(hw, 30n); // slot 1
    tear(file, 1);
    assert.deepEqual(new RevisionHighWater(file).mark, { revision: 20n, epoch: 1, guard: 20n });

    // Reloaded, the next write must go to the slot not holding the best mark.
    const file2 = fresh();
    const a = new RevisionHighWater(file2);
    await granted(a, 10n);
    await granted(a, 20n); // slot 0 holds the best mark now
    const b = new RevisionHighWater(file2);
    await granted(b, 40n);
    const slot = readFileSync(file2).subarray(0, SLOT_BYTES);
    assert.deepEqual(slot, encodeSlot({ revision: 20n, epoch: 1, guard: 20n }), 'the reloaded best slot was overwritten');
  });

  it('reads the one-document format of earlier versions and converts it on the first write', async () => {
    const file = fresh();
    writeFileSync(file, JSON.stringify({ v: 1, revision: '77', epoch: 2, guard: '70' }));
    const hw = new RevisionHighWater(file);
    assert.deepEqual(hw.mark, { revision: 77n, epoch: 2, guard: 70n });
    hw.see(80n, 2);
    await hw.persist();
    assert.equal(statSync(file).size, 2 * SLOT_BYTES);
    assert.deepEqual(new RevisionHighWater(file).mark, { revision: 80n, epoch: 2, guard: 70n });
  });

  it('refuses to start on a file with no valid slot', async () => {
    const file = fresh();
    await granted(new RevisionHighWater(file), 5n);
    tear(file, 0);
    tear(file, 1);
    assert.throws(() => new RevisionHighWater(file), /is not a revision high-water mark/);
  });
});
