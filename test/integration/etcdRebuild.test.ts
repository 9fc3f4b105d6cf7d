// An etcd rebuilt empty under the same name (issue 21 item 4): the member is
// stopped, its data dir removed, and an empty member started with the same
// name, peer URL and token — the same cluster id, what a disaster-recovery
// rebuild looks like. Nothing etcd holds now matches what the tailer captured,
// so the restored cluster shares no history with the record: it is a new
// timeline, and the captured grants stay in the record as they were (never
// deleted, never moved, never read as rolled back). Private etcd on ports
// 13500/13501.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { checkGrantsAgainstEvents, formatGrantProblem } from '../../exporters/checks/grantsCheck.js';
import { HealthState } from '../../platform/health.js';
import { grantHistory, type GrantHistoryDeps } from '../../reports/grantHistory/index.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
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
    const tailer = new TailerReplica(
      { cluster, store: db.store, log: log.child({ cluster: label }), health },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, clockIntervalMs: 300, restoreCheckIntervalMs: 300 },
    );
    try {
      const ns = uniqueId('ns');
      const className = `${ns}-fenced`;
      const admin = await la.token(uniqueId('admin-'), ['admin']);
      const user = await la.token(`spiffe://test/${ns}/w`, ['client']);
      const op1 = await la.token(uniqueId('op-a-'), ['lock-operator']);
      const op2 = await la.token(uniqueId('op-b-'), ['lock-operator']);
      const advance = async (): Promise<void> => {
        const req = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'etcd rebuilt' });
        if (req.status === 202) await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id as string}/approve`, op2, { requestHash: req.body.requestHash });
      };
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
      await waitFor(
        'the rebuilt cluster seen by the tailer',
        async () => {
          const rows = await db.store.rows<Count>(
            'SELECT count() AS n FROM {db:Identifier}.etcd_timelines FINAL WHERE cluster = {c:String} AND generation > 0',
            { c: label },
          );
          return rows[0]?.n !== '0' ? true : undefined;
        },
        60_000,
        200,
      );
      assert.ok(
        health.alarms().some((a) => a.name.endsWith(`:${label}`) && a.name.startsWith('tailer-')),
        'an alarm is raised',
      );

      // Nothing recorded is deleted or moved: every grant and event is still where it was, and is not read as rolled back.
      const [after] = await db.store.rows<Count>(grantsIn, { c: label, ns });
      assert.equal(after?.n, '20', 'the 20 captured grants stay in the record');
      const [eventsAfter] = await db.store.rows<Count>(eventsIn, { c: label, r: last.toString() });
      assert.ok(Number(eventsAfter?.n) >= Number(eventsBefore?.n), `no captured event left events (${eventsBefore?.n} → ${eventsAfter?.n})`);
      const [rolled] = await db.store.rows<Count>(
        'SELECT count() AS n FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND namespace = {ns:String} AND rolled_back_by > 0',
        { c: label, ns },
      );
      assert.equal(rolled?.n, '0', 'a history the new cluster shares nothing with was not rolled back: it ended');
      const [tl] = await db.store.rows<{ shares_history: number; timeline: number }>(
        'SELECT shares_history, timeline FROM {db:Identifier}.etcd_timelines FINAL WHERE cluster = {c:String} AND generation = 1',
        { c: label },
      );
      assert.equal(Number(tl?.shares_history), 0, 'recorded as a new history');
      assert.equal(Number(tl?.timeline), 1);
      const [gap] = await db.store.rows<{ reason: string }>("SELECT reason FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String} AND kind = 'restore'", {
        c: label,
      });
      assert.match(gap?.reason ?? '', /shares nothing with the captured history/);
      assert.ok(
        health.alarms().some((a) => a.name === `tailer-new-history:${label}`),
        'the new-history alarm is raised',
      );
      const [superseded] = await db.store.rows<Count>(
        'SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND revision <= {r:UInt64} AND timeline = 0 AND superseded_by = 1 AND rolled_back_by = 0',
        { c: label, r: last.toString() },
      );
      assert.equal(superseded?.n, eventsBefore?.n, "the ended history's events: superseded, not rolled back");

      // Token lookup (grant history) still finds each grant, marked with its timeline, not rolled back.
      const deps: GrantHistoryDeps = { store: db.store, limits: testConfig().reports, cursorKey: randomBytes(32) };
      for (const t of [tokens[0], tokens[19]]) {
        const page = await grantHistory(deps, { token: t }, Date.now());
        assert.equal(page.items.length, 1, `token ${t as string} still found`);
        assert.equal(page.items[0]?.timeline, 0);
        assert.equal(page.items[0]?.rolledBack, false);
      }

      // The new cluster is captured as timeline 1: a grant at a reused revision is another row, not a replacement.
      // (The rebuilt etcd has no class and no epoch: the class is defined again, and the two-person advance binds the epoch.)
      assert.equal((await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns))).status, 200);
      const s2 = await la.call<{ id: string }>('POST', '/v1/sessions', user, { ttlSeconds: 15 });
      let lastReply: unknown;
      const g = await waitFor(
        'a grant on the rebuilt cluster',
        async () => {
          const res = await la.call<Json>('POST', '/v1/locks/acquire', user, { key: `${ns}/new`, session: s2.body.id, class: className });
          lastReply = res.body;
          if (res.body.error === 'LOCKAUDIT_ERR_LOCK_SEALED') await advance();
          return res.status === 200 ? res : undefined;
        },
        60_000,
        500,
      ).catch((err: Error) => {
        throw new Error(`${err.message}: last reply ${JSON.stringify(lastReply)}`);
      });
      await waitFor(
        'the new grant captured in timeline 1',
        async () => {
          const rows = await db.store.rows<Count>(
            'SELECT count() AS n FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND grant_revision = {r:UInt64} AND timeline = 1 AND superseded_by = 0',
            { c: label, r: g.body.revision as string },
          );
          return rows[0]?.n === '1' ? true : undefined;
        },
        60_000,
        200,
      );
      const [still] = await db.store.rows<Count>(grantsIn, { c: label, ns });
      assert.equal(still?.n, '20', "the ended history's grants are still all there");
      // Both histories' grants agree with their events (grantsCheck.ts: what an export checks before writing).
      const disagree = await checkGrantsAgainstEvents(db.store, { cluster: label }, { fromMs: 0, toMs: Date.now() + 60_000 }, { settleMs: 0, limit: 50 });
      assert.deepEqual(disagree.map(formatGrantProblem), [], 'every grant agrees with its events');
    } finally {
      await tailer.close();
      await la.close();
      client.close();
      await etcd.stop();
      data.remove();
    }
  });
});
