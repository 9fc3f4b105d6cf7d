// A catch-up killed (-9) mid-way keeps its progress whatever the history
// (issue 22 item 4): hand puts and hand deletes straight into etcd, no lock
// API, no /sys/clock write — every delete is timeless, and the holds are
// foreign (their own times bound nothing) — against a private etcd with
// etcd's default limits. After each kill the stored checkpoint must stand
// within about one batch of what the store already holds: a timeless delete
// waiting for a later known time (a clock write that never comes) pinned the
// checkpoint while the revisions after it became durable. With several
// windows, each window's durable stretch beyond the checkpoint is recorded
// and a restart watches only the holes: a kill loses about one batch a
// window, and the catch-up then completes exactly.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { AuditStore } from '../../core/clickhouse.js';
import { readDurable } from '../../tailer/watch/catchUpSegments.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { capturedRows, etcdHistory, headRevision } from '../support/capture.js';
import { startTailerChild } from '../support/children.js';
import { tempDir, uniqueId } from '../support/env.js';
import { handHistory } from '../support/handHistory.js';
import { startPrivateEtcd, type PrivateEtcd } from '../support/privateEtcd.js';

const REVISIONS = Number(process.env.TEST_KILLED_CATCH_UP_REVISIONS ?? 24_000);
const ORIGIN_SECRET = 'killed-catch-up-origin-secret-0123456789';
const BATCH_ROWS = 250;
// What a kill may lose above the checkpoint: a batch held behind a waiting time bracket, the batch in flight and
// what became durable since the last checkpoint write (every 100 ms).
const MAX_AHEAD = 4 * BATCH_ROWS;
const tmp = tempDir('lockaudit-killed-');
const chdbPath = path.join(tmp.dir, 'ch'); // opened here only while no child has it
let etcd!: PrivateEtcd;
let client!: Etcd3;

before(async () => {
  etcd = await startPrivateEtcd(20_520, 20_521, { defaultLimits: true });
  client = new Etcd3({ hosts: [etcd.endpoint] });
});

after(async () => {
  try {
    client?.close();
  } finally {
    await etcd?.stop();
    tmp.remove();
  }
});

