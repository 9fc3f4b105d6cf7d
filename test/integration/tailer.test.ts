// The revision tailer in-process against the real etcd of the test services
// and an embedded ClickHouse of this file's own: complete capture, grant
// linking, expiry brackets, mass expiry, a ClickHouse failure mid-stream,
// spool shipping and the tailer routes. Each test uses its own cluster label
// and key namespace.
import assert from 'node:assert/strict';
import { mkdirSync, appendFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { Registry } from 'prom-client';
import { buildApp } from '../../api/app.js';
import { HealthState } from '../../platform/health.js';
import { tailerRoutes } from '../../api/routes/tailers.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { holdKey } from '../../core/keyspace.js';
import { TailerReplica, type ReplicaOptions } from '../../tailer/replica.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { startTailerRole } from '../../roles/tailer.js';
import { startPrivateEtcd, type PrivateEtcd } from '../support/privateEtcd.js';
import { spoolFile } from '../../tailer/sink/spoolShipper.js';
import { tailerMetrics } from '../../tailer/tailerMetrics.js';
import { assertExactCapture, waitFor } from '../support/capture.js';
import { tempDir, tempStore, testConfig, uniqueId } from '../support/env.js';
import { ETCD_DEFAULT_MAX_TXN_OPS, Workload } from '../support/workload.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

let store: AuditStore;
let closeStore: () => Promise<void>;
let client: Etcd3;
const replicas: TailerReplica[] = [];

before(async () => {
  ({ store, close: closeStore } = await tempStore());
  client = createEtcdClient({ name: 'test', endpoints });
});

after(async () => {
  for (const r of replicas) await r.close();
  client.close();
  await closeStore();
});

async function head(): Promise<bigint> {
  const res = await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true });
  return BigInt(res.header.revision);
}

// The Workload stands a lease revoke in for an expiry (it does not wait out a TTL). A revoke before the
// TTL ran out is no expiry to the lease witness, so these tailers run without it; the witness has its
// own tests (leaseWitness.test.ts, tailerOrigin.test.ts) and the chaos run lets leases really lapse.
const NO_WITNESS = { leaseWitness: false } as const;

/** A tailer for a fresh cluster label, its checkpoint set to `from - 1` (history before is not ours). */
async function startTailer(
  label: string,
  from: bigint,
  options: ReplicaOptions = {},
  extra: { health?: HealthState; metrics?: Registry; ep?: string[] } = {},
): Promise<TailerReplica> {
  await store.insert('checkpoints', [{ cluster: label, revision: (from - 1n).toString(), leader: 'test' }]);
  const replica = new TailerReplica(
    {
      cluster: { name: label, endpoints: extra.ep ?? endpoints },
      store,
      log: log.child({ cluster: label }),
      health: extra.health,
      metrics: extra.metrics ? tailerMetrics(extra.metrics) : undefined,
    },
    { electionTtlSeconds: 3, catchUpWindows: 4, splitMinRevisions: 100, checkpointIntervalMs: 100, ...NO_WITNESS, ...options },
  );
  replicas.push(replica);
  replica.start();
  return replica;
}

async function waitCheckpoint(label: string, atLeast: bigint, timeoutMs = 60_000): Promise<void> {
  await waitFor(`checkpoint of ${label} ≥ ${atLeast}`, async () => ((await readCheckpoint(store, label)) >= atLeast ? true : undefined), timeoutMs, 200);
}

