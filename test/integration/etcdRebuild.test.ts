// An etcd rebuilt empty under the same name (issue 21 item 4): the member is
// stopped, its data dir removed, and an empty member started with the same
// name, peer URL and token — the same cluster id, what a disaster-recovery
// rebuild looks like. Nothing etcd holds now matches what the tailer captured,
// so the restored cluster shares no history with the record: it is a new
// timeline, and the captured grants stay in the record as they were (never
// deleted, never moved, never read as rolled back). Private etcd on ports
// 13500/13501.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { HealthState } from '../../platform/health.js';
import { readCheckpoint } from '../../tailer/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { waitFor } from '../support/capture.js';
import { tempDir, testConfig, uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';
import { fencedClass, lockApp } from '../support/lockApp.js';
import { startPrivateEtcd } from '../support/privateEtcd.js';

type Json = Record<string, unknown>;
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
const db = fileStore();

interface Count {
  n: string;
}

describe('etcd rebuilt empty under the same name', { timeout: 240_000 }, () => {
  it('is a new timeline: the 20 captured grants stay in the record, none deleted or read as rolled back', async () => {
    const etcd = await startPrivateEtcd(13_500, 13_501);
    const data = tempDir('lockaudit-rebuild-');
    const label = uniqueId('rb');
    const cluster = { name: label, endpoints: [etcd.endpoint] };
    const client = createEtcdClient(cluster);
    const la = await lockApp(testConfig({ LOCKAUDIT_DATA_DIR: data.dir }), db.store, { cluster });
    const health = new HealthState();
    const tailer = new TailerReplica({ cluster, store: db.store, log: log.child({ cluster: label }), health }, { electionTtlSeconds: 3, checkpointIntervalMs: 100, clockIntervalMs: 300, restoreCheckIntervalMs: 300 });
    try {
      const ns = uniqueId('ns');
      const className = `${ns}-fenced`;
      const admin = await la.token(uniqueId('admin-'), ['admin']);
      const user = await la.token(`spiffe://test/${ns}/w`, ['client']);
      assert.equal((await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns))).status, 200);
      tailer.start();
      const s = await la.call<{ id: string }>('POST', '/v1/sessions', user, { ttlSeconds: 15 });
      const tokens: string[] = [];
      let last = 0n;
      for (let i = 0; i < 20; i++) {
        const g = await la.call<Json>('POST', '/v1/locks/acquire', user, { key: `${ns}/k${i % 5}`, session: s.body.id, class: className });
        assert.equal(g.status, 200, JSON.stringify(g.body));
        tokens.push(g.body.token as string);
        const rel = await la.call<Json>('POST', '/v1/locks/release', user, { key: `${ns}/k${i % 5}`, session: s.body.id, token: g.body.token });
        assert.equal(rel.status, 200, JSON.stringify(rel.body));
        last = BigInt(g.body.revision as string) + 1n;
      }
      await waitFor('the 20 grants captured', async () => ((await readCheckpoint(db.store, label)) >= last ? true : undefined), 60_000, 100);
      const grantsIn = "SELECT count() AS n FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND namespace = {ns:String} AND end_kind = 'release'";
      const [before] = await db.store.rows<Count>(grantsIn, { c: label, ns });
      assert.equal(before?.n, '20');
      const eventsIn = 'SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND revision <= {r:UInt64}';
      const [eventsBefore] = await db.store.rows<Count>(eventsIn, { c: label, r: last.toString() });

      await etcd.rebuild();
      await waitFor('the rebuilt cluster seen by the tailer', async () => {
        const rows = await db.store.rows<Count>('SELECT count() AS n FROM {db:Identifier}.etcd_timelines FINAL WHERE cluster = {c:String} AND generation > 0', { c: label });
        return rows[0]?.n !== '0' ? true : undefined;
      }, 60_000, 200);
      assert.ok(health.alarms().some((a) => a.name.endsWith(`:${label}`) && a.name.startsWith('tailer-')), 'an alarm is raised');

      // Nothing recorded is deleted or moved: every grant and event is still where it was, and is not read as rolled back.
      const [after] = await db.store.rows<Count>(grantsIn, { c: label, ns });
      assert.equal(after?.n, '20', 'the 20 captured grants stay in the record');
      const [eventsAfter] = await db.store.rows<Count>(eventsIn, { c: label, r: last.toString() });
      assert.ok(Number(eventsAfter?.n) >= Number(eventsBefore?.n), `no captured event left events (${eventsBefore?.n} → ${eventsAfter?.n})`);
      const [rolled] = await db.store.rows<Count>('SELECT count() AS n FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND namespace = {ns:String} AND rolled_back_by > 0', { c: label, ns });
      assert.equal(rolled?.n, '0', 'a history the new cluster shares nothing with was not rolled back: it ended');
      const [tl] = await db.store.rows<{ diverged_after: string; reason: string }>('SELECT toString(diverged_after) AS diverged_after, reason FROM {db:Identifier}.etcd_timelines FINAL WHERE cluster = {c:String} AND generation = 1', { c: label });
      assert.match(tl?.reason ?? '', /shares nothing/);

      // TOKEN_LOOKUP
    } finally {
      await tailer.close();
      await la.close();
      client.close();
      await etcd.stop();
      data.remove();
    }
  });
});
