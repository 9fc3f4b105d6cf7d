// Grants that ended inside a gap (issue 11, defect 4), on a private etcd
// (ports 27404/27405): a grant captured open, released while the tailer is
// stopped, the release compacted away. After the gap it must read as ended
// ('unknown', its end bounded by the gap), not as held forever; a grant still
// held in the snapshot stays open.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { checkGrantsAgainstEvents, formatGrantProblem } from '../../exporters/checks/grantsCheck.js';
import { decodeRevision, finishRevision } from '../../tailer/decode/decoder.js';
import { closeGrantsEndedInGap } from '../../tailer/recovery/gaps.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { writeRows } from '../../tailer/sink/rowWriter.js';
import { WatchWindow } from '../../tailer/watch/watchWindow.js';
import { waitFor } from '../support/capture.js';
import { uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';
import { startPrivateEtcd } from '../support/privateEtcd.js';
import { Workload } from '../support/workload.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
const db = fileStore();

interface GrantRow {
  end_kind: string;
  end_revision: string;
  ended_ms: string | null;
  ended_at_error_ms: number;
}

async function grant(label: string, lock: string): Promise<GrantRow | undefined> {
  const rows = await db.store.rows<GrantRow>(
    'SELECT end_kind, toString(end_revision) AS end_revision, toString(toUnixTimestamp64Milli(ended_at)) AS ended_ms, ended_at_error_ms FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND key = {k:String}',
    { c: label, k: lock },
  );
  return rows[0];
}

async function grantsOf(label: string, lock: string): Promise<Array<GrantRow & { grant_revision: string; granted_ms: string }>> {
  return db.store.rows(
    'SELECT grant_revision, toString(toUnixTimestamp64Milli(granted_at)) AS granted_ms, end_kind, toString(end_revision) AS end_revision, toString(toUnixTimestamp64Milli(ended_at)) AS ended_ms, ended_at_error_ms FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND key = {k:String} ORDER BY grant_revision',
    { c: label, k: lock },
  );
}

/** Runs `tailer` until the store's checkpoint for `label` reaches `revision`, then closes it. */
async function runUntil(tailer: TailerReplica, label: string, revision: bigint): Promise<void> {
  tailer.start();
  try {
    await waitFor(`captured to ${revision}`, async () => ((await readCheckpoint(db.store, label)) >= revision ? true : undefined), 60_000, 100);
  } finally {
    await tailer.close();
  }
}

describe('grants that ended inside a gap', { timeout: 120_000 }, () => {
  it('are closed as unknown, their end bounded by the gap; a grant still held stays open', async () => {
    const own = await startPrivateEtcd(27_404, 27_405);
    const etcd = createEtcdClient({ name: 'own', endpoints: [own.endpoint] });
    const label = uniqueId('g');
    const replica = (): TailerReplica =>
      new TailerReplica({ cluster: { name: label, endpoints: [own.endpoint] }, store: db.store, log }, { electionTtlSeconds: 3, checkpointIntervalMs: 100 });
    try {
      const w = new Workload(etcd, uniqueId('ns'));
      const s = await w.session();
      await w.grant(s, 'gone');
      await w.grant(s, 'stays');
      await w.grant(s, 'regranted');
      const mid = BigInt(await w.clock());
      await runUntil(replica(), label, mid);
      assert.equal((await grant(label, w.lock('gone')))?.end_kind, '', 'captured open');
      const stoppedAt = Date.now();

      // While the tailer is stopped: the release, then compaction past it.
      await w.release(s, 'gone');
      // And a key released and granted again to someone else: the snapshot holds the new grant.
      await w.release(s, 'regranted');
      const other = await w.session();
      const regrantRev = BigInt(await w.grant(other, 'regranted'));
      const compactAt = BigInt(await w.clock());
      await etcd.kv.compact({ revision: compactAt.toString(), physical: true });
      const second = replica();
      second.start();
      try {
        await waitFor('capture past the gap', async () => ((await readCheckpoint(db.store, label)) >= compactAt ? true : undefined), 60_000, 100);
        const restarted = Date.now();
        const gone = await grant(label, w.lock('gone'));
        assert.equal(gone?.end_kind, 'unknown', 'ended inside the gap: not held forever');
        assert.equal(gone?.end_revision, compactAt.toString());
        const ended = Number(gone?.ended_ms);
        const error = Number(gone?.ended_at_error_ms);
        assert.ok(error > 0, 'an estimate, with its bound');
        assert.ok(ended - error <= stoppedAt && ended + error >= stoppedAt - 60_000, 'the bound reaches back to the last capture before the gap');
        assert.ok(ended + error <= restarted, 'and not past the snapshot');
        assert.equal((await grant(label, w.lock('stays')))?.end_kind, '', 'held in the snapshot: still open');
        // The earlier grant of a key granted again inside the gap ended before that grant: no two holders at once.
        const [old, renewed] = await grantsOf(label, w.lock('regranted'));
        assert.equal(renewed?.grant_revision, regrantRev.toString());
        assert.equal(renewed?.end_kind, '', 'the new grant, seen in the snapshot, is open');
        assert.equal(old?.end_kind, 'unknown');
        assert.ok(BigInt(old?.end_revision ?? '0') < regrantRev, `ended (${old?.end_revision}) before the next grant (${regrantRev})`);
        assert.ok(
          Number(old?.ended_ms) + Number(old?.ended_at_error_ms) <= Number(renewed?.granted_ms),
          'its latest possible end is not after the next grant began',
        );
      } finally {
        await second.close();
      }
    } finally {
      etcd.close();
      await own.stop();
    }
  });

  it('a grant captured above the stored checkpoint and gone from the snapshot ended in the gap too', async () => {
    // The 30-minute chaos run's false overlap: a run wrote the grant at revision 2971 and was stopped before its
    // checkpoint passed 2970; compaction then made 2971–3004 a gap. The grant was in the store, inside the gap, and
    // only grants at or below the checkpoint were closed — it stayed open until a later gap, overlapping later grants.
    const label = uniqueId('g');
    const checkpoint = 2_970n;
    const grantedAt = Date.UTC(2026, 10, 30, 16, 11, 51, 795);
    const lastBefore = grantedAt - 1_500; // the last change captured at or below the checkpoint
    await db.store.insert('events', [{ cluster: label, revision: '2960', key: '/l/ns/other', event_type: 'release', op: 'delete', wall_time: lastBefore }]);
    const open = {
      cluster: label,
      namespace: 'ns',
      lock_path: 'late',
      class: 'c',
      holder: 'h',
      session: '1',
      epoch: 2,
      spool_id: '',
      wait_ms: 0,
      start_known: 1,
      end_kind: '',
      end_revision: '0',
      ended_at: null,
      ended_at_error_ms: 0,
      duration_ms: null,
      unprotected: 0,
      row_version: '0',
    };
    await db.store.insert('grants', [
      { ...open, key: 'ns/late', token: '562949953424283', grant_revision: '2971', granted_at: grantedAt },
      { ...open, key: 'ns/earlier', token: '562949953424200', grant_revision: '2900', granted_at: grantedAt - 9_000 },
    ]);
    const nowMs = grantedAt + 5_600;
    await closeGrantsEndedInGap(db.store, label, checkpoint, 3_004n, 3_004n, 0n, nowMs);
    const late = await grant(label, 'ns/late');
    assert.equal(late?.end_kind, 'unknown', 'captured inside the gap, not in the snapshot: ended in the gap, not held on');
    assert.equal(late?.end_revision, '3004');
    const ended = Number(late?.ended_ms);
    const error = late?.ended_at_error_ms ?? 0;
    assert.ok(ended - error >= grantedAt, `its earliest end (${ended - error}) is not before it began (${grantedAt})`);
    assert.ok(ended + error <= nowMs, 'and not after the snapshot');
    const earlier = await grant(label, 'ns/earlier');
    assert.equal(earlier?.end_kind, 'unknown', 'a grant at or below the checkpoint is closed as before');
    assert.ok(
      Number(earlier?.ended_ms) - (earlier?.ended_at_error_ms ?? 0) <= lastBefore + 1,
      'its bound still reaches back to the last capture before the gap',
    );
  });

  it('a grant ends before the next grant of its key the store already holds, when the snapshot no longer holds that one', async () => {
    // 30-minute chaos run, seed 7: a compaction gap's first try snapshotted a hold granted inside it (open, start
    // unknown) and was killed before closing anything; a second compaction widened the gap, its snapshot no longer
    // held that grant, and the key's older grant was closed at the gap's end — over the newer one: 11 overlaps.
    const label = uniqueId('g');
    const t0 = Date.UTC(2026, 11, 2, 4, 46, 1);
    const open = {
      cluster: label,
      namespace: 'billing',
      lock_path: 'item-3',
      key: 'billing/item-3',
      class: 'c',
      holder: 'h',
      session: '1',
      epoch: 2,
      spool_id: '',
      wait_ms: 0,
      end_kind: '',
      end_revision: '0',
      ended_at: null,
      ended_at_error_ms: 0,
      duration_ms: null,
      unprotected: 0,
      row_version: '0',
      origin: 'api',
    };
    await db.store.insert('events', [
      { cluster: label, revision: '1085900', key: '/l/billing/other', event_type: 'release', op: 'delete', wall_time: t0 + 1_000 },
    ]);
    await db.store.insert('grants', [
      { ...open, token: '562949954507120', grant_revision: '1085808', granted_at: t0, start_known: 1 },
      { ...open, token: '844424931231979', epoch: 3, grant_revision: '1100011', granted_at: t0 + 335_000, start_known: 0 },
    ]);
    await closeGrantsEndedInGap(db.store, label, 1_086_299n, 1_132_282n, 1_132_282n, 0n, t0 + 460_000);
    const rows = await grantsOf(label, 'billing/item-3');
    assert.deepEqual(
      rows.map((r) => [r.grant_revision, r.end_kind]),
      [
        ['1085808', 'unknown'],
        ['1100011', 'unknown'],
      ],
    );
    const [older, newer] = rows as [(typeof rows)[number], (typeof rows)[number]];
    assert.ok(BigInt(older.end_revision) < 1_100_011n, `the older grant ended before the newer one began (${older.end_revision})`);
    assert.ok(Number(older.ended_ms) <= t0 + 335_000, 'and not after its time');
    assert.equal(newer.end_revision, '1132282', 'the newer one ended in the gap, as far as anyone knows');
  });

  it('a foreign grant closed in the gap stays foreign (the closed row carries every identity column of the open one)', async () => {
    // 30-minute chaos run, seed 7: seven holds put by hand (origin foreign in their events and open grant rows) ended
    // inside compaction gaps; their closed rows read origin 'api' — the column's default — in grant history and exports.
    const label = uniqueId('g');
    const grantedAt = Date.UTC(2026, 11, 2, 4, 0, 0);
    const open = {
      cluster: label,
      namespace: 'chaos',
      class: 'c',
      holder: 'spiffe://rogue.example/etcdctl',
      session: '1',
      epoch: 2,
      spool_id: '',
      wait_ms: 0,
      start_known: 1,
      end_kind: '',
      end_revision: '0',
      ended_at: null,
      ended_at_error_ms: 0,
      duration_ms: null,
      unprotected: 0,
      row_version: '0',
    };
    await db.store.insert('grants', [
      { ...open, key: 'chaos/rogue', lock_path: 'rogue', token: '562949953450377', grant_revision: '900', granted_at: grantedAt, origin: 'foreign' },
      { ...open, key: 'chaos/api', lock_path: 'api', token: '562949953450378', grant_revision: '901', granted_at: grantedAt, origin: 'api' },
    ]);
    await closeGrantsEndedInGap(db.store, label, 950n, 1_000n, 1_000n, 0n, grantedAt + 5_000);
    const rows = await db.store.rows<{ key: string; origin: string; end_kind: string }>(
      'SELECT key, origin, end_kind FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} ORDER BY key',
      { c: label },
    );
    assert.deepEqual(
      rows.map((r) => [r.key, r.end_kind, r.origin]),
      [
        ['chaos/api', 'unknown', 'api'],
        ['chaos/rogue', 'unknown', 'foreign'],
      ],
    );
  });
  it('grant and end events a killed run made durable above the checkpoint without their grant rows get them when the gap is recorded', async () => {
    const own = await startPrivateEtcd(27_406, 27_407);
    const etcd = createEtcdClient({ name: 'own', endpoints: [own.endpoint] });
    const label = uniqueId('gk');
    const replica = (): TailerReplica =>
      new TailerReplica({ cluster: { name: label, endpoints: [own.endpoint] }, store: db.store, log }, { electionTtlSeconds: 3, checkpointIntervalMs: 100 });
    const startMs = Date.now() - 1_000;
    try {
      const w = new Workload(etcd, uniqueId('ns'));
      const s = await w.session();
      await w.grant(s, 'before');
      const mid = BigInt(await w.clock());
      await runUntil(replica(), label, mid);
      const checkpoint = await readCheckpoint(db.store, label);
      // While the tailer is stopped: a grant released, one still held.
      await w.grant(s, 'done');
      await w.release(s, 'done');
      await w.grant(s, 'held');
      const end = BigInt(await w.clock());
      // A run that decoded them and was killed after its events insert, before its grants insert (rowWriter.ts).
      const abort = new AbortController();
      for await (const item of new WatchWindow(etcd, { start: checkpoint + 1n, end: end + 1n, log }).items(abort.signal)) {
        if (item.kind === 'end') break;
        if (item.kind !== 'revision') continue;
        const batch = finishRevision(decodeRevision({ cluster: label, startKnown: () => true }, item.changes), undefined);
        await writeRows(db.store, { ...batch, grants: [] });
      }
      // Then etcd compacted past them: nothing replays them.
      const compactAt = BigInt(await w.clock());
      await etcd.kv.compact({ revision: compactAt.toString(), physical: true });
      await runUntil(replica(), label, compactAt);
      assert.equal((await grant(label, w.lock('done')))?.end_kind, 'release', 'its release, from the durable event: not unknown, not missing');
      assert.equal((await grant(label, w.lock('held')))?.end_kind, '', 'held');
      const problems = await checkGrantsAgainstEvents(db.store, { cluster: label }, { fromMs: startMs, toMs: Date.now() + 1_000 }, { settleMs: 0 });
      assert.deepEqual(problems.map(formatGrantProblem), [], 'every grant agrees with its events');
    } finally {
      etcd.close();
      await own.stop();
    }
  });
});
