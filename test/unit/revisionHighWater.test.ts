// The revision high-water file (lock/revisionHighWater.ts): a grant waits for
// it, so a write goes in place to one of two checksummed slots (one
// fdatasync); a write torn by a crash leaves the previous durable mark.
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { decodeMarkFile, encodeSlot, RevisionHighWater, SLOT_BYTES } from '../../lock/revisionHighWater.js';
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

  it('group commit: grants arriving during a write share the next one, and none resolves before the file holds its revision', async () => {
    const file = fresh();
    // A slow disk: each write waits at its own gate until the test opens it.
    const gates: Array<() => void> = [];
    const hw = new RevisionHighWater(file, { beforeWrite: () => new Promise<void>((open) => gates.push(open)) });
    const onDisk = (): bigint => decodeMarkFile(readFileSync(file))?.mark.guard ?? 0n;
    const until = async (what: string, cond: () => boolean): Promise<void> => {
      for (let i = 0; i < 2_000 && !cond(); i++) await new Promise((r) => setTimeout(r, 1));
      assert.ok(cond(), what);
    };
    /** Each grant's revision, and the durable guard the file held when its persist resolved. */
    const resolved = new Map<bigint, bigint>();
    const grant = (revision: bigint): Promise<void> => {
      hw.see(revision, 1);
      hw.granted(revision);
      return hw.persist().then(() => {
        resolved.set(revision, onDisk());
      });
    };

    const first = grant(10n); // write 1 starts and blocks
    await until('write 1 started', () => gates.length === 1);
    const during1 = Array.from({ length: 20 }, (_, i) => grant(11n + BigInt(i))); // 11..30 arrive while it is in flight
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(resolved.size, 0, 'a grant resolved before any write was durable');

    gates[0]!(); // write 1 (guard 10) lands: only grant 10 may go; 11..30 wait for the next write, which starts now
    await first;
    await until('write 2 started', () => gates.length === 2);
    assert.deepEqual([...resolved.keys()], [10n]);
    const during2 = [grant(31n), grant(32n)]; // arrive while write 2 is in flight: they wait for write 3
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual([...resolved.keys()], [10n], 'a grant resolved before the write carrying its revision was durable');

    gates[1]!();
    await until('every grant that waited for write 2 resolved with it', () => resolved.size === 21);
    await Promise.all(during1);
    await until('write 3 started', () => gates.length === 3);
    assert.ok(![...resolved.keys()].includes(31n) && ![...resolved.keys()].includes(32n), 'grants 31 and 32 resolved with write 2, which did not carry them');
    gates[2]!();
    await until('grants 31 and 32 resolved with write 3', () => resolved.size === 23);
    await Promise.all(during2);

    assert.equal(hw.writes, 3, '23 grants, three writes: each write shared by every grant that waited for it');
    for (const [revision, durable] of resolved) assert.ok(durable >= revision, `grant ${revision} resolved while the file held guard ${durable}`);
    assert.equal(resolved.size, 23);
    await hw.close();
  });
});
