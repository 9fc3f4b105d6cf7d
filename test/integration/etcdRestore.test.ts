// An etcd restored from a snapshot under a running lock API and tailer, on a
// private etcd (ports 27400-27403: outside the suite's block), both ways:
// with the same member name, peer URL and cluster token (the cluster id stays
// the same and revisions restart lower), and with --bump-revision
// --mark-compacted (revisions jump ahead). The API must refuse grants until a
// two-person epoch advance and never hand out a token below one it gave; the
// tailer must record the discontinuity as a `restore` gap, keep the rolled
// back history in the record, marked rolled back (sql/065), and go on
// capturing the restored cluster.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { HealthState } from '../../platform/health.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { tailerMetrics, type TailerMetrics } from '../../tailer/tailerMetrics.js';
import { holdKey } from '../../core/keyspace.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { currentTimeline } from '../../tailer/recovery/restores.js';
import { TailerReplica } from '../../tailer/replica.js';
import { waitFor } from '../support/capture.js';
import { tempDir, testConfig, uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';
import { fencedClass, lockApp, type LockApp } from '../support/lockApp.js';
import { startPrivateEtcd, type PrivateEtcd } from '../support/privateEtcd.js';

type Json = Record<string, unknown>;
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

const db = fileStore();

interface Rig {
  label: string;
  etcd: PrivateEtcd;
  client: Etcd3;
  la: LockApp;
  tailer: TailerReplica;
  health: HealthState;
  metrics: TailerMetrics;
  op1: string;
  op2: string;
  user: string;
  className: string;
  ns: string;
  close: () => Promise<void>;
}

async function rig(clientPort: number, peerPort: number): Promise<Rig> {
  const etcd = await startPrivateEtcd(clientPort, peerPort);
  const data = tempDir('lockaudit-restore-');
  const label = uniqueId('r');
  const cluster = { name: label, endpoints: [etcd.endpoint] };
  const client = createEtcdClient(cluster);
  const config = testConfig({ LOCKAUDIT_DATA_DIR: data.dir });
  const la = await lockApp(config, db.store, { cluster });
  const ns = uniqueId('ns');
  const className = `${ns}-fenced`;
  const admin = await la.token(uniqueId('admin-'), ['admin']);
  const op1 = await la.token(uniqueId('op-a-'), ['lock-operator']);
  const op2 = await la.token(uniqueId('op-b-'), ['lock-operator']);
  const user = await la.token(`spiffe://test/${ns}/w`, ['client']);
  assert.equal((await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns))).status, 200);
  const health = new HealthState();
  const metrics = tailerMetrics(createMetricsRegistry());
  const tailer = new TailerReplica(
    { cluster, store: db.store, log: log.child({ cluster: label }), health, metrics },
    { electionTtlSeconds: 3, checkpointIntervalMs: 100, clockIntervalMs: 300, restoreCheckIntervalMs: 300 },
  );
  tailer.start();
  return {
    label,
    etcd,
    client,
    la,
    tailer,
    health,
    metrics,
    op1,
    op2,
    user,
    className,
    ns,
    close: async () => {
      await tailer.close();
      await la.close();
      client.close();
      await etcd.stop();
      data.remove();
    },
  };
}

async function session(r: Rig): Promise<string> {
  const res = await r.la.call<{ id: string }>('POST', '/v1/sessions', r.user, { ttlSeconds: 15 });
  assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body)); // 200: a live session of ours reused
  return res.body.id;
}

/** Acquire, retrying while etcd is coming back (quorum errors); returns the final reply. */
async function acquire(r: Rig, sessionId: string, key: string): Promise<{ status: number; body: Json }> {
  return waitFor(
    `an answer to acquire ${key}`,
    async () => {
      const res = await r.la.call<Json>('POST', '/v1/locks/acquire', r.user, { key: `${r.ns}/${key}`, session: sessionId, class: r.className });
      return res.body.error === 'LOCKAUDIT_ERR_QUORUM_LOST' ? undefined : res;
    },
    30_000,
    200,
  );
}

