// The alert / SIEM webhook sink against this file's own embedded ClickHouse
// and a local receiver (node http on 127.0.0.1) that fails 30 % of requests
// (seeded) and is down for a stretch: every matching event is delivered, in
// order per cluster, none lost; duplicates carry the same event id and
// payload; every delivery's signature verifies; a restart resumes from the
// sink's own checkpoint; a receiver that never accepts ends in dead letters.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import type { AuditStore } from '../../core/clickhouse.js';
import type { AlertWebhookConfig } from '../../core/config.js';
import type { AuditEventRow } from '../../core/events.js';
import { createLogger } from '../../core/logger.js';
import { hashToken, tokenHashKey } from '../../core/tokenHash.js';
import { alertMetrics } from '../../exporters/alerts/alertMetrics.js';
import { SIGNATURE_HEADER, verify } from '../../exporters/alerts/signature.js';
import { WebhookDelivery } from '../../exporters/alerts/webhookDelivery.js';
import { RegisterDelivery } from '../../exporters/alerts/registerDelivery.js';
import { runAlertSinks } from '../../exporters/alerts/service.js';
import { createEtcdClient } from '../../core/etcd.js';
import { runRegister } from '../../reports/riskRegister/index.js';
import { dateInZone } from '../../reports/riskRegister/status.js';
import { waitFor } from '../support/capture.js';
import { addDays, advisoryClass, classEvent } from '../support/grants.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'silent');
const SECRET = 'test-secret-0123456789';
const tokenKey = tokenHashKey(randomBytes(32));

/** mulberry32: a seeded PRNG, so the failure pattern is the same every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function row(cluster: string, revision: number, key: string, over: Partial<AuditEventRow>): AuditEventRow {
  return {
    cluster,
    revision: String(revision),
    key,
    event_type: 'other',
    op: 'put',
    namespace: '',
    lock_path: '',
    class: '',
    holder: '',
    session: '',
    token: '0',
    epoch: 0,
    grant_revision: '0',
    wait_ms: 0,
    wall_time: 1_764_000_000_000 + revision,
    time_estimated: 0,
    time_error_ms: 0,
    create_revision: '0',
    mod_revision: String(revision),
    version: '1',
    lease: '0',
    value: '',
    prev_value: '',
    unprotected: 0,
    ...over,
  };
}

/** A log of one cluster: class definitions, then per revision a grant or an end of each kind, markers, an epoch advance, a gap; and unprotected grants. */
function history(
  cluster: string,
  revisions: number,
): { rows: AuditEventRow[]; expectedLog: string[]; expectedSpool: string[]; gap: { from: number; to: number } } {
  const rows: AuditEventRow[] = [
    row(cluster, 2, '/sys/class/ledger', { event_type: 'class-change', class: 'ledger', value: JSON.stringify({ name: 'ledger', purpose: 'correctness' }) }),
    row(cluster, 3, '/sys/class/cache', { event_type: 'class-change', class: 'cache', value: JSON.stringify({ name: 'cache', purpose: 'efficiency' }) }),
  ];
  const expectedLog: string[] = [];
  const kinds = ['grant', 'expiry', 'release', 'force-release', 'session-close'] as const;
  const gap = { from: 10 + Math.floor(revisions / 2), to: 10 + Math.floor(revisions / 2) + 4 };
  for (let r = 10; r < 10 + revisions; r += 1) {
    if (r >= gap.from && r <= gap.to) continue; // lost history
    // Two holds change per revision (a mass expiry shares one revision); keys sort b < c.
    for (const [i, ns] of ['b', 'c'].entries()) {
      const kind = kinds[(r + i) % kinds.length] as (typeof kinds)[number];
      const cls = (r + i) % 3 === 0 ? 'cache' : 'ledger';
      const key = `/l/${ns}/k${r % 7}`;
      rows.push(
        row(cluster, r, key, {
          event_type: kind,
          op: kind === 'grant' ? 'put' : 'delete',
          namespace: ns,
          lock_path: `k${r % 7}`,
          class: cls,
          holder: `spiffe://w/${r}`,
          session: '5',
          token: String(2n ** 60n + BigInt(r)),
          grant_revision: String(r),
        }),
      );
      if (kind === 'force-release' || (kind === 'expiry' && cls === 'ledger')) expectedLog.push(`${cluster}:${r}:${key}`);
    }
    rows.push(row(cluster, r, `/sys/mark/m${r}`, { event_type: 'marker' }));
    if (r === gap.from - 1) expectedLog.push(`${cluster}:gap:${gap.from}`);
    if (r % 40 === 0) {
      rows.push(row(cluster, r, '/sys/epoch', { event_type: 'epoch-advance', epoch: r }));
      expectedLog.push(`${cluster}:${r}:/sys/epoch`);
    }
  }
  // expectedLog is in (revision, key) order by construction: /l/b < /l/c < /sys/epoch < /sys/mark; the gap sits at its from revision.
  const expectedSpool: string[] = [];
  for (let i = 0; i < 7; i += 1) {
    const id = `/spool/s${i}`;
    rows.push(
      row(cluster, 0, id, {
        event_type: 'unprotected-grant',
        op: 'spool',
        namespace: 'b',
        lock_path: `u${i}`,
        class: 'cache',
        holder: 'spiffe://offline',
        unprotected: 1,
      }),
    );
    expectedSpool.push(`${cluster}:spool:${id}`);
  }
  return { rows, expectedLog, expectedSpool: expectedSpool.sort(), gap };
}