describe('tailer (in-process)', () => {
  it('captures a mixed workload exactly, catching up in windows and then live; links each end to its grant', async () => {
    const label = uniqueId('c');
    const w = new Workload(client, uniqueId('ns'));
    const from = (await head()) + 1n;
    await w.mixed(40); // history written before the tailer runs: catch-up
    const replica = await startTailer(label, from);
    await w.mixed(5); // and while it runs: live
    const end = await w.clock();
    await waitCheckpoint(label, BigInt(end));
    const n = await assertExactCapture(store, label, client, from, BigInt(end), w.expected);
    assert.ok(n >= w.expected.length);

    // Every end event names its grant; every grant of the namespace ended exactly as recorded.
    const grants = await store.rows<{ key: string; grant_revision: string; end_kind: string; end_revision: string; token: string; start_known: number }>(
      `SELECT key, grant_revision, end_kind, end_revision, token, start_known FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND namespace = {ns:String}`,
      { c: label, ns: w.ns },
    );
    const grantsByRev = w.expected.filter((e) => e.type === 'grant');
    assert.equal(grants.length, grantsByRev.length);
    const ends = w.expected.filter((e) => ['release', 'expiry', 'force-release', 'session-close'].includes(e.type));
    for (const e of ends) {
      const g = grants.find((x) => `/l/${x.key}` === e.key && x.end_revision === e.revision);
      assert.ok(g, `grant row for end ${e.revision} ${e.key}`);
      assert.equal(g.end_kind, { release: 'release', expiry: 'expiry', 'force-release': 'force', 'session-close': 'session-close' }[e.type as string]);
      assert.ok(grantsByRev.some((x) => x.key === e.key && x.revision === g.grant_revision));
      assert.equal(g.token, g.grant_revision); // epoch 0
      assert.equal(Number(g.start_known), 1);
    }
    assert.equal(replica.status().leader, true);
  });

  it('expiry times fall inside their recorded bracket', async () => {
    const label = uniqueId('c');
    const w = new Workload(client, uniqueId('ns'));
    const from = (await head()) + 1n;
    await startTailer(label, from, { clockIntervalMs: 300 });
    const windows: Array<{ revision: string; before: number; after: number }> = [];
    for (let i = 0; i < 6; i += 1) {
      const s = await w.session();
      await w.grant(s, `e${i}`);
      await new Promise((r) => setTimeout(r, 150 + i * 70));
      windows.push(await w.expire(s));
    }
    const end = await w.clock();
    await waitCheckpoint(label, BigInt(end));
    const rows = await store.rows<{ revision: string; wall_time: string; time_error_ms: number; time_estimated: number }>(
      `SELECT revision, toUnixTimestamp64Milli(wall_time) AS wall_time, time_error_ms, time_estimated FROM {db:Identifier}.events FINAL
       WHERE cluster = {c:String} AND event_type = 'expiry' AND namespace = {ns:String} ORDER BY revision`,
      { c: label, ns: w.ns },
    );
    assert.equal(rows.length, windows.length);
    for (const [i, r] of rows.entries()) {
      const win = windows[i];
      assert.ok(win);
      assert.equal(r.revision, win.revision);
      assert.equal(Number(r.time_estimated), 1);
      const est = Number(r.wall_time);
      const err = Number(r.time_error_ms);
      assert.ok(err < 2_000, `bracket error ${err} ms is about one clock interval`);
      // The commit happened within [before, after] (our own clock around the revoke); the bracket must contain it.
      assert.ok(
        est - err <= win.after && est + err >= win.before,
        `bracket [${est - err}, ${est + err}] misses the commit window [${win.before}, ${win.after}]`,
      );
    }
  });

  it('mass expiry: one session with 20 000 holds lapses → 20 000 expiry events, each linked to its grant', { timeout: 240_000 }, async () => {
    const label = uniqueId('c');
    const w = new Workload(client, uniqueId('ns'));
    const from = (await head()) + 1n;
    await startTailer(label, from);
    const s = await w.session();
    const paths = Array.from({ length: 20_000 }, (_, i) => `k/${i}`);
    const grantRevs = new Set<string>();
    // In txns within etcd's default limits; the expiry still deletes all 20 000 at one revision.
    for (let i = 0; i < paths.length; i += ETCD_DEFAULT_MAX_TXN_OPS) grantRevs.add(await w.grantMany(s, paths.slice(i, i + ETCD_DEFAULT_MAX_TXN_OPS)));
    const expiry = await w.expire(s);
    const end = await w.clock();
    await waitCheckpoint(label, BigInt(end), 180_000);
    const [count] = await store.rows<{ n: string; linked: string }>(
      `SELECT count() AS n, countIf(grant_revision IN ({revs:Array(UInt64)})) AS linked FROM {db:Identifier}.events FINAL
       WHERE cluster = {c:String} AND revision = {r:UInt64} AND event_type = 'expiry'`,
      { c: label, r: expiry.revision, revs: [...grantRevs].map(Number) },
    );
    assert.equal(count?.n, '20000');
    assert.equal(count?.linked, '20000');
    const [g] = await store.rows<{ n: string }>(
      `SELECT count() AS n FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND end_kind = 'expiry' AND end_revision = {r:UInt64}`,
      { c: label, r: expiry.revision },
    );
    assert.equal(g?.n, '20000');
  });

  it('ClickHouse failure mid-stream: the checkpoint does not move during it; afterwards the capture is exact', { timeout: 180_000 }, async () => {
    const label = uniqueId('c');
    const w = new Workload(client, uniqueId('ns'));
    const from = (await head()) + 1n;
    await startTailer(label, from, { sink: { initialBackoffMs: 50, maxBackoffMs: 500 } });
    await w.mixed(3);
    const before = await w.clock();
    await waitCheckpoint(label, BigInt(before));
    // A real fault in the real store: the events table disappears under the sink.
    await store.command('DETACH TABLE {db:Identifier}.events');
    let reattached = false;
    try {
      // A checkpoint for rows made durable just before the fault may still land; after that nothing moves.
      await new Promise((r) => setTimeout(r, 1_000));
      const stuck = await readCheckpoint(store, label);
      await w.mixed(3);
      await new Promise((r) => setTimeout(r, 3_000));
      assert.equal(await readCheckpoint(store, label), stuck, 'checkpoint moved while inserts failed');
      await store.command('ATTACH TABLE {db:Identifier}.events');
      reattached = true;
    } finally {
      if (!reattached) await store.command('ATTACH TABLE {db:Identifier}.events');
    }
    await w.mixed(2);
    const end = await w.clock();
    await waitCheckpoint(label, BigInt(end), 120_000);
    await assertExactCapture(store, label, client, from, BigInt(end), w.expected);
  });

  it('lag alarm: raised once the lag reaches lagAlarmRevisions while the sink is held, cleared once caught up', { timeout: 120_000 }, async () => {
    const label = uniqueId('c');
    const w = new Workload(client, uniqueId('ns'));
    const health = new HealthState(); // the alarm dependency the role gives the tailer (/readyz reads it)
    const alarm = `tailer-lag:${label}`;
    const from = (await head()) + 1n;
    await startTailer(label, from, { lagAlarmRevisions: 50, sink: { initialBackoffMs: 50, maxBackoffMs: 500 } }, { health });
    await w.mixed(1);
    await waitCheckpoint(label, BigInt(await w.clock()));
    assert.equal(
      health.alarms().find((a) => a.name === alarm),
      undefined,
      'no alarm while caught up',
    );
    // Hold the sink: the events table disappears, inserts are retried, the checkpoint stays put while the head moves on.
    await store.command('DETACH TABLE {db:Identifier}.events');
    let reattached = false;
    try {
      // (Rows made durable just before the detach may still be checkpointed: the lag is measured from the current checkpoint.)
      while ((await head()) - (await readCheckpoint(store, label)) < 60n) await w.mixed(1);
      const raised = await waitFor('the lag alarm', () => health.alarms().find((a) => a.name === alarm), 30_000);
      const behind = Number(/is (\d+) revisions behind/.exec(raised.message)?.[1]);
      assert.ok(behind >= 50, `raised at a lag of ${behind} revisions (alarm at 50): ${raised.message}`);
      await store.command('ATTACH TABLE {db:Identifier}.events');
      reattached = true;
    } finally {
      if (!reattached) await store.command('ATTACH TABLE {db:Identifier}.events');
    }
    const end = BigInt(await w.clock());
    await waitCheckpoint(label, end);
    await waitFor('the lag alarm to clear', () => (health.alarms().some((a) => a.name === alarm) ? undefined : true), 30_000);
    await assertExactCapture(store, label, client, from, end, w.expected);
  });

  it('lag alarm: a replica that stops while lagging does not keep the alarm (it is no longer the one tailing)', { timeout: 120_000 }, async () => {
    const label = uniqueId('c');
    const w = new Workload(client, uniqueId('ns'));
    const health = new HealthState();
    const alarm = `tailer-lag:${label}`;
    const replica = await startTailer(
      label,
      (await head()) + 1n,
      { lagAlarmRevisions: 50, drainDeadlineMs: 500, sink: { initialBackoffMs: 50, maxBackoffMs: 200 } },
      { health },
    );
    await w.mixed(1);
    await waitCheckpoint(label, BigInt(await w.clock()));
    await store.command('DETACH TABLE {db:Identifier}.events');
    try {
      while ((await head()) - (await readCheckpoint(store, label)) < 60n) await w.mixed(1);
      await waitFor('the lag alarm', () => health.alarms().find((a) => a.name === alarm), 30_000);
      await replica.close();
      assert.equal(
        health.alarms().find((a) => a.name === alarm),
        undefined,
        'the stopped replica cleared its lag alarm',
      );
    } finally {
      await store.command('ATTACH TABLE {db:Identifier}.events');
    }
  });

  it(
    'values ClickHouse rejects or cannot hold, put straight into etcd, go to quarantine with a reason; later grants are captured and the checkpoint passes them',
    { timeout: 120_000 },
    async () => {
      const label = uniqueId('c');
      const w = new Workload(client, uniqueId('ns'));
      const from = (await head()) + 1n;
      await startTailer(label, from);
      // Not through the lock API: anyone who can write under /l/ can do this.
      const hugeWait = holdKey(w.lock('huge-wait'));
      const farFuture = holdKey(w.lock('far-future'));
      const r1 = await client.put(hugeWait).value('{"holder":"x","session":"1","class":"c","epoch":1,"waitMs":1e21,"at":0}').exec();
      const r2 = await client.put(farFuture).value('{"holder":"x","session":"1","class":"c","epoch":1,"waitMs":0,"at":9e18}').exec();
      const bad = [String(r1.header.revision), String(r2.header.revision)];
      const s = await w.session();
      const later = [await w.grant(s, 'after-1'), await w.grant(s, 'after-2')];
      await w.release(s, 'after-1');
      const end = BigInt(await w.clock());
      await waitCheckpoint(label, end);
      const grants = await store.rows<{ grant_revision: string }>(
        'SELECT grant_revision FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND namespace = {ns:String} ORDER BY grant_revision',
        { c: label, ns: w.ns },
      );
      assert.deepEqual(
        grants.map((g) => g.grant_revision),
        later,
      );
      const q = await store.rows<{ revision: string; key: string; value: string; reason: string }>(
        'SELECT revision, key, value, reason FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} ORDER BY revision, key',
        { c: label },
      );
      assert.deepEqual([...new Set(q.map((r) => r.revision))], bad);
      // The decoder refuses them first, naming the field (tailerRowWriter.test.ts covers what still reaches ClickHouse).
      assert.ok(
        q.some((r) => r.key === hugeWait && /waitMs|wait_ms/.test(r.reason)),
        JSON.stringify(q),
      );
      assert.ok(
        q.some((r) => r.key === farFuture && r.value.includes('9e18') && /\/at must be|out of range for DateTime64/.test(r.reason)),
        JSON.stringify(q),
      );
      assert.ok((await readCheckpoint(store, label)) >= end);
    },
  );

  it('ships fail-open spools as unprotected grants, idempotently; quarantines bad lines', async () => {
    const label = uniqueId('c');
    const tmp = tempDir('lockaudit-spool-');
    try {
      const file = spoolFile(tmp.dir, label);
      mkdirSync(path.dirname(file), { recursive: true });
      const ns = uniqueId('ns');
      appendFileSync(file, `${JSON.stringify({ id: 'u1', key: `${ns}/a`, holder: 'h1', session: '1', class: 'cache', at: 1_700_000_000_000 })}\n`);
      appendFileSync(
        file,
        `${JSON.stringify({ seq: 2, node: 'n1', key: `/l/${ns}/b`, holder: 'h2', session: 2, class: 'cache', grantedAt: '2024-01-01T00:00:00Z', waitMs: 5 })}\n`,
      );
      appendFileSync(file, 'this is not json\n');
      appendFileSync(file, '{"id":"partial"'); // still being written
      await startTailer(label, (await head()) + 1n, { dataDir: tmp.dir, spoolIntervalMs: 200 });
      const count = async (): Promise<number> => {
        const [r] = await store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND unprotected = 1', {
          c: label,
        });
        return Number(r?.n ?? 0);
      };
      await waitFor('two unprotected grants', async () => ((await count()) === 2 ? true : undefined), 30_000);
      appendFileSync(file, `,"key":"${ns}/c","holder":"h3","session":"3","class":"cache","at":1700000000001}\n`);
      await waitFor('three unprotected grants', async () => ((await count()) === 3 ? true : undefined), 30_000);
      // Shipping everything again (the sidecar lost) counts once.
      const { SpoolShipper } = await import('../../tailer/sink/spoolShipper.js');
      const { rmSync } = await import('node:fs');
      rmSync(`${file}.shipped`, { force: true });
      assert.equal(await new SpoolShipper(store, label, tmp.dir, log).shipOnce(), 3);
      assert.equal(await count(), 3);
      const rows = await store.rows<{ token: string; grant_revision: string; spool_id: string }>(
        'SELECT token, grant_revision, spool_id FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND unprotected = 1 ORDER BY spool_id',
        { c: label },
      );
      // Unprotected rows only: an earlier test's lease lapsing in the shared etcd meanwhile adds a protected (ended) grant row here.
      assert.deepEqual(
        rows.map((r) => r.spool_id),
        ['n1:2', 'partial', 'u1'],
      );
      assert.ok(rows.every((r) => r.token === '0' && r.grant_revision === '0'));
      const [q] = await store.rows<{ n: string }>("SELECT count() AS n FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} AND op = 'spool'", {
        c: label,
      });
      assert.equal(q?.n, '1');
    } finally {
      tmp.remove();
    }
  });

  it('GET /v1/tailers and /v1/gaps answer with revisions as strings, for the right roles only', async () => {
    const label = uniqueId('c');
    const registry = new Registry();
    const health = new HealthState();
    await startTailer(label, (await head()) + 1n, {}, { health, metrics: registry });
    const w = new Workload(client, uniqueId('ns'));
    await w.mixed(1);
    const end = await w.clock();
    await waitCheckpoint(label, BigInt(end));
    await store.insert('gaps', [{ cluster: label, from_revision: '5', to_revision: '9', detected_at: Date.now(), reason: 'test gap' }]);
    const app = await buildApp({ config, logger: log, store, verifier: new ApiTokenVerifier(store), health, metrics: registry }, [tailerRoutes]);
    try {
      const auditor = await createApiToken(store, 'auditor@test', ['auditor']);
      const client2 = await createApiToken(store, 'client@test', ['client']);
      await waitFor('a status row', async () => {
        const res = await app.inject({ method: 'GET', url: '/v1/tailers', headers: { authorization: `Bearer ${auditor.token}` } });
        const item = (res.json() as { items: Array<{ cluster: string; leader: string | null }> }).items.find((i) => i.cluster === label);
        return item?.leader ? true : undefined;
      });
      const res = await app.inject({ method: 'GET', url: '/v1/tailers', headers: { authorization: `Bearer ${auditor.token}` } });
      assert.equal(res.statusCode, 200);
      const item = (res.json() as { items: Array<Record<string, unknown>> }).items.find((i) => i.cluster === label);
      assert.ok(item);
      assert.equal(typeof item.checkpoint, 'string');
      assert.ok(BigInt(item.checkpoint as string) >= BigInt(end));
      assert.equal(item.gaps, 1);
      const gaps = await app.inject({ method: 'GET', url: `/v1/gaps?cluster=${label}`, headers: { authorization: `Bearer ${auditor.token}` } });
      assert.deepEqual(
        (gaps.json() as { items: Array<Record<string, unknown>> }).items.map((g) => [g.fromRevision, g.toRevision]),
        [['5', '9']],
      );
      assert.equal((await app.inject({ method: 'GET', url: '/v1/gaps', headers: { authorization: `Bearer ${client2.token}` } })).statusCode, 403);
      assert.equal((await app.inject({ method: 'GET', url: '/v1/tailers' })).statusCode, 401);
      assert.equal((await app.inject({ method: 'GET', url: '/v1/gaps?limit=0', headers: { authorization: `Bearer ${auditor.token}` } })).statusCode, 400);
      const metrics = await registry.metrics();
      assert.match(metrics, new RegExp(`lockaudit_tailer_leader\\{cluster="${label}"\\} 1`));
      assert.match(metrics, /lockaudit_tailer_watermark_revision/);
    } finally {
      await app.close();
    }
  });

  it("GET /v1/tailers reports etcd's real head and compact revision, and never a head below the checkpoint", { timeout: 120_000 }, async () => {
    // A private etcd (on ports of this run's block no service uses): no other test's writes move its head.
    const own: PrivateEtcd = await startPrivateEtcd(config.local.portBase + 2, config.local.portBase + 12);
    const etcd = createEtcdClient({ name: 'own', endpoints: [own.endpoint] });
    const app = await buildApp({ config, logger: log, store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: new Registry() }, [
      tailerRoutes,
    ]);
    let replica: TailerReplica | undefined;
    try {
      const label = uniqueId('c');
      const w = new Workload(etcd, uniqueId('ns'));
      await w.mixed(2);
      const compactAt = BigInt(await w.clock());
      await etcd.kv.compact({ revision: compactAt.toString(), physical: true });
      // No clock writes of the tailer's own while we look: only what we write moves etcd's head.
      replica = await startTailer(label, compactAt + 1n, { clockIntervalMs: 600_000 }, { ep: [own.endpoint] });
      await w.mixed(1);
      await waitCheckpoint(label, BigInt(await w.clock()));
      // Outside the watched keyspace: etcd's head moves, the watch hears nothing of it.
      const outside = BigInt((await etcd.put('/zz/outside').value('x').exec()).header.revision);
      const auditor = await createApiToken(store, 'auditor@test', ['auditor']);
      const tailer = async (cluster: string): Promise<Record<string, unknown> | undefined> => {
        const res = await app.inject({ method: 'GET', url: '/v1/tailers', headers: { authorization: `Bearer ${auditor.token}` } });
        return (res.json() as { items: Array<Record<string, unknown>> }).items.find((i) => i.cluster === cluster);
      };
      const item = await waitFor(
        'a status with the real head',
        async () => {
          const t = await tailer(label);
          return t && BigInt(t.headRevision as string) >= outside ? t : undefined;
        },
        30_000,
        200,
      );
      assert.equal(item.compactRevision, compactAt.toString());
      assert.ok(BigInt(item.headRevision as string) >= BigInt(item.checkpoint as string));

      // A status row older than the newest checkpoint (the console showed checkpoint 1265, head 1263, lag 0).
      const stale = uniqueId('c');
      await store.insert('checkpoints', [{ cluster: stale, revision: '1265', leader: 'r' }]);
      await store.insert('tailer_status', [
        {
          cluster: stale,
          cluster_id: '1',
          leader: 'r',
          checkpoint: '1260',
          head_revision: '1263',
          compact_revision: '7',
          lag_revisions: '3',
          lag_seconds: 0,
          updated_at: Date.now(),
        },
      ]);
      const s = await tailer(stale);
      assert.deepEqual([s?.checkpoint, s?.headRevision, s?.lagRevisions, s?.compactRevision], ['1265', '1265', '0', '7']);
    } finally {
      await replica?.close();
      await app.close();
      etcd.close();
      await own.stop();
    }
  });

  it('two etcd clusters tailed at once by the role: rows kept apart by cluster', { timeout: 120_000 }, async () => {
    const second = await startPrivateEtcd(25_521, 25_531);
    const other = createEtcdClient({ name: 'b', endpoints: [second.endpoint] });
    try {
      const a = uniqueId('a');
      const b = uniqueId('b');
      const cfg = testConfig({ LOCKAUDIT_ETCD: `${a}=${endpoints.join(',')};${b}=${second.endpoint}`, LOCKAUDIT_TAILER_ELECTION_TTL_SECONDS: '3' });
      const fromA = (await head()) + 1n;
      const fromB = BigInt((await other.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision) + 1n;
      await store.insert('checkpoints', [
        { cluster: a, revision: (fromA - 1n).toString(), leader: 'test' },
        { cluster: b, revision: (fromB - 1n).toString(), leader: 'test' },
      ]);
      const registry = new Registry();
      const role = await startTailerRole(
        { config: cfg, logger: log, store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: registry },
        { checkpointIntervalMs: 100, dataDir: undefined, ...NO_WITNESS },
      );
      try {
        const wa = new Workload(client, uniqueId('ns'));
        const wb = new Workload(other, uniqueId('ns'));
        await Promise.all([wa.mixed(4), wb.mixed(4)]);
        const [endA, endB] = await Promise.all([wa.clock(), wb.clock()]);
        await waitCheckpoint(a, BigInt(endA));
        await waitCheckpoint(b, BigInt(endB));
        await assertExactCapture(store, a, client, fromA, BigInt(endA), wa.expected);
        await assertExactCapture(store, b, other, fromB, BigInt(endB), wb.expected);
        // Kept apart: neither cluster's rows carry the other's namespace.
        const [cross] = await store.rows<{ n: string }>(
          `SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE (cluster = {a:String} AND namespace = {nb:String}) OR (cluster = {b:String} AND namespace = {na:String})`,
          { a, b, na: wa.ns, nb: wb.ns },
        );
        assert.equal(cross?.n, '0');
        assert.equal(role.status().filter((s) => s.leader).length, 2);
      } finally {
        await role.close();
      }
    } finally {
      other.close();
      await second.stop();
    }
  });

  it(
    'compaction past the checkpoint while stopped → a gap record with the right range, the alarm, a snapshot, capture resumes',
    { timeout: 120_000 },
    async () => {
      const own: PrivateEtcd = await startPrivateEtcd(25_522, 25_532);
      const etcd = createEtcdClient({ name: 'own', endpoints: [own.endpoint] });
      try {
        const label = uniqueId('c');
        const w = new Workload(etcd, uniqueId('ns'));
        const health = new HealthState();
        const registry = new Registry();
        const startRev = BigInt((await etcd.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision) + 1n;
        const first = await startTailer(label, startRev, {}, { ep: [own.endpoint] });
        await w.mixed(2);
        const mid = await w.clock();
        await waitCheckpoint(label, BigInt(mid));
        await first.close();
        const stoppedAt = await readCheckpoint(store, label);
        // While the tailer is stopped: more history, a hold that stays, then compaction past the checkpoint.
        await w.mixed(3);
        const keeper = await w.session();
        const keptRev = await w.grant(keeper, 'kept');
        const compactAt = BigInt(await w.clock());
        await etcd.kv.compact({ revision: compactAt.toString(), physical: true });
        const second = new TailerReplica(
          { cluster: { name: label, endpoints: [own.endpoint] }, store, log, health, metrics: tailerMetrics(registry) },
          { electionTtlSeconds: 3, checkpointIntervalMs: 100, ...NO_WITNESS },
        );
        replicas.push(second);
        second.start();
        await waitCheckpoint(label, compactAt);
        const gaps = await store.rows<{ from_revision: string; to_revision: string; reason: string }>(
          'SELECT from_revision, to_revision, reason FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String}',
          { c: label },
        );
        assert.deepEqual(
          gaps.map((g) => [g.from_revision, g.to_revision]),
          [[(stoppedAt + 1n).toString(), compactAt.toString()]],
        );
        assert.ok(
          health.alarms().some((a) => a.name === `tailer-gap:${label}`),
          'gap alarm raised',
        );
        assert.match(await registry.metrics(), new RegExp(`lockaudit_tailer_gaps_total\\{cluster="${label}"\\} 1`));
        const snap = await store.rows<{ key: string; grant_revision: string }>(
          "SELECT key, grant_revision FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND event_type = 'snapshot-hold'",
          { c: label },
        );
        assert.ok(snap.some((r) => r.key === `/l/${w.lock('kept')}` && r.grant_revision === keptRev));
        const [g] = await store.rows<{ start_known: number; end_kind: string }>(
          'SELECT start_known, end_kind FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND key = {k:String}',
          { c: label, k: w.lock('kept') },
        );
        assert.equal(Number(g?.start_known), 0);
        // Capture resumes after the snapshot revision, exactly.
        await w.release(keeper, 'kept');
        await w.mixed(2);
        const end = await w.clock();
        await waitCheckpoint(label, BigInt(end));
        await assertExactCapture(store, label, etcd, compactAt + 1n, BigInt(end), w.expected);
        const [ended] = await store.rows<{ start_known: number; end_kind: string }>(
          'SELECT start_known, end_kind FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND key = {k:String}',
          { c: label, k: w.lock('kept') },
        );
        assert.equal(ended?.end_kind, 'release');
        assert.equal(Number(ended?.start_known), 0, 'the grant still counts as seen only in the snapshot');
        await second.close();
      } finally {
        etcd.close();
        await own.stop();
      }
    },
  );
});
