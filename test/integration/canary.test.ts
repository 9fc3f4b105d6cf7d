// The end-to-end canary (issue 44 item 2) against real etcd, the store and
// MinIO: a canary lock acquired and released through the lock engine every
// half second, captured by a real tailer, sealed by a real digest worker.
// Each stage is stopped in turn — the digest worker, the tailer, the lock
// engine — and the right stage alarms within its bound while the stages
// before it keep up; a stage that comes back clears. The canary's namespace
// is refused to callers, a hold written there around the API does not count,
// and grant history leaves the canary's grants out unless asked for them.
import assert from 'node:assert/strict';
import { createPublicKey, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { generateDigestSigner, keyringOf } from '../../core/digestKey.js';
import { createEtcdClient } from '../../core/etcd.js';
import { PREFIX } from '../../core/keyspace.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { originSecret } from '../../core/originSecret.js';
import { createS3Client } from '../../core/s3.js';
import { DigestWorker } from '../../exporters/digests/worker.js';
import { digestObjectName, type Digest } from '../../exporters/digests/format.js';
import { readObjectText } from '../../exporters/storage/objectStore.js';
import { HealthState } from '../../platform/health.js';
import { grantHistory } from '../../reports/grantHistory/index.js';
import { CanaryLoop } from '../../roles/canary/loop.js';
import { canaryMetrics, CanaryMonitor, type CanaryBounds, type CanaryStage } from '../../roles/canary/monitor.js';
import { WebhookDelivery } from '../../exporters/alerts/webhookDelivery.js';
import { alertMetrics } from '../../exporters/alerts/alertMetrics.js';
import { tokenHashKey } from '../../core/tokenHash.js';
import { alertReceiver, type AlertReceiver } from '../support/alertReceiver.js';
import { CanaryFollower } from '../../roles/canary/stages.js';
import { TailerReplica } from '../../tailer/replica.js';
import { tailerMetrics } from '../../tailer/tailerMetrics.js';
import { checkpointAtHead, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { lockApp, type LockApp } from '../support/lockApp.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
// Room for a loaded 2-core CI machine, where one cycle (etcd txns, store reads) can take seconds.
const BOUNDS: CanaryBounds = { lock: 10_000, stored: 15_000, sealed: 20_000, 'sink:siem': 15_000 };

describe('the end-to-end canary', { timeout: 300_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let client: Etcd3;
  let la: LockApp;
  let tailer: TailerReplica | undefined;
  let digests: DigestWorker | undefined;
  let loop: CanaryLoop;
  let monitor: CanaryMonitor;
  let observing: Promise<unknown> = Promise.resolve();
  let rx: AlertReceiver;
  let sinkRun: { abort: AbortController; done: Promise<void> } | undefined;
  /** The lock app's: its /readyz shows what the monitor judged. */
  let health: HealthState;
  const cluster = uniqueId('cn');
  const key = `lockaudit-canary/${uniqueId('host')}`;
  const bucket = uniqueId('cnarch-');
  const s3 = createS3Client(config.s3);
  const signer = generateDigestSigner();
  const registry = createMetricsRegistry();

  const startTailer = (): TailerReplica => {
    const replica = new TailerReplica(
      { cluster: { name: cluster, endpoints }, store, log, health: new HealthState(), metrics: tailerMetrics(registry) },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, clockIntervalMs: 200, originSecret: originSecret(config) },
    );
    replica.start();
    return replica;
  };
  /** An alert sink that subscribes to the canary, delivering to a real HTTP receiver. */
  const startSink = () => {
    const sink = { name: 'siem', url: rx.url, secret: 'canary-test-secret-0123456789', rules: [{ kinds: ['canary' as const] }], pollIntervalMs: 100 };
    const abort = new AbortController();
    const done = new WebhookDelivery({ store, log, metrics: alertMetrics(registry), cluster, sink, tokenKey: tokenHashKey(randomBytes(32)) }).run(abort.signal);
    return { abort, done };
  };
  const startDigests = (): DigestWorker => {
    const worker = new DigestWorker({
      cluster,
      store,
      s3,
      bucket,
      historyBucket: bucket,
      signer,
      logger: log,
      periodMs: 1_000,
      settleMs: 200,
      lookbackPeriods: 5,
      alarmAfterPeriods: 1_000,
      pollIntervalMs: 200,
      allowUnlocked: true,
    });
    worker.start();
    return worker;
  };
  /** What an earlier test stopped and did not get to start again (it failed part-way) runs again: each test starts whole. */
  const whole = (): void => {
    tailer ??= startTailer();
    digests ??= startDigests();
    sinkRun ??= startSink();
  };
  /** The stages as the monitor judged them last, by name. */
  const stages = () => Object.fromEntries((health.canary() ?? []).map((s) => [s.stage, s]));
  const alarmOf = (stage: CanaryStage) => health.alarms().find((a) => a.name === `canary:${cluster}:${stage}`);
  /** A stopped stage's alarm within its bound (and a cycle or two, and a slow read on a loaded machine), then said of the right stage once the stages before it keep up (under load one may lag a moment too). */
  const stopsAt = async (stage: CanaryStage, stoppedAt: number): Promise<void> => {
    const bound = BOUNDS[stage] ?? 0;
    await waitFor(`the ${stage} stage alarm`, () => alarmOf(stage), bound + 30_000, 200);
    assert.ok(Date.now() - stoppedAt <= bound + 12_000, `${stage}: raised within its bound (and a cycle or two, and a slow read on a loaded machine)`);
    const named = new RegExp(`last passed stage ${stage} \\d+ s ago \\(bound ${bound / 1000} s\\); the stages before it keep up: the audit path stops here`);
    await waitFor('the alarm naming where the path stops', () => (named.test(alarmOf(stage)?.message ?? '') ? true : undefined), 30_000, 200);
  };

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    client = createEtcdClient({ name: 'test', endpoints });
    await s3.makeBucket(bucket, config.s3.region);
    la = await lockApp(config, store);
    health = la.ctx.health;
    await checkpointAtHead(store, client, cluster);
    tailer = startTailer();
    digests = startDigests();
    rx = await alertReceiver();
    sinkRun = startSink();
    const follower = new CanaryFollower({
      store,
      cluster,
      sinks: ['siem'],
      digests: () => ({ s3, bucket, keyring: keyringOf([createPublicKey(signer.publicKeyPem)]) }),
    });
    monitor = new CanaryMonitor({ cluster, follower, grants: () => loop.grants(), bounds: BOUNDS, health, metrics: canaryMetrics(registry), logger: log });
    loop = new CanaryLoop({
      lock: la.service,
      intervalMs: 500,
      logger: log,
      key,
      onCycle: (cycle) => {
        observing = Promise.all([observing, monitor.observe(cycle)]);
      },
    });
    loop.start();
  });
  after(async () => {
    sinkRun?.abort.abort();
    await sinkRun?.done;
    await rx?.close();
    await loop?.close();
    await observing.catch(() => undefined);
    await digests?.close();
    await tailer?.close();
    await la?.close().catch(() => undefined);
    client?.close();
    await closeStore();
  });

  it('follows the canary lock through the store into a signed digest; every stage keeps up', async () => {
    await waitFor(
      'every stage passed and within its bound',
      () => {
        const s = stages();
        return ['lock', 'stored', 'sealed', 'sink:siem'].every((n) => s[n]?.passedAt && !s[n].behind && s[n].ageSeconds <= 5) ? s : undefined;
      },
      60_000,
      200,
    );
    assert.deepEqual(
      health.alarms().filter((a) => a.code === 'LOCKAUDIT_ALARM_CANARY_STAGE'),
      [],
    );
    const ages = (await canaryMetrics(registry).age.get()).values.filter((v) => v.labels.cluster === cluster);
    assert.deepEqual(ages.map((v) => v.labels.stage).sort(), ['lock', 'sealed', 'sink:siem', 'stored']);
    const bounds = (await canaryMetrics(registry).bound.get()).values.filter((v) => v.labels.cluster === cluster);
    assert.deepEqual(Object.fromEntries(bounds.map((v) => [v.labels.stage, v.value])), { lock: 10, stored: 15, sealed: 20, 'sink:siem': 15 });
    // The sink was sent the canary's grants, as kind canary, and nothing else of it (no releases).
    const canaryEvents = rx.delivered.filter((d) => d.cluster === cluster);
    assert.ok(canaryEvents.length > 0);
    assert.deepEqual([...new Set(canaryEvents.map((d) => d.unmapped.kind))], ['canary']);
  });

  it('/readyz lists the stages for an admin, each with when the canary last passed it', async () => {
    whole();
    const admin = await la.token(uniqueId('root@corp'), ['admin']);
    const ready = await la.call<{ canary?: Array<{ cluster: string; stage: string; passedAt: string | null; behind: boolean }> }>('GET', '/readyz', admin);
    assert.deepEqual(
      ready.body.canary?.map((s) => s.stage),
      ['lock', 'stored', 'sealed', 'sink:siem'],
      JSON.stringify(ready.body),
    );
    assert.ok(ready.body.canary?.every((s) => s.cluster === cluster && s.passedAt !== null && !s.behind));
  });

  it("a cycle after its session's TTL has passed still grants: the session is kept alive, or made again once it lapsed", async () => {
    whole();
    const slow = new CanaryLoop({ lock: la.service, intervalMs: 60_000, logger: log, key: `${key}-slow` });
    assert.deepEqual(await slow.cycle().then((c) => c.ok), true);
    await new Promise((r) => setTimeout(r, 16_000)); // past the canary class's 15 s TTL
    const again = await slow.cycle();
    assert.equal(again.ok, true, again.error);
    await slow.close();
  });

  it('the digest worker stopped: the sealed stage alarms within its bound (a digest placed in the bucket does not count), the stages before it keep up; back, it clears', async () => {
    whole();
    await digests?.close();
    digests = undefined;
    const stoppedAt = Date.now();
    // Whoever holds the bucket's credentials places a digest claiming an hour ahead: altered, it seals nothing.
    const names: string[] = [];
    for await (const o of s3.listObjectsV2(bucket, `digests/${cluster}/`, true)) if (o.name) names.push(o.name);
    const newest = JSON.parse(await readObjectText(s3, bucket, names.sort().at(-1) as string)) as Digest;
    const placed = { ...newest, seq: newest.seq + 1000, periodEnd: new Date(Date.now() + 3_600_000).toISOString() };
    const body = Buffer.from(JSON.stringify(placed));
    await s3.putObject(bucket, digestObjectName(cluster, placed.seq), body, body.length);
    // And an object under a digest's name that no JSON reader can walk (nested 50 000 deep): the other stages are still read.
    const junk = Buffer.from(`${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`);
    await s3.putObject(bucket, digestObjectName(cluster, placed.seq + 1), junk, junk.length);
    await stopsAt('sealed', stoppedAt);
    assert.equal(alarmOf('stored'), undefined);
    assert.equal(alarmOf('lock'), undefined);
    assert.equal(stages().stored?.behind, false);
    // (A worker would refuse to build on the placed digest: it goes before the worker comes back.)
    await s3.removeObject(bucket, digestObjectName(cluster, placed.seq));
    await s3.removeObject(bucket, digestObjectName(cluster, placed.seq + 1));
    digests = startDigests();
    await waitFor('the sealed stage clears', () => (alarmOf('sealed') ? undefined : true), 60_000, 200);
  });

  it('an alert sink stopped: its stage alarms within its bound while the others keep up; back, it clears', async () => {
    whole();
    sinkRun?.abort.abort();
    await sinkRun?.done;
    sinkRun = undefined;
    const stoppedAt = Date.now();
    await stopsAt('sink:siem', stoppedAt);
    for (const stage of ['lock', 'stored', 'sealed'] as const) assert.equal(alarmOf(stage), undefined, stage);
    sinkRun = startSink();
    await waitFor('the sink stage clears', () => (alarmOf('sink:siem') ? undefined : true), 60_000, 200);
  });

  it('the tailer stopped: the stored stage alarms, named as where the path stops; back, it clears', async () => {
    whole();
    await tailer?.close();
    tailer = undefined;
    const stoppedAt = Date.now();
    // Whoever can write the store places a canary grant row (origin api, released) for the canary's key: not one of
    // the loop's grants, so no progress.
    const last = loop.grants().at(-1);
    assert.ok(last);
    await store.insert('grants', [
      {
        cluster,
        key,
        namespace: 'lockaudit-canary',
        lock_path: key.split('/')[1],
        class: 'lockaudit-canary',
        holder: 'lockaudit-canary',
        session: '1',
        token: String(BigInt(last.revision) + 1_000_000n),
        epoch: 0,
        grant_revision: String(BigInt(last.revision) + 1_000_000n),
        granted_at: Date.now(),
        wait_ms: 0,
        end_kind: 'release',
        end_revision: String(BigInt(last.revision) + 1_000_001n),
        ended_at: Date.now(),
        duration_ms: 1,
        unprotected: 0,
        start_known: 1,
        row_version: String(BigInt(last.revision) + 1_000_001n),
        origin: 'api',
      },
    ]);
    await stopsAt('stored', stoppedAt);
    assert.equal(alarmOf('lock'), undefined, 'the lock engine still grants');
    // The sealed stage follows the stored one: behind too, and named as behind a stage before it.
    const sealed = await waitFor('the sealed stage alarm', () => alarmOf('sealed'), BOUNDS.sealed + 30_000, 200);
    assert.match(sealed.message, /stage stored is behind too/);
    tailer = startTailer();
    await waitFor('the stored stage clears', () => (alarmOf('stored') ? undefined : true), 60_000, 200);
  });

  it('a canary hold written into etcd around the lock API is not progress; the namespace is refused to callers', async () => {
    whole();
    const token = await la.token(uniqueId('app@corp'), ['client']);
    const session = await la.call<{ id: string }>('POST', '/v1/sessions', token, { ttlSeconds: 15 });
    const refused = await la.call<{ error: string; message: string }>('POST', '/v1/locks/acquire', token, {
      key: 'lockaudit-canary/mine',
      session: session.body.id,
      class: 'lockaudit-canary',
    });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.match(refused.body.message, /body\.key: namespace lockaudit-canary is reserved for the platform's canary/);
    // Nor can an admin take its class or namespace over (the canary's own class would fail every cycle).
    const admin = await la.token(uniqueId('root@corp'), ['admin']);
    const cls = {
      namespace: 'lockaudit-canary',
      purpose: 'efficiency',
      enforcement: 'fenced',
      pauseTest: 'x',
      ttlSeconds: 30,
      tier: 'coord',
      onQuorumLoss: 'closed',
      fairness: 'memory',
    };
    const taken = await la.call<{ message: string }>('PUT', '/v1/classes/lockaudit-canary', admin, cls);
    assert.equal(taken.status, 400, JSON.stringify(taken.body));
    assert.match(taken.body.message, /params\.name: class lockaudit-canary is reserved/);
    const squatted = await la.call<{ message: string }>('PUT', '/v1/classes/squatter', admin, cls);
    assert.equal(squatted.status, 400, JSON.stringify(squatted.body));
    assert.match(squatted.body.message, /body\.namespace: lockaudit-canary is reserved/);
    // A hold put by hand under the canary's key, then deleted: a foreign grant, which the stored stage does not count.
    const forgedKey = `${key}-forged`;
    const follower = new CanaryFollower({ store, cluster });
    const put = await client
      .put(`${PREFIX.hold}${forgedKey}`)
      .value(JSON.stringify({ holder: 'lockaudit-canary', session: '1', class: 'lockaudit-canary', epoch: 0, waitMs: 0, at: Date.now() }))
      .exec();
    await client.delete().key(`${PREFIX.hold}${forgedKey}`).exec();
    await waitFor(
      'the forged hold captured',
      async () => {
        const page = await grantHistory(
          { store, limits: config.reports, cursorKey: randomBytes(32) },
          { keyPrefix: forgedKey, cluster, limit: 10 },
          Date.now(),
        );
        return page.items.length > 0 ? page : undefined;
      },
      30_000,
      200,
    );
    // Even asked for by its very key and revision (as if the loop had made it): foreign, so no progress.
    const asIfOurs = [{ key: forgedKey, revision: String(put.header.revision), at: Date.now() }];
    assert.equal((await follower.read(asIfOurs)).stored, null, 'a foreign canary grant is no canary progress');
    // And it stays in the reports: a write around the API into the canary's namespace is not the canary's own.
    const foreign = await grantHistory({ store, limits: config.reports, cursorKey: randomBytes(32) }, { cluster, origin: 'foreign', limit: 100 }, Date.now());
    assert.ok(
      foreign.items.some((g) => g.key === forgedKey),
      'a foreign hold in the canary namespace is listed without asking for the namespace',
    );
  });

  it("grant history leaves the canary's grants out unless asked for them by namespace, key or prefix", async () => {
    whole();
    const deps = { store, limits: config.reports, cursorKey: randomBytes(32) };
    const all = await grantHistory(deps, { cluster, limit: 1000 }, Date.now());
    // The canary's own grants are left out; a foreign hold in its namespace (the test before) is not.
    const canaryOwn = all.items.filter((g) => g.key.startsWith('lockaudit-canary/') && g.origin === 'api');
    assert.equal(canaryOwn.length, 0, JSON.stringify(canaryOwn.slice(0, 3)));
    const asked = await grantHistory(deps, { cluster, namespace: 'lockaudit-canary', limit: 10 }, Date.now());
    assert.ok(asked.items.length > 0);
    assert.ok(asked.items.every((g) => g.key.startsWith('lockaudit-canary/')));
    assert.ok((await grantHistory(deps, { cluster, key, limit: 10 }, Date.now())).items.length > 0);
  });

  it('the lock engine stopped: the lock stage alarms and says why; the stages after it alarm as behind it', async () => {
    whole();
    await la.close();
    const raised = await waitFor('the lock stage alarm', () => alarmOf('lock'), BOUNDS.lock + 30_000, 200);
    assert.match(raised.message, /last passed stage lock \d+ s ago \(bound 10 s\); the last cycle failed: /);
    const stored = await waitFor('the stored stage alarm', () => alarmOf('stored'), BOUNDS.stored + 30_000, 200);
    assert.match(stored.message, /stage lock is behind too/);
  });
});