interface Received {
  cluster: string;
  id: string;
  line: string;
}

/** The receiver: verifies signatures, fails a seeded 30 % with 500, goes down (connection refused) for `downMs` after `downAfter` requests. */
async function receiver(opts: { failRate: number; seed: number; downAfter?: number; downMs?: number }) {
  const random = seeded(opts.seed);
  const acknowledged: Received[] = [];
  let requests = 0;
  let badSignatures = 0;
  let server: Server;
  let port = 0;
  let wentDown = false;
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests += 1;
      const body = Buffer.concat(chunks).toString('utf8');
      if (!verify(SECRET, body, req.headers[SIGNATURE_HEADER] as string | undefined)) badSignatures += 1;
      if (opts.downAfter !== undefined && requests === opts.downAfter && !wentDown) {
        wentDown = true;
        res.destroy();
        server.close();
        server.closeAllConnections();
        setTimeout(() => void listen(), opts.downMs ?? 5_000);
        return;
      }
      if (random() < opts.failRate) {
        res.writeHead(500).end('try later');
        return;
      }
      const cluster = String(req.headers['x-lockaudit-cluster']);
      for (const line of body.trimEnd().split('\n')) acknowledged.push({ cluster, id: (JSON.parse(line) as { metadata: { uid: string } }).metadata.uid, line });
      res.writeHead(204).end();
    });
  };
  const listen = () =>
    new Promise<void>((resolve) => {
      server = createServer(handler);
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as AddressInfo).port;
        resolve();
      });
    });
  await listen();
  return {
    url: () => `http://127.0.0.1:${port}/ingest`,
    acknowledged,
    stats: () => ({ requests, badSignatures, wentDown }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** First occurrence of each id, in arrival order; checks every duplicate is byte-identical to its first copy. */
function dedupe(items: readonly Received[]): Received[] {
  const first = new Map<string, Received>();
  for (const it of items) {
    const seen = first.get(it.id);
    if (seen) assert.equal(it.line, seen.line, `duplicate ${it.id} carries the same payload`);
    else first.set(it.id, it);
  }
  return [...first.values()];
}

describe('alert webhook sink', { timeout: 180_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  before(async () => {
    ({ store, close: closeStore } = await tempStore());
  });
  after(async () => closeStore());

  async function seed(clusters: string[], revisions: number) {
    const out = new Map<string, ReturnType<typeof history>>();
    for (const c of clusters) {
      const h = history(c, revisions);
      await store.insert('events', h.rows);
      await store.insert('gaps', [
        { cluster: c, from_revision: String(h.gap.from), to_revision: String(h.gap.to), detected_at: Date.now(), reason: 'compacted before capture (test)' },
      ]);
      await store.insert('checkpoints', [{ cluster: c, revision: String(10 + revisions), leader: 'test' }]);
      out.set(c, h);
    }
    return out;
  }

  const sinkConfig = (name: string, url: string, over: Partial<AlertWebhookConfig> = {}): AlertWebhookConfig => ({
    name,
    url,
    secret: SECRET,
    batchSize: 16,
    maxAttempts: 1_000,
    backoffMaxMs: 500,
    pollIntervalMs: 50,
    timeoutMs: 2_000,
    rules: [{ kinds: ['force-release', 'gap', 'unprotected-grant', 'epoch-advance'] }, { kinds: ['expiry'], purposes: ['correctness'] }],
    ...over,
  });

  it('a flaky receiver that is also down for a stretch gets every matching event, in order per cluster, none lost; a restart resumes from the checkpoint', async () => {
    const clusters = [uniqueId('ca'), uniqueId('cb')];
    const seeded = await seed(clusters, 160);
    const rx = await receiver({ failRate: 0.3, seed: 42, downAfter: 6, downMs: 20_000 });
    const registry = new Registry();
    const metrics = alertMetrics(registry);
    const sink = sinkConfig(uniqueId('siem-'), rx.url());
    const run = (cluster: string, signal: AbortSignal) => new WebhookDelivery({ store, log, metrics, cluster, sink, tokenKey }).run(signal);
    const expectedCount = [...seeded.values()].reduce((n, h) => n + h.expectedLog.length + h.expectedSpool.length, 0);
    const delivered = () => new Set(rx.acknowledged.map((a) => a.id)).size;

    // First run: stopped part-way (a worker restart), then a second run from the sink's own checkpoint.
    const first = new AbortController();
    const firstRuns = clusters.map((c) => run(c, first.signal));
    await waitFor('some deliveries', () => (delivered() >= 10 ? true : undefined), 60_000, 20);
    first.abort();
    await Promise.all(firstRuns);
    const second = new AbortController();
    const secondRuns = clusters.map((c) => run(c, second.signal));
    await waitFor('every matching event delivered', () => (delivered() >= expectedCount ? true : undefined), 150_000, 100);
    second.abort();
    await Promise.all(secondRuns);
    await rx.close();

    assert.equal(rx.stats().wentDown, true, 'the receiver was down for a stretch');
    assert.equal(rx.stats().badSignatures, 0, 'every delivery is signed with the shared secret');
    for (const c of clusters) {
      const h = seeded.get(c);
      assert.ok(h);
      const mine = dedupe(rx.acknowledged.filter((a) => a.cluster === c));
      assert.deepEqual(
        mine.filter((a) => !a.id.includes(':spool:')).map((a) => a.id),
        h.expectedLog,
        `${c}: the log stream, in (revision, key) order, complete`,
      );
      assert.deepEqual(
        mine
          .filter((a) => a.id.includes(':spool:'))
          .map((a) => a.id)
          .sort(),
        h.expectedSpool,
        `${c}: every unprotected grant`,
      );
      assert.ok(
        h.expectedLog.some((id) => id.includes(':gap:')),
        'the gap is among them',
      );
    }
    // No fencing token leaves for the SIEM (the seeded ones are 2^60 + revision): each hold's event carries its keyed hash.
    // (Each token's decimal form starts with 2^60's first digits; a hex hash can hold 16 digits in a row by chance, not these.)
    assert.deepEqual(
      rx.acknowledged.filter((a) => /11529215046068\d{5}/.test(a.line)).map((a) => a.id),
      [],
      'no token in any delivered line',
    );
    const holds = rx.acknowledged
      .map((a) => JSON.parse(a.line) as { unmapped: { revision?: string; token_hash?: string; kind: string } })
      .filter((e) => e.unmapped.kind === 'force-release');
    assert.ok(holds.length > 0);
    for (const e of holds) assert.equal(e.unmapped.token_hash, hashToken(tokenKey, String(2n ** 60n + BigInt(e.unmapped.revision ?? '0'))));
    const text = await registry.metrics();
    assert.match(text, new RegExp(`lockaudit_alert_delivery_failures_total\\{sink="${sink.name}",cluster="${clusters[0]}"\\} [1-9]`));
    assert.match(text, new RegExp(`lockaudit_alert_lag_revisions\\{sink="${sink.name}",cluster="${clusters[0]}"\\} 0`));
    const dead = await store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.alert_dead_letters WHERE sink = {s:String}', { s: sink.name });
    assert.equal(Number(dead[0]?.n), 0, 'nothing dead-lettered while the receiver recovers');
  });

  it('a receiver that never accepts: after maxAttempts each event is recorded as a dead letter (payload kept) and the sink moves on', async () => {
    const [cluster] = [uniqueId('cd')];
    const seeded = await seed([cluster], 30);
    const rx = await receiver({ failRate: 1, seed: 1 });
    const registry = new Registry();
    const sink = sinkConfig(uniqueId('dead-'), rx.url(), { maxAttempts: 3, backoffMaxMs: 20, batchSize: 1000 });
    const abort = new AbortController();
    const loop = new WebhookDelivery({ store, log, metrics: alertMetrics(registry), cluster, sink, tokenKey }).run(abort.signal);
    const h = seeded.get(cluster);
    assert.ok(h);
    const expected = [...h.expectedLog, ...h.expectedSpool].sort();
    const dead = await waitFor(
      'dead letters',
      async () => {
        const rows = await store.rows<{ event_id: string; attempts: number; last_error: string; payload: string }>(
          'SELECT event_id, attempts, last_error, payload FROM {db:Identifier}.alert_dead_letters FINAL WHERE sink = {s:String} ORDER BY event_id',
          { s: sink.name },
        );
        return rows.length >= expected.length ? rows : undefined;
      },
      60_000,
      100,
    );
    abort.abort();
    await loop;
    await rx.close();
    assert.deepEqual(
      dead.map((d) => d.event_id),
      expected,
    );
    assert.ok(dead.every((d) => Number(d.attempts) === 3 && d.last_error === 'HTTP 500'));
    assert.equal((JSON.parse(dead[0]?.payload ?? '{}') as { metadata: { uid: string } }).metadata.uid, dead[0]?.event_id);
    assert.equal(rx.acknowledged.length, 0);
    assert.match(await registry.metrics(), new RegExp(`lockaudit_alert_dead_letters_total\\{sink="${sink.name}",cluster="${cluster}"\\} ${expected.length}`));
  });

  const kindOf = (a: Received): string => (JSON.parse(a.line) as { unmapped: { kind: string } }).unmapped.kind;

  it('deleted holds and foreign grants are rule kinds: a security sink streams exactly the writes that bypassed the lock API', async () => {
    const cluster = uniqueId('cf');
    const rows: AuditEventRow[] = [
      row(cluster, 10, '/l/pay/a', { event_type: 'grant', namespace: 'pay', lock_path: 'a', class: 'ledger', holder: 'spiffe://api', origin: 'api' }),
      row(cluster, 11, '/l/pay/b', { event_type: 'grant', namespace: 'pay', lock_path: 'b', class: 'ledger', holder: 'etcdctl', origin: 'foreign' }),
      row(cluster, 12, '/l/pay/a', {
        event_type: 'deleted',
        op: 'delete',
        namespace: 'pay',
        lock_path: 'a',
        class: 'ledger',
        holder: 'spiffe://api',
        origin: 'api',
      }),
      row(cluster, 13, '/l/pay/b', {
        event_type: 'release',
        op: 'delete',
        namespace: 'pay',
        lock_path: 'b',
        class: 'ledger',
        holder: 'etcdctl',
        origin: 'foreign',
      }),
      row(cluster, 14, '/l/pay/c', { event_type: 'expiry', op: 'delete', namespace: 'pay', lock_path: 'c', class: 'ledger', holder: 'spiffe://api' }),
      row(cluster, 15, '/l/pay/d', { event_type: 'grant', namespace: 'pay', lock_path: 'd', class: 'ledger', holder: 'rogue', origin: 'foreign' }),
    ];
    await store.insert('events', rows);
    await store.insert('checkpoints', [{ cluster, revision: '20', leader: 'test' }]);
    const rx = await receiver({ failRate: 0.3, seed: 7 });
    const security = sinkConfig(uniqueId('sec-'), rx.url(), { rules: [{ kinds: ['deleted', 'foreign-grant'] }] });
    const grants = sinkConfig(uniqueId('grants-'), rx.url(), { rules: [{ kinds: ['grant'] }] });
    const abort = new AbortController();
    const metrics = alertMetrics(new Registry());
    const loops = [security, grants].map((sink) => new WebhookDelivery({ store, log, metrics, cluster, sink, tokenKey }).run(abort.signal));
    await waitFor('both sinks delivered', () => (new Set(rx.acknowledged.map((a) => a.id)).size >= 4 ? true : undefined), 60_000, 20);
    await waitFor(
      'both sinks at the checkpoint',
      async () => {
        const n = await store.rows<{ n: string }>(
          "SELECT count() AS n FROM {db:Identifier}.alert_checkpoints FINAL WHERE cluster = {c:String} AND key = '~' AND revision = 20",
          { c: cluster },
        );
        return Number(n[0]?.n) === 2 ? true : undefined;
      },
      60_000,
      50,
    );
    abort.abort();
    await Promise.all(loops);
    await rx.close();
    const got = dedupe(rx.acknowledged).map((a) => `${a.id} ${kindOf(a)}`);
    // The security sink: the foreign grants and the hand deletion, nothing the API wrote; the grant sink: every grant, foreign ones named so.
    assert.deepEqual(
      got.sort(),
      [`${cluster}:10:/l/pay/a grant`, `${cluster}:11:/l/pay/b foreign-grant`, `${cluster}:12:/l/pay/a deleted`, `${cluster}:15:/l/pay/d foreign-grant`].sort(),
    );
    const foreign = rx.acknowledged.find((a) => a.id === `${cluster}:11:/l/pay/b`);
    assert.equal((JSON.parse(foreign?.line ?? '{}') as { unmapped: { origin?: string } }).unmapped.origin, 'foreign');
  });

  it('a stored risk-register run with expired waivers: one waiver-expired event per class per run, signed and retried, none again after a restart', async () => {
    const asOf = Date.now();
    const today = dateInZone(asOf, 'UTC');
    await store.insert('events', [
      classEvent('old-cache', advisoryClass('old-cache', 'cat', addDays(today, -3), 'risk@corp'), 1, asOf - 86_400_000, 'rr'),
      classEvent('soon-cache', advisoryClass('soon-cache', 'cat', addDays(today, 10)), 2, asOf - 86_400_000, 'rr'),
      classEvent('fine-cache', advisoryClass('fine-cache', 'cat', addDays(today, 200)), 3, asOf - 86_400_000, 'rr'),
      classEvent('lapsed-feed', advisoryClass('lapsed-feed', 'feed', addDays(today, -40)), 4, asOf - 86_400_000, 'rr'),
    ]);
    const deps = { store, limits: testConfig().reports };
    const runs = [uniqueId('manual:'), uniqueId('repeat:risk-register-nightly:')]; // run_id breaks a created_at tie: 'manual' < 'repeat'
    for (const [i, runId] of runs.entries())
      await runRegister(deps, { runId, asOfMs: asOf + i, timeZone: 'UTC', trigger: i === 0 ? 'manual' : 'schedule', requestedBy: 'test' });
    const rx = await receiver({ failRate: 0.3, seed: 11 });
    const sink = sinkConfig(uniqueId('waivers-'), rx.url(), { rules: [{ kinds: ['waiver-expired'] }, { kinds: ['waiver-expiring'], namespaces: ['cat'] }] });
    const metrics = alertMetrics(new Registry());
    const expected = runs.flatMap((r) => [
      `register:${r}:lapsed-feed waiver-expired`,
      `register:${r}:old-cache waiver-expired`,
      `register:${r}:soon-cache waiver-expiring`,
    ]);
    const delivered = () => new Set(rx.acknowledged.map((a) => a.id)).size;
    const first = new AbortController();
    const loop = new RegisterDelivery({ store, log, metrics, sink, tokenKey }).run(first.signal);
    await waitFor('every waiver event', () => (delivered() >= expected.length ? true : undefined), 60_000, 20);
    await waitFor(
      'both runs recorded as delivered',
      async () => {
        const n = await store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.alert_register_deliveries FINAL WHERE sink = {s:String}', {
          s: sink.name,
        });
        return Number(n[0]?.n) === runs.length ? true : undefined;
      },
      60_000,
      50,
    );
    first.abort();
    await loop;
    const afterFirst = rx.acknowledged.length;
    // A restart: the runs are recorded as delivered, so a fresh loop sends nothing.
    const again = new RegisterDelivery({ store, log, metrics, sink, tokenKey });
    assert.equal(await again.step(new AbortController().signal), false);
    assert.equal(rx.acknowledged.length, afterFirst);
    await rx.close();
    const got = dedupe(rx.acknowledged);
    // Every expected event with its kind, in run order (oldest run first), by class within a run; nothing else (fine-cache is ok).
    assert.deepEqual(
      got.map((a) => `${a.id} ${kindOf(a)}`),
      expected,
    );
    assert.equal(rx.stats().badSignatures, 0);
    const oldCache = (JSON.parse(got.find((a) => a.id.endsWith(':old-cache'))?.line ?? '{}') as { unmapped: Record<string, unknown> }).unmapped;
    assert.equal(oldCache.riskOwner, 'risk@corp');
    assert.equal(oldCache.waiverExpires, addDays(today, -3));
    assert.equal(oldCache.daysLeft, -3);
  });

  it('two workers run the same sink: one delivers (etcd election), no event twice; when it stops the other takes over from the checkpoint', async () => {
    const config = testConfig();
    const etcd = config.etcd.clusters[0];
    assert.ok(etcd, 'the suite etcd');
    const cluster = uniqueId('ce');
    const seeded = await seed([cluster], 40);
    const h = seeded.get(cluster);
    assert.ok(h);
    const rx = await receiver({ failRate: 0, seed: 3 });
    const sink = sinkConfig(uniqueId('elect-'), rx.url());
    const metrics = alertMetrics(new Registry());
    const workers = ['worker-a', 'worker-b'].map((replicaId) => {
      const client = createEtcdClient(etcd);
      const abort = new AbortController();
      const done = runAlertSinks(
        { store, log, metrics, sinks: [sink], clusters: [{ name: cluster, client }], replicaId, electionTtlSeconds: 2, tokenKey },
        abort.signal,
      );
      return { replicaId, client, abort, done };
    });
    try {
      const expected = [...h.expectedLog, ...h.expectedSpool];
      await waitFor('every event delivered', () => (new Set(rx.acknowledged.map((a) => a.id)).size >= expected.length ? true : undefined), 60_000, 20);
      // The sink's checkpoint at the end of the log: a second deliverer (no election) would be streaming the same batches meanwhile.
      await waitFor(
        'the sink at the checkpoint',
        async () => {
          const n = await store.rows<{ n: string }>(
            "SELECT count() AS n FROM {db:Identifier}.alert_checkpoints FINAL WHERE sink = {s:String} AND key = '~' AND revision = 50 AND spool_key = '/spool/s6'",
            { s: sink.name },
          );
          return Number(n[0]?.n) === 1 ? true : undefined;
        },
        60_000,
        20,
      );
      assert.equal(rx.acknowledged.length, expected.length, 'each event delivered once: one worker leads the sink');
      const [a] = workers;
      assert.ok(a);
      // Stop the leader (the oldest campaign key holds its replica id; resigning hands over at once); new events reach the receiver through the other.
      const campaigns = await a.client.getAll().prefix(`/sys/election/alerts.${sink.name}.${cluster}`).sort('Create', 'Ascend').strings();
      const leaderId = Object.values(campaigns)[0];
      const leader = workers.find((w) => w.replicaId === leaderId);
      const follower = workers.find((w) => w.replicaId !== leaderId);
      assert.ok(leader && follower, `a leader among ${JSON.stringify(campaigns)}`);
      leader.abort.abort();
      await leader.done;
      const more = history(cluster, 40)
        .rows.filter((r) => r.event_type === 'force-release')
        .map((r) => ({ ...r, revision: String(Number(r.revision) + 100), mod_revision: String(Number(r.revision) + 100) }));
      await store.insert('events', more);
      await store.insert('checkpoints', [{ cluster, revision: '200', leader: 'test' }]);
      const newIds = more.map((r) => `${cluster}:${r.revision}:${r.key}`);
      await waitFor(
        'the remaining worker delivers the new events',
        () => (newIds.every((id) => rx.acknowledged.some((x) => x.id === id)) ? true : undefined),
        60_000,
        20,
      );
      follower.abort.abort();
      await follower.done;
    } finally {
      for (const w of workers) w.abort.abort();
      await Promise.all(workers.map((w) => w.done));
      for (const w of workers) w.client.close();
      await rx.close();
    }
    assert.equal(new Set(rx.acknowledged.map((x) => x.id)).size, rx.acknowledged.length, 'no event id delivered twice');
  });
});
