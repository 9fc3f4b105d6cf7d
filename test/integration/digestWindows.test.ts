// A digest period read in windows bounded by bytes as well as revisions
// (issue 42 item 1): etcd takes values up to 1.5 MiB, and 20 000 revisions of
// such values in one read would be tens of gigabytes in the worker or in
// verify. Values of 1 MiB written under the keyspace (what our API would
// never write) are read a few at a time, and the digest is the same as one
// read with no byte bound; a raw-events export is planned in chunks bounded by bytes the same way.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_CHUNK_BYTES, planEventsExport } from '../../exporters/compliance/exportPlans.js';
import { hashPeriodEvents, WINDOW_BYTES } from '../../exporters/digests/periodContent.js';
import { insertEvents } from '../support/exportData.js';
import { fileStore } from '../support/fileStore.js';

const db = fileStore();
const DAY1 = Date.parse('2026-03-01T00:00:00Z');
const MIB = 1024 * 1024;

describe('digest windows', { timeout: 180_000 }, () => {
  it('read at most the byte budget per window (one revision whole), and hash the same period as one unbounded read', async () => {
    const rows = 200;
    await insertEvents(db.store, 'big', rows, DAY1, 10);
    // Every tenth row's value is 1 MiB: 20 MiB in all.
    await db.store.command(
      "ALTER TABLE {db:Identifier}.events UPDATE value = repeat('vv', 524288) WHERE cluster = 'big' AND revision % 10 = 0",
      {},
      { mutations_sync: '2' },
    );
    await db.store.command("INSERT INTO {db:Identifier}.checkpoints (cluster, revision, leader) VALUES ('big', {r:UInt64}, 'test')", { r: 5_000_000 + rows });
    const range = { after: null, through: { timeline: '0', revision: String(5_000_000 + rows) }, fromMs: DAY1, toMs: DAY1 + 86_400_000 };
    const read = async (bytes: number) => {
      const windows: Array<{ lo: bigint; hi: bigint; rows: number; chars: number }> = [];
      const digest = await hashPeriodEvents(db.store, 'big', range, undefined, { bytes, onWindow: (w) => windows.push(w) });
      return { digest, windows: windows.filter((w) => w.rows > 0) };
    };
    const unbounded = await read(Number.MAX_SAFE_INTEGER);
    assert.equal(unbounded.digest.count, String(rows));
    assert.equal(unbounded.windows.length, 1, 'one read holds the whole period when nothing bounds it');
    const bounded = await read(3 * MIB);
    assert.deepEqual(bounded.digest, unbounded.digest, 'the same events hashed, in the same order');
    assert.equal(
      bounded.windows.reduce((n, w) => n + w.rows, 0),
      rows,
      'every row read once',
    );
    for (const w of bounded.windows) assert.ok(w.chars <= 3 * MIB, `window ${w.lo}-${w.hi} read ${w.chars} characters, over the 3 MiB budget`);
    assert.ok(bounded.windows.length >= 7, `20 MiB of values in windows of at most 3 MiB: ${bounded.windows.length} windows`);
    // A budget below one revision's rows still reads that revision, whole and once.
    const tiny = await read(1024);
    assert.deepEqual(tiny.digest, unbounded.digest);
    assert.ok(
      tiny.windows.every((w) => w.lo === w.hi),
      'one revision per window when each is over the budget',
    );
    assert.equal(tiny.windows.length, rows);
    // The default bound is what the worker and verify use.
    assert.equal(WINDOW_BYTES, 32 * MIB);
  });

  it("plans a raw-events export (a day's Parquet history) in chunks bounded by bytes as well as rows: each is one query's answer held at once", async () => {
    const range = { fromMs: DAY1, toMs: DAY1 + 86_400_000 };
    const unbounded = await planEventsExport(db.store, 'big', range, 1_000_000, Number.MAX_SAFE_INTEGER);
    assert.equal(unbounded.chunks.length, 1, 'rows alone: one chunk');
    const bounded = await planEventsExport(db.store, 'big', range, 1_000_000, 3 * MIB);
    assert.equal(bounded.total, unbounded.total, 'the same rows');
    assert.ok(bounded.chunks.length >= 7, `20 MiB of values in chunks of about 3 MiB: ${bounded.chunks.length} chunks`);
    // Every row once: the chunks' answers add up to the whole.
    let rows = 0;
    for (const c of bounded.chunks) {
      const [n] = await db.store.rows<{ n: string }>(`SELECT toString(count()) AS n FROM (${c.query})`, c.params);
      rows += Number(n?.n);
    }
    assert.equal(BigInt(rows), bounded.total);
    assert.equal(DEFAULT_CHUNK_BYTES, 64 * MIB);
  });
});
