// The nightly risk register as a BullMQ 6 job scheduler, against real Redis:
// the scheduler upsert of worker start (upsertSchedulers, as startWorkerRole
// runs it) with a two-second cron from config, its own queue prefix, the
// registered processor (riskRegisterJob), and its results kept in ClickHouse.
// The worker is built here rather than by startWorkerRole, which does not
// close the connections it duplicates (the test process would never exit).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Queue, Worker } from 'bullmq';
import { HealthState } from '../../platform/health.js';
import type { Runtime } from '../../platform/runtime.js';
import { ApiTokenVerifier } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { upsertSchedulers } from '../../platform/jobs.js';
import { createRedis } from '../../platform/redis.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { alertMetrics } from '../../exporters/alerts/alertMetrics.js';
import { RegisterDelivery } from '../../exporters/alerts/registerDelivery.js';
import { storedRegister } from '../../reports/riskRegister/index.js';
import { RISK_REGISTER_QUEUE, RISK_REGISTER_SCHEDULER_ID, riskRegisterJob } from '../../reports/riskRegister/job.js';
import { dateInZone } from '../../reports/riskRegister/status.js';
import { addDays, advisoryClass, classEvent, grantRows } from '../support/grants.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

describe('nightly risk register job', () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let runtime: Runtime;
  let worker: Worker | undefined;
  const redis = () => createRedis(runtime.config.redis.url, 'worker', runtime.logger);
  let wc: ReturnType<typeof createRedis> | undefined;
  const prefix = uniqueId('la-test-rr-');
  const NOW = Date.now();

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    const config = testConfig({ LOCKAUDIT_QUEUE_PREFIX: prefix, LOCKAUDIT_RISK_REGISTER_CRON: '*/2 * * * * *', LOCKAUDIT_RISK_REGISTER_TZ: 'Europe/Zurich' });
    runtime = {
      config,
      logger: createLogger('silent'),
      store,
      verifier: new ApiTokenVerifier(store),
      health: new HealthState(),
      metrics: createMetricsRegistry(),
    };
    const today = dateInZone(NOW, 'Europe/Zurich');
    await store.insert('events', [classEvent('nightly', advisoryClass('nightly', 'nt', addDays(today, 20), 'night-owner@corp'), 1, NOW - 86_400_000)]);
    const g = grantRows({ key: 'nt/job-1', class: 'nightly', holder: 'h', rev: 7, at: NOW - 3_600_000, end: { kind: 'expiry', at: NOW - 3_500_000, rev: 9 } });
    await store.insert('grants', [g.open, g.closed as NonNullable<typeof g.closed>]);
  });

  after(async () => {
    await worker?.close();
    wc?.disconnect();
    const connection = redis();
    const queue = new Queue(RISK_REGISTER_QUEUE, { connection, prefix });
    await queue.removeJobScheduler(RISK_REGISTER_SCHEDULER_ID).catch(() => undefined);
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    connection.disconnect();
    await closeStore();
  });

  it('runs on its cron schedule and keeps every run in ClickHouse', async () => {
    wc = redis();
    worker = new Worker(riskRegisterJob.name, riskRegisterJob.processor(runtime), { connection: wc, prefix });
    const connection = redis();
    await upsertSchedulers(runtime, [riskRegisterJob], connection);
    await upsertSchedulers(runtime, [riskRegisterJob], connection); // a second worker start changes nothing

    const queue = new Queue(RISK_REGISTER_QUEUE, { connection, prefix });
    try {
      const schedulers = await queue.getJobSchedulers();
      assert.equal(schedulers.length, 1);
      assert.equal(schedulers[0]?.pattern, '*/2 * * * * *');
      assert.equal(schedulers[0]?.tz, 'Europe/Zurich');
    } finally {
      await queue.close();
      connection.disconnect();
    }

    type Run = { run_id: string; as_of_ms: string; trigger: string; requested_by: string; class_count: number };
    let runs: Run[] = [];
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      runs = await store.rows<Run>(
        'SELECT run_id, toString(toUnixTimestamp64Milli(as_of)) AS as_of_ms, trigger, requested_by, class_count FROM {db:Identifier}.risk_register_runs FINAL ORDER BY as_of',
      );
      if (runs.length >= 2) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(runs.length >= 2, `expected two scheduled runs, got ${JSON.stringify(runs)}`);
    for (const run of runs) {
      assert.equal(run.trigger, 'schedule');
      assert.equal(run.requested_by, 'scheduler');
      assert.match(run.run_id, /^repeat:/);
      // As of the scheduled instant: an even second, per the cron.
      assert.equal(Number(run.as_of_ms) % 2000, 0, run.as_of_ms);
    }
    const [a, b] = runs;
    assert.ok(a && b && Number(b.as_of_ms) - Number(a.as_of_ms) >= 2000, 'two different ticks');

    const register = await storedRegister({ store, limits: runtime.config.reports });
    assert.ok(register);
    assert.equal(register.trigger, 'schedule');
    assert.equal(register.date, dateInZone(Date.parse(register.asOf), 'Europe/Zurich'));
    assert.deepEqual(register.classes, [
      {
        class: 'nightly',
        namespace: 'nt',
        riskOwner: 'night-owner@corp',
        waiverExpires: addDays(dateInZone(NOW, 'Europe/Zurich'), 20),
        daysLeft: 20 - Math.round((Date.parse(register.date) - Date.parse(dateInZone(NOW, 'Europe/Zurich'))) / 86_400_000),
        status: 'expiring',
        grants24h: 1,
        grants30d: 1,
        distinctKeys24h: 1,
        distinctKeys30d: 1,
        expiries24h: 1,
        expiries30d: 1,
        forceReleases24h: 0,
        forceReleases30d: 0,
        unprotected24h: 0,
        unprotected30d: 0,
        foreignGrants24h: 0,
        foreignGrants30d: 0,
        deleted24h: 0,
        deleted30d: 0,
      },
    ]);
  });

  it('an alert sink with a waiver rule gets one waiver-expiring event per scheduled run for the expiring class, once', async () => {
    await worker?.close(); // no more runs while the sink reads them
    worker = undefined;
    const runs = await store.rows<{ run_id: string }>('SELECT run_id FROM {db:Identifier}.risk_register_runs FINAL ORDER BY created_at, run_id');
    assert.ok(runs.length >= 2);
    const got: string[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        for (const line of body.trimEnd().split('\n')) {
          // OCSF: the lockaudit kind is under unmapped (activity_name is OCSF's own, e.g. Create).
          const o = JSON.parse(line) as { metadata: { uid: string }; unmapped: { kind: string } };
          got.push(`${o.metadata.uid} ${o.unmapped.kind}`);
        }
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const sink = {
        name: uniqueId('rr-'),
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
        secret: 'a-test-secret-0123456789',
        rules: [{ kinds: ['waiver-expiring' as const] }],
        pollIntervalMs: 50,
      };
      const delivery = new RegisterDelivery({ store, log: runtime.logger, metrics: alertMetrics(new Registry()), sink, tokenKey: randomBytes(32) });
      const signal = new AbortController().signal;
      while (await delivery.step(signal)) {
        /* one run per step */
      }
      assert.deepEqual(
        got,
        runs.map((r) => `register:${r.run_id}:nightly waiver-expiring`),
      );
      assert.equal(
        await new RegisterDelivery({ store, log: runtime.logger, metrics: alertMetrics(new Registry()), sink, tokenKey: randomBytes(32) }).step(signal),
        false,
        'nothing left after a restart',
      );
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