async function grantsAndReleases(r: Rig, sessionId: string, n: number): Promise<{ maxToken: bigint; lastRevision: bigint }> {
  let maxToken = 0n;
  let lastRevision = 0n;
  for (let i = 0; i < n; i++) {
    const g = await acquire(r, sessionId, `k${i % 5}`);
    assert.equal(g.status, 200, JSON.stringify(g.body));
    const token = BigInt(g.body.token as string);
    if (token > maxToken) maxToken = token;
    const rel = await r.la.call<Json>('POST', '/v1/locks/release', r.user, { key: `${r.ns}/k${i % 5}`, session: sessionId, token: token.toString() });
    assert.equal(rel.status, 200, JSON.stringify(rel.body));
    lastRevision = BigInt(g.body.revision as string) + 1n;
  }
  return { maxToken, lastRevision };
}

async function advanceEpoch(r: Rig): Promise<Json> {
  const req = await waitFor(
    'an epoch advance request',
    async () => {
      const res = await r.la.call<Json>('POST', '/v1/epoch/advance', r.op1, { reason: 'etcd restored from a snapshot' });
      return res.status === 202 ? res : undefined;
    },
    30_000,
    200,
  );
  const ok = await r.la.call<Json>('POST', `/v1/epoch/advance/${req.body.id}/approve`, r.op2, { requestHash: req.body.requestHash });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  return ok.body;
}

interface GapRow {
  from_revision: string;
  to_revision: string;
  kind: string;
  history_lost: number;
  previous_cluster_id: string;
  cluster_id: string;
  reason: string;
}

/**
 * The restore's gap, once the restore is recorded in full: the gap is written before the rolled-back rows are marked
 * (so a leader killed between them finishes the marks), and its timeline last — the marks are judged after that.
 */
async function restoreGap(label: string): Promise<GapRow> {
  const gap = await waitFor(
    `a restore gap for ${label}`,
    async () => {
      const rows = await db.store.rows<GapRow>(
        "SELECT from_revision, to_revision, kind, history_lost, previous_cluster_id, cluster_id, reason FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String} AND kind = 'restore'",
        { c: label },
      );
      return rows[0];
    },
    60_000,
    200,
  );
  await waitFor(
    `the restore of ${label} recorded in full`,
    async () => ((await currentTimeline(db.store, label))?.generation === 1 ? true : undefined),
    60_000,
    200,
  );
  return gap;
}

async function captured(label: string, eventType: string, revision: string): Promise<boolean> {
  const rows = await db.store.rows<{ n: string }>(
    'SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND event_type = {t:String} AND revision = {r:UInt64} AND superseded_by = 0',
    { c: label, t: eventType, r: revision },
  );
  return rows[0]?.n !== '0';
}

/**
 * A refused grant must write nothing: once the tailer has followed the restored cluster
 * past `revision`, no event of the hold key is recorded at or below it (a grant written
 * and then taken back would show as a grant and a release).
 */
async function nothingWritten(r: Rig, key: string, revision: bigint): Promise<void> {
  await waitFor('the tailer past the refused grants', async () => ((await readCheckpoint(db.store, r.label)) >= revision ? true : undefined), 60_000, 200);
  const rows = await db.store.rows<{ n: string }>(
    'SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND key = {k:String} AND revision <= {r:UInt64}',
    {
      c: r.label,
      k: holdKey(`${r.ns}/${key}`),
      r: revision.toString(),
    },
  );
  assert.equal(rows[0]?.n, '0', `the refused grant of ${key} left no trace in etcd`);
}

async function head(client: Etcd3): Promise<{ revision: bigint; clusterId: string }> {
  const res = await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true });
  return { revision: BigInt(res.header.revision), clusterId: String(res.header.cluster_id) };
}

