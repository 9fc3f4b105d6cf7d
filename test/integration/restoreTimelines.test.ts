// After an etcd restore (issue 21 item 7), on a private etcd (ports
// LOCKAUDIT_TEST_PORT_BASE + 72/73), restored with the same cluster id so its
// revisions restart below the old checkpoint and are reused:
// - an alert sink that had delivered the old timeline up to its checkpoint
//   still delivers the restore gap and the new timeline's events at reused
//   revisions (its position is (timeline, revision, key), sql/120);
// - the restore is handled exactly with a page size (restorePageSize) far
//   below the keyspace and the rows it marks: every rolled-back event marked,
//   every grant held at the divergence carried once, the snapshot complete.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { checkGrantsAgainstEvents, formatGrantProblem } from '../../exporters/checks/grantsCheck.js';
import { alertMetrics } from '../../exporters/alerts/alertMetrics.js';
import { WebhookDelivery } from '../../exporters/alerts/webhookDelivery.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { alertReceiver } from '../support/alertReceiver.js';
import { waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { startPrivateEtcd } from '../support/privateEtcd.js';
import { Workload } from '../support/workload.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
const portBase = testConfig().local.portBase;
const PAGE = 3;
const HELD = 11;

async function head(client: Etcd3): Promise<bigint> {
  return BigInt((await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
}

describe('after an etcd restore with reused revisions', { timeout: 180_000 }, () => {
  it('alert sinks deliver the restore gap and the new timeline; a restore larger than a page is handled exactly', async () => {
    const { store, close: closeStore } = await tempStore();
    const own = await startPrivateEtcd(portBase + 72, portBase + 73);
    const etcd = createEtcdClient({ name: 'own', endpoints: [own.endpoint] });
    const label = uniqueId('rt');
    const tailer = new TailerReplica(
      { cluster: { name: label, endpoints: [own.endpoint] }, store, log: log.child({ cluster: label }) },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, clockIntervalMs: 300, restoreCheckIntervalMs: 300, restorePageSize: PAGE },
    );
    const rx = await alertReceiver();
    const sink = {
      name: uniqueId('siem-'),
      url: rx.url,
      secret: 'test-secret-0123456789',
      batchSize: 4,
      maxAttempts: 5,
      backoffMaxMs: 100,
      pollIntervalMs: 50,
      timeoutMs: 2_000,
      rules: [{ kinds: ['grant' as const, 'release' as const, 'gap' as const] }],
    };
    const delivery = new WebhookDelivery({ store, log, metrics: alertMetrics(new Registry()), cluster: label, sink, tokenKey: randomBytes(32) });
    const drain = async (): Promise<void> => {
      const abort = new AbortController();
      while (await delivery.step(abort.signal));
    };
    try {
      tailer.start();
      const w = new Workload(etcd, uniqueId('ns'));
      const s = await w.session();
      // Held across the snapshot (more than a page): carried into the new timeline.
      for (let i = 0; i < HELD; i++) await w.grant(s, `held-${i}`);
      const snapshot = await own.snapshot('before.db');
      const snapRev = await head(etcd);
      // After the snapshot: ends of three held grants and grants of fresh keys — all rolled back by the restore.
      for (let i = 0; i < 3; i++) await w.release(s, `held-${i}`);
      for (let i = 0; i < 8; i++) {
        await w.grant(s, `later-${i}`);
        await w.release(s, `later-${i}`);
      }
      const last = await head(etcd);
      await waitFor('the old timeline captured', async () => ((await readCheckpoint(store, label)) >= last ? true : undefined), 60_000, 100);
      const oldCheckpoint = await readCheckpoint(store, label);
      await drain();
      const oldGrants = rx.delivered.filter((d) => d.unmapped.kind === 'grant').length;
      assert.ok(oldGrants >= HELD + 8, `the old timeline's grants delivered (${oldGrants})`);
      const [captured] = await store.rows<{ n: string }>(
        'SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND revision > {r:UInt64}',
        { c: label, r: snapRev.toString() },
      );
      assert.ok(Number(captured?.n) > 4 * PAGE, `more rows above the snapshot than a page (${captured?.n})`);

      await own.restore(snapshot);
      const gap = await waitFor(
        'the restore gap',
        async () => {
          const rows = await store.rows<{ from_revision: string; identity: string }>(
            "SELECT toString(from_revision) AS from_revision, identity FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String} AND kind = 'restore'",
            { c: label },
          );
          return rows[0];
        },
        60_000,
        200,
      );
      await waitFor(
        'the new timeline recorded',
        async () => {
          const rows = await store.rows<{ n: string }>(
            'SELECT count() AS n FROM {db:Identifier}.etcd_timelines FINAL WHERE cluster = {c:String} AND generation = 1',
            { c: label },
          );
          return rows[0]?.n === '1' ? true : undefined;
        },
        60_000,
        200,
      );
      // The restored cluster reuses revision numbers the old timeline had.
      const s2 = await waitFor('a session on the restored cluster', async () => w.session().catch(() => undefined), 30_000, 200);
      const fresh: string[] = [];
      for (let i = 0; i < 4; i++) fresh.push(await w.grant(s2, `new-${i}`));
      assert.ok(
        BigInt(fresh[0] as string) <= oldCheckpoint,
        `the new timeline's grant at ${fresh[0]} reuses a revision the old one had (checkpoint ${oldCheckpoint})`,
      );
      const newest = BigInt(fresh.at(-1) as string);
      await waitFor('the new grants captured', async () => ((await readCheckpoint(store, label)) >= newest ? true : undefined), 60_000, 100);

      // (b) The sink delivers the restore gap and every new grant, with ids naming the timeline.
      await drain();
      const ids = new Set(rx.delivered.map((d) => d.id));
      assert.ok(
        ids.has(`${label}:gap:${gap.from_revision}:${gap.identity}`),
        `the restore gap delivered (${[...ids].filter((i) => i.includes(':gap:')).join(', ')})`,
      );
      for (const [i, rev] of fresh.entries()) assert.ok(ids.has(`${label}:t1:${rev}:/l/${w.ns}/new-${i}`), `new-${i} at reused revision ${rev} delivered`);
      const newTimeline = rx.delivered.filter((d) => d.unmapped.timeline === 1).map((d) => d.unmapped.key);
      assert.deepEqual(
        newTimeline.filter((k) => String(k).includes('/new-')),
        fresh.map((_, i) => `${w.ns}/new-${i}`),
        'in order, each once',
      );

      // (d) Exact with pages of 3: nothing of the old timeline above the divergence is left unmarked...
      const after = BigInt(gap.from_revision) - 1n;
      const [unmarked] = await store.rows<{ n: string }>(
        'SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND timeline = 0 AND revision > {a:UInt64} AND superseded_by = 0',
        { c: label, a: after.toString() },
      );
      assert.equal(unmarked?.n, '0', 'every old-timeline event above the divergence is marked');
      const [marked] = await store.rows<{ n: string }>(
        'SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND timeline = 0 AND rolled_back_by = 1 AND superseded_by = 1',
        { c: label },
      );
      assert.ok(Number(marked?.n) >= 3 + 16, `the rolled-back releases and later grants stay, marked (${marked?.n})`);
      // ...every later grant is marked rolled back, each held grant is carried once into timeline 1 and open there.
      const grants = await store.rows<{ key: string; timeline: number; end_kind: string; rolled_back_by: number; superseded_by: number }>(
        'SELECT key, timeline, end_kind, rolled_back_by, superseded_by FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} ORDER BY key, timeline',
        { c: label },
      );
      const later = grants.filter((g) => g.key.includes('/later-'));
      assert.equal(later.length, 8);
      assert.ok(
        later.every((g) => Number(g.rolled_back_by) === 1 && Number(g.superseded_by) === 1),
        'every later grant rolled back',
      );
      const carried = grants.filter((g) => g.key.includes('/held-') && Number(g.timeline) === 1);
      assert.equal(carried.length, HELD, 'each held grant carried once');
      assert.ok(
        carried.every((g) => g.end_kind === '' && Number(g.superseded_by) === 0),
        'open in the new timeline',
      );
      const oldHeld = grants.filter((g) => g.key.includes('/held-') && Number(g.timeline) === 0);
      assert.ok(oldHeld.length === HELD && oldHeld.every((g) => Number(g.superseded_by) === 1), 'their old rows superseded, kept');
      // ...and the snapshot of the restored cluster holds every held grant (more than a page of them).
      const [snap] = await store.rows<{ n: string }>(
        "SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND event_type = 'snapshot-hold' AND timeline = 1",
        { c: label },
      );
      // (A hold put at the divergence revision itself is captured by its own event, not the snapshot.)
      assert.ok(Number(snap?.n) >= HELD - 1 && Number(snap?.n) <= HELD, `the snapshot holds the ${HELD} held grants (${snap?.n})`);
      // Carried, rolled-back and new grants all agree with their events (grantsCheck.ts: what an export checks).
      const disagree = await checkGrantsAgainstEvents(store, { cluster: label }, { fromMs: 0, toMs: Date.now() + 60_000 }, { settleMs: 0, limit: 50 });
      assert.deepEqual(disagree.map(formatGrantProblem), [], 'every grant agrees with its events');
    } finally {
      await tailer.close();
      await rx.close();
      etcd.close();
      await own.stop();
      await closeStore();
    }
  });
});
