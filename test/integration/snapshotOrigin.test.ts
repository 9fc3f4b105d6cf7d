// Holds seen only in a gap snapshot (issue 21 item 7): a hold written by hand
// while no tailer ran, its put compacted away before any tailer watched it,
// must read `foreign` exactly as its watched put would (the proof and the lease
// it names, core/proof.ts via decoder.ts), be alarmed and counted, and
// reach the alert sinks as a `foreign-grant`; an API hold in the same snapshot
// stays `api`. On a private etcd (ports LOCKAUDIT_TEST_PORT_BASE + 70/71).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { holdMac } from '../../core/proof.js';
import { originSecret } from '../../core/originSecret.js';
import { alertMetrics } from '../../exporters/alerts/alertMetrics.js';
import { WebhookDelivery } from '../../exporters/alerts/webhookDelivery.js';
import { HealthState } from '../../platform/health.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { tailerMetrics } from '../../tailer/tailerMetrics.js';
import { alertReceiver } from '../support/alertReceiver.js';
import { waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { startPrivateEtcd } from '../support/privateEtcd.js';
import { Workload } from '../support/workload.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
const portBase = testConfig().local.portBase;

describe('holds seen only in a gap snapshot', { timeout: 120_000 }, () => {
  it('a hand-written hold reads foreign (alarmed, counted, delivered as foreign-grant); an API hold stays api', async () => {
    const { store, close: closeStore } = await tempStore();
    const own = await startPrivateEtcd(portBase + 70, portBase + 71);
    const etcd = createEtcdClient({ name: 'own', endpoints: [own.endpoint] });
    const label = uniqueId('so');
    const secret = originSecret(testConfig());
    const health = new HealthState();
    const metrics = tailerMetrics(createMetricsRegistry());
    const replica = (): TailerReplica =>
      new TailerReplica(
        { cluster: { name: label, endpoints: [own.endpoint] }, store, log, health, metrics },
        { electionTtlSeconds: 3, checkpointIntervalMs: 100, originSecret: secret },
      );
    const rx = await alertReceiver();
    try {
      const w = new Workload(etcd, uniqueId('ns'), secret);
      const s = await w.session();
      /** A grant as the lock API writes it: the hold signed with the origin secret, on the session's lease. */
      const apiGrant = async (path: string): Promise<string> => {
        const key = `/l/${w.ns}/${path}`;
        const fields = { holder: `spiffe://test/${w.ns}`, session: s.id, class: 'payments', epoch: 0, waitMs: 3, at: Date.now() };
        const res = await etcd
          .put(key)
          .value(JSON.stringify({ ...fields, mac: holdMac(secret, key, fields) }))
          .lease(s.id)
          .exec();
        return String(res.header.revision);
      };
      await apiGrant('before');
      const mid = BigInt(await w.clock());
      const first = replica();
      first.start();
      await waitFor('the first grant captured', async () => ((await readCheckpoint(store, label)) >= mid ? true : undefined), 60_000, 100);
      await first.close();

      // While no tailer runs: an API grant, and a hold put by hand on the same live session (no proof).
      const apiRevision = await apiGrant('api-in-gap');
      const rogue = JSON.stringify({ holder: 'spiffe://intruder', session: s.id, class: 'payments', epoch: 0, waitMs: 0, at: Date.now() });
      const put = await etcd.put(`/l/${w.ns}/rogue`).value(rogue).lease(s.id).exec();
      const rogueRevision = String(put.header.revision);
      // ...and etcd compacts both puts away before any tailer watched them.
      const compactAt = BigInt(await w.clock());
      await etcd.kv.compact({ revision: compactAt.toString(), physical: true });

      const second = replica();
      second.start();
      try {
        await waitFor('capture past the gap', async () => ((await readCheckpoint(store, label)) >= compactAt ? true : undefined), 60_000, 100);
      } finally {
        await second.close();
      }

      const events = await store.rows<{ key: string; op: string; origin: string; grant_revision: string }>(
        "SELECT key, op, origin, toString(grant_revision) AS grant_revision FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND event_type = 'snapshot-hold' ORDER BY key",
        { c: label },
      );
      assert.deepEqual(
        events.map((e) => [e.key.slice(`/l/${w.ns}/`.length), e.op, e.origin, e.grant_revision]),
        [
          ['api-in-gap', 'snapshot', 'api', apiRevision],
          ['before', 'snapshot', 'api', events.find((e) => e.key.endsWith('/before'))?.grant_revision ?? ''],
          ['rogue', 'snapshot', 'foreign', rogueRevision],
        ],
        'each snapshot hold carries the origin its proof gives',
      );
      const grants = await store.rows<{ key: string; origin: string; start_known: number }>(
        'SELECT key, origin, start_known FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND grant_revision > {mid:UInt64} ORDER BY key',
        { c: label, mid: mid.toString() },
      );
      assert.deepEqual(
        grants.map((g) => [g.key, g.origin, Number(g.start_known)]),
        [
          [`${w.ns}/api-in-gap`, 'api', 0],
          [`${w.ns}/rogue`, 'foreign', 0],
        ],
      );

      const raised = health.alarms().find((a) => a.name === `foreign-write:${label}`);
      assert.ok(raised, 'LOCKAUDIT_ALARM_FOREIGN_WRITE raised for the hold seen only in the snapshot');
      assert.match(raised.message, new RegExp(`/l/${w.ns}/rogue`));
      const counted = (await metrics.bypass.get()).values.find((v) => v.labels.cluster === label && v.labels.kind === 'foreign-grant')?.value;
      assert.equal(counted, 1, 'lockaudit_tailer_bypass_events_total{kind="foreign-grant"}');

      // An alert sink streaming foreign grants delivers it, once, as a foreign-grant seen in the snapshot.
      const sink = {
        name: uniqueId('siem-'),
        url: rx.url,
        secret: 'test-secret-0123456789',
        batchSize: 100,
        maxAttempts: 5,
        backoffMaxMs: 100,
        pollIntervalMs: 50,
        timeoutMs: 2_000,
        rules: [{ kinds: ['foreign-grant' as const] }],
      };
      const delivery = new WebhookDelivery({ store, log, metrics: alertMetrics(new Registry()), cluster: label, sink, tokenKey: randomBytes(32) });
      const abort = new AbortController();
      while (await delivery.step(abort.signal));
      assert.deepEqual(
        rx.delivered.map((d) => [d.unmapped.kind, d.unmapped.key, d.unmapped.grant_revision, d.unmapped.seenIn]),
        [['foreign-grant', `${w.ns}/rogue`, rogueRevision, 'snapshot']],
      );
    } finally {
      await rx.close();
      etcd.close();
      await own.stop();
      await closeStore();
    }
  });
});