describe('etcd restored under the lock API and the tailer', { timeout: 180_000 }, () => {
  it('same cluster token: grants sealed until the epoch advance, tokens never go backwards, a restore gap, capture goes on', async () => {
    const r = await rig(27_400, 27_401);
    try {
      const s1 = await session(r);
      const before = await grantsAndReleases(r, s1, 2);
      const snapshot = await r.etcd.snapshot('before.db');
      const { revision: snapRev, clusterId } = await head(r.client);
      const later = await grantsAndReleases(r, s1, 40);
      await waitFor(
        'the tailer past the later grants',
        async () => ((await readCheckpoint(db.store, r.label)) >= later.lastRevision ? true : undefined),
        60_000,
        100,
      );
      const checkpointBefore = await readCheckpoint(db.store, r.label);

      await r.etcd.restore(snapshot);
      assert.equal((await head(r.client)).clusterId, clusterId, 'same token: same cluster id');

      // The lock API: sealed, although the cluster id did not change.
      await waitFor(
        'the session kept alive in the restored cluster',
        async () => ((await r.la.call('POST', `/v1/sessions/${s1}/keepalive`, r.user)).status === 200 ? true : undefined),
        30_000,
        200,
      );
      const refused = await acquire(r, s1, 'after');
      assert.equal(refused.status, 503, `a grant after the restore must be refused, got ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error, 'LOCKAUDIT_ERR_LOCK_SEALED');
      assert.match(refused.body.message as string, /restored/);
      assert.equal((await acquire(r, s1, 'after2')).status, 503, 'stays sealed');
      // The grant txn itself failed (the grant guard): nothing was granted and taken back.
      const refusedAt = (await head(r.client)).revision;

      // The tailer: a restore gap, with both revisions and cluster ids; the rolled-back history kept aside.
      const gap = await restoreGap(r.label);
      assert.equal(gap.history_lost, 0, 'the restored history is readable: nothing of the new timeline is lost');
      assert.ok(BigInt(gap.from_revision) <= snapRev + 1n, `rolled back from ${gap.from_revision}, the snapshot was at ${snapRev}`);
      assert.ok(BigInt(gap.from_revision) > before.lastRevision - 2n, 'history before the snapshot is not rolled back');
      assert.ok(BigInt(gap.to_revision) >= checkpointBefore, 'the gap reaches the last captured revision');
      assert.equal(gap.cluster_id, clusterId);
      assert.equal(gap.previous_cluster_id, clusterId);
      assert.match(gap.reason, /^restore: /);
      assert.ok(
        r.health.alarms().some((a) => a.name === `tailer-restore:${r.label}`),
        'restore alarm raised',
      );
      // What LockauditEtcdRestored watches (deploy/prometheus).
      assert.equal((await r.metrics.restores.get()).values.find((v) => v.labels.cluster === r.label)?.value, 1, 'lockaudit_tailer_restores_total');
      const [marked] = await db.store.rows<{ n: string }>(
        'SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND rolled_back_by = 1 AND superseded_by = 1',
        { c: r.label },
      );
      assert.ok(Number(marked?.n) >= 80, `the 40 rolled-back grants and releases stay in events, marked rolled back (${marked?.n})`);
      const rolledBackGrants =
        "SELECT count() AS n FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND grant_revision > {r:UInt64} AND grant_revision <= {cp:UInt64} AND end_kind = 'release' AND ";
      const bounds = { c: r.label, r: gap.from_revision, cp: checkpointBefore.toString() };
      const [left] = await db.store.rows<{ n: string }>(`${rolledBackGrants} superseded_by = 0`, bounds);
      assert.equal(left?.n, '0', 'no rolled-back grant reads as part of the restored history');
      const [kept] = await db.store.rows<{ n: string }>(`${rolledBackGrants} rolled_back_by = 1 AND timeline = 0`, bounds);
      assert.ok(Number(kept?.n) >= 38, `the rolled-back grants stay, marked with their timeline and rolled back (${kept?.n})`);

      await nothingWritten(r, 'after', refusedAt);
      await nothingWritten(r, 'after2', refusedAt);

      // The two-person advance unseals; the next token exceeds every token ever issued.
      const advanced = await advanceEpoch(r);
      assert.ok((advanced.epoch as number) >= 2);
      const s2 = await session(r);
      const granted = await acquire(r, s2, 'after');
      assert.equal(granted.status, 200, JSON.stringify(granted.body));
      assert.ok(BigInt(granted.body.token as string) > later.maxToken, `token ${granted.body.token as string} must exceed ${later.maxToken}`);

      // The tailer captures the advance and the grant after it, in the restored cluster's own revisions.
      await waitFor(
        'the epoch advance captured',
        async () => ((await captured(r.label, 'epoch-advance', advanced.revision as string)) ? true : undefined),
        60_000,
        200,
      );
      await waitFor(
        'the grant after the advance captured',
        async () => ((await captured(r.label, 'grant', granted.body.revision as string)) ? true : undefined),
        60_000,
        200,
      );
      // Its grant row is durable with the checkpoint, not with the event: the sink writes a batch's events, then its
      // grants (a CI dry run under load read between the two).
      await waitFor(
        'the checkpoint past the grant',
        async () => ((await readCheckpoint(db.store, r.label)) >= BigInt(granted.body.revision as string) ? true : undefined),
        60_000,
        200,
      );
      const [g] = await db.store.rows<{ token: string; start_known: number }>(
        'SELECT toString(token) AS token, start_known FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND grant_revision = {r:UInt64} AND superseded_by = 0',
        {
          c: r.label,
          r: granted.body.revision as string,
        },
      );
      assert.equal(g?.token, granted.body.token);
      assert.equal(Number(g?.start_known), 1);
    } finally {
      await r.close();
    }
  });

  it('--bump-revision --mark-compacted: a restore gap (not compaction) over the rolled-back revisions, capture goes on', async () => {
    const r = await rig(27_402, 27_403);
    try {
      const s1 = await session(r);
      await grantsAndReleases(r, s1, 2);
      const clockAtSnapshot = BigInt((await r.client.kv.range({ key: Buffer.from('/sys/clock') })).kvs[0]?.version ?? '0');
      const snapshot = await r.etcd.snapshot('before.db');
      const later = await grantsAndReleases(r, s1, 20);
      await waitFor(
        'the tailer past the later grants',
        async () => ((await readCheckpoint(db.store, r.label)) >= later.lastRevision ? true : undefined),
        60_000,
        100,
      );
      // The bumped restore shows only in keys back at older versions: here /sys/clock, which the leader
      // rewrites every 300 ms. Let the captured clock get well ahead of the snapshot's (a real snapshot is hours old).
      await waitFor(
        '30 clock writes captured after the snapshot',
        async () => {
          const [c] = await db.store.rows<{ v: string }>(
            "SELECT toString(max(version)) AS v FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND key = '/sys/clock' AND revision <= {cp:UInt64}",
            {
              c: r.label,
              cp: (await readCheckpoint(db.store, r.label)).toString(),
            },
          );
          return BigInt(c?.v ?? '0') >= clockAtSnapshot + 30n ? true : undefined;
        },
        60_000,
        200,
      );
      const checkpointBefore = await readCheckpoint(db.store, r.label);

      await r.etcd.restore(snapshot, { bumpRevision: 1_000_000 });
      const gap = await restoreGap(r.label);
      assert.equal(gap.kind, 'restore');
      assert.equal(gap.history_lost, 1, 'the bumped revisions were never readable');
      assert.ok(BigInt(gap.to_revision) >= 1_000_000n, `the gap reaches the restored head (${gap.to_revision})`);
      assert.ok(BigInt(gap.from_revision) <= checkpointBefore, 'the captured revisions after the snapshot are inside it');
      const [marked] = await db.store.rows<{ n: string }>(
        'SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND rolled_back_by = 1',
        { c: r.label },
      );
      assert.ok(Number(marked?.n) >= 40, `the rolled-back grants and releases stay, marked rolled back (${marked?.n})`);
      const compaction = await db.store.rows<{ n: string }>(
        "SELECT count() AS n FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String} AND kind != 'restore'",
        { c: r.label },
      );
      assert.equal(compaction[0]?.n, '0', 'not worded as compaction');

      // Revisions continue above every old one, so tokens could not go backwards, but every hold granted after
      // the snapshot is gone from etcd: the API refuses grants (the grant guard is below its latest grant)
      // until the advance, and the refused grant wrote nothing.
      await waitFor(
        'the session kept alive in the restored cluster',
        async () => ((await r.la.call('POST', `/v1/sessions/${s1}/keepalive`, r.user)).status === 200 ? true : undefined),
        30_000,
        200,
      );
      const refused = await acquire(r, s1, 'refused');
      assert.equal(refused.status, 503, `a grant after the restore must be refused, got ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error, 'LOCKAUDIT_ERR_LOCK_SEALED');
      await nothingWritten(r, 'refused', (await head(r.client)).revision);
      const advanced = await advanceEpoch(r);
      const s2 = await session(r);
      const granted = await acquire(r, s2, 'after');
      assert.equal(granted.status, 200, JSON.stringify(granted.body));
      assert.ok(BigInt(granted.body.token as string) > later.maxToken);
      await waitFor(
        'the epoch advance captured',
        async () => ((await captured(r.label, 'epoch-advance', advanced.revision as string)) ? true : undefined),
        60_000,
        200,
      );
      await waitFor(
        'the grant after the restore captured',
        async () => ((await captured(r.label, 'grant', granted.body.revision as string)) ? true : undefined),
        60_000,
        200,
      );
    } finally {
      await r.close();
    }
  });
});