async function withStore<T>(fn: (store: AuditStore) => Promise<T>): Promise<T> {
  const store = new AuditStore({ mode: 'embedded', path: chdbPath, database: 'lockaudit' });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/**
 * The highest revision up to which every change of etcd's history is in the store (`contiguous`), and the
 * events stored above `checkpoint` (`above`): durable, yet a restart from the checkpoint writes them again.
 */
async function durableAbove(
  store: AuditStore,
  label: string,
  from: bigint,
  to: bigint,
  checkpoint: bigint,
): Promise<{ contiguous: bigint; stored: number; above: number }> {
  const history = [...(await etcdHistory(client, from, to))].map((k) => ({ revision: BigInt(k.slice(0, k.indexOf('|'))), id: k }));
  history.sort((a, b) => (a.revision < b.revision ? -1 : a.revision > b.revision ? 1 : 0));
  const rows = await capturedRows(store, label, from, to);
  const got = new Set(rows.map((r) => `${r.revision}|${r.key}`));
  let contiguous = from - 1n;
  for (let i = 0; i < history.length;) {
    const rev = (history[i] as { revision: bigint }).revision;
    let j = i;
    while (j < history.length && (history[j] as { revision: bigint }).revision === rev) j += 1;
    if (!history.slice(i, j).every((h) => got.has(h.id))) break;
    contiguous = rev;
    i = j;
  }
  return { contiguous, stored: rows.length, above: rows.filter((r) => BigInt(r.revision) > checkpoint).length };
}

// Small batches while catching up too (the sink's catch-up pace): each run is killed a dozen batches in.
const childOptions = {
  electionTtlSeconds: 3,
  checkpointIntervalMs: 100,
  clockIntervalMs: 1_000,
  sink: { maxRows: BATCH_ROWS, maxDelayMs: 50, catchUp: { maxRows: BATCH_ROWS, maxDelayMs: 50 } },
};

describe('a catch-up killed mid-way (child processes, private etcd with default limits)', { timeout: 900_000 }, () => {
  // One window: every event a run makes durable can be covered by the checkpoint. Four: the checkpoint covers the
  // first window's; the others' durable stretches are recorded beside it (catchUpSegments.ts) and not watched again.
  for (const windows of [1, 4]) {
    it(`hand puts and deletes, no clock write, ${windows} window(s): after each of 3 kills -9 about one batch a window is written again, and the catch-up then completes exactly`, async (t) => {
      const label = uniqueId('k');
      const ns = uniqueId('hand');
      const from = (await headRevision(client)) + 1n;
      const t0 = Date.now();
      await handHistory(client, ns, REVISIONS);
      const historyEnd = await headRevision(client);
      t.diagnostic(`history ${from}..${historyEnd} (${historyEnd - from + 1n} revisions) written in ${Date.now() - t0} ms`);
      const failures: string[] = [];
      let written = 0;
      const run = (n: number) =>
        startTailerChild({
          chdbPath,
          cluster: { name: label, endpoints: [etcd.endpoint] },
          initialCheckpoint: (from - 1n).toString(),
          originSecret: ORIGIN_SECRET,
          options: { ...childOptions, catchUpWindows: windows, splitMinRevisions: 2_000 },
          replicaId: `killed-${windows}-${n}`,
        });
      for (let kill = 0; kill < 3; kill += 1) {
        const child = run(kill);
        // Killed once this run made a dozen batches durable.
        const enough = 12 * BATCH_ROWS;
        await child
          .waitFor((c) => c.durable >= enough, 300_000)
          .catch(async (err: Error) => {
            await child.kill9();
            throw err;
          });
        await child.kill9();
        const reported = child.durable;
        written += reported;
        await withStore(async (store) => {
          const checkpoint = await readCheckpoint(store, label);
          const { contiguous, stored, above } = await durableAbove(store, label, from, historyEnd, checkpoint);
          // Rows above the checkpoint that no recorded durable interval covers: the next run writes them again.
          const durable = await readDurable(store, label, 0, checkpoint);
          const rows = await capturedRows(store, label, from, historyEnd);
          const uncovered = rows.filter(
            (r) => BigInt(r.revision) > checkpoint && !durable.some((d) => BigInt(r.revision) >= d.from && BigInt(r.revision) <= d.through),
          ).length;
          t.diagnostic(
            `kill ${kill}: after ${reported} durable events this run: ${stored} events stored, contiguous to ${contiguous}, checkpoint ${checkpoint}, ${above} stored events above it, ${durable.length} durable interval(s) above it, ${uncovered} not covered`,
          );
          assert.ok(contiguous < historyEnd, 'the kill landed mid catch-up');
          assert.ok(checkpoint <= contiguous, `checkpoint ${checkpoint} ahead of the durable prefix ${contiguous}`);
          for (const d of durable)
            assert.ok(
              rows.some((r) => BigInt(r.revision) >= d.from),
              `interval ${d.from}..${d.through} is above stored rows`,
            );
          if (uncovered > windows * MAX_AHEAD)
            failures.push(`kill ${kill}: ${uncovered} durable events above the checkpoint ${checkpoint} in no recorded interval (contiguous to ${contiguous})`);
        });
      }
      // The catch-up then finishes: every change of the history captured, the holes filled, nothing written twice beyond the kills' losses.
      const last = run(3);
      await last
        .waitFor((c) => c.checkpoint >= historyEnd, 300_000)
        .catch(async (err: Error) => {
          await last.kill9();
          throw err;
        });
      await last.term();
      written += last.durable;
      await withStore(async (store) => {
        const { contiguous, stored } = await durableAbove(store, label, from, historyEnd, historyEnd);
        t.diagnostic(`finished: ${stored} events stored, ${written} written over 4 runs (${written - stored} written again)`);
        assert.equal(contiguous, historyEnd, 'every change of the history is in the store');
        if (written - stored > 3 * windows * MAX_AHEAD)
          failures.push(`${written - stored} events written again over 3 kills (allowed ${3 * windows * MAX_AHEAD})`);
      });
      assert.deepEqual(failures, [], `more than about one batch a window (${BATCH_ROWS} rows; allowed ${MAX_AHEAD} a window) lost to a kill`);
    });
  }
});
