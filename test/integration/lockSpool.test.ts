// The fail-open spool loses nothing across a crash: a writer killed with
// SIGKILL mid-stream leaves every grant it had acknowledged on disk, and a
// torn last line is skipped by readers and closed off by the next writer.
// The end of each unprotected hold is spooled too (a release before it is
// answered, a lapse at grant at + TTL by itself), and shipping closes the
// grant in an embedded ClickHouse of this file's own, idempotently.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FailOpenGrants } from '../../lock/failOpen.js';
import { SpoolWriter } from '../../lock/spool.js';
import type { AuditStore } from '../../core/clickhouse.js';
import type { LockClass } from '../../core/keyspace.js';
import { createLogger } from '../../core/logger.js';
import { projectRoot } from '../../core/paths.js';
import { readSpool, spoolPath, type SpoolEndRecord, type SpoolGrantRecord } from '../../core/spool.js';
import { SpoolShipper } from '../../tailer/spoolShipper.js';
import { waitFor } from '../support/capture.js';
import { tempDir, tempStore, uniqueId } from '../support/env.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

describe('fail-open spool', () => {
  it('every acknowledged record survives a SIGKILL', async () => {
    const tmp = tempDir('lockaudit-spool-');
    try {
      const file = path.join(tmp.dir, 'spool', 'local.jsonl');
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'test/support/spoolChild.ts'), file], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'inherit'] });
      const acked: string[] = [];
      let buffered = '';
      await new Promise<void>((resolve) => {
        child.stdout.on('data', (chunk: Buffer) => {
          buffered += chunk.toString();
          const lines = buffered.split('\n');
          buffered = lines.pop() ?? '';
          acked.push(...lines.filter(Boolean));
          if (acked.length >= 200) {
            child.kill('SIGKILL');
            resolve();
          }
        });
      });
      await new Promise((resolve) => child.once('exit', resolve));
      const { records } = readSpool(file);
      const onDisk = new Set(records.map((r) => r.id));
      const missing = acked.filter((id) => !onDisk.has(id));
      assert.deepEqual(missing, [], 'every acknowledged grant is in the spool');
    } finally {
      tmp.remove();
    }
  });

  it('a torn last line is skipped by readers and closed off before the next append', async () => {
    const tmp = tempDir('lockaudit-spool-');
    try {
      const file = path.join(tmp.dir, 'local.jsonl');
      const record = { v: 1, kind: 'grant', id: 'a', cluster: 'local', key: 'ns/k', namespace: 'ns', class: 'c', holder: 'h', session: '1', token: '0', waitMs: 0, at: 1, epoch: 1 } as const;
      appendFileSync(file, `${JSON.stringify(record)}\n{"v":1,"kind":"gra`);
      assert.deepEqual(readSpool(file).badLines, [2]);
      const writer = new SpoolWriter(file);
      await writer.append({ ...record, id: 'b' });
      await writer.close();
      const after = readSpool(file);
      assert.deepEqual(after.records.map((r) => r.id), ['a', 'b']);
      assert.deepEqual(after.badLines, [2]);
      assert.ok(readFileSync(file, 'utf8').endsWith('\n'));
    } finally {
      tmp.remove();
    }
  });
});

describe('fail-open spool: ends of unprotected holds', () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  before(async () => {
    ({ store, close: closeStore } = await tempStore());
  });
  after(async () => {
    await closeStore?.();
  });

  // The class rules ask open classes for a TTL of 30 s or more; the writer reads only name and ttlSeconds, so 1 s keeps this short.
  const shortClass = (name: string): LockClass => ({ name, namespace: 'ns', purpose: 'efficiency', enforcement: 'advisory', riskOwner: 'risk@corp', waiverExpires: '2099-12-31', ttlSeconds: 1, tier: 'entity', onQuorumLoss: 'open', fairness: 'memory' });

  interface Row { key: string; spool_id: string; holder: string; class: string; namespace: string; lock_path: string; session: string; granted_at: string; wait_ms: string; end_kind: string; ended_at: string | null; ended_at_error_ms: number; duration_ms: string | null; row_version: string }
  const grantRowsOf = (cluster: string): Promise<Row[]> => store.rows<Row>(
    `SELECT key, spool_id, holder, class, namespace, lock_path, session, toString(toUnixTimestamp64Milli(granted_at)) AS granted_at, toString(wait_ms) AS wait_ms, end_kind,
            toString(toUnixTimestamp64Milli(ended_at)) AS ended_at, ended_at_error_ms, toString(duration_ms) AS duration_ms, toString(row_version) AS row_version
     FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} ORDER BY key`,
    { c: cluster },
  );
  const closedRow = (g: SpoolGrantRecord, e: SpoolEndRecord): Row => ({
    key: g.key, spool_id: g.id, holder: g.holder, class: g.class, namespace: g.namespace, lock_path: g.key.slice(g.namespace.length + 1), session: g.session,
    granted_at: String(g.at), wait_ms: String(g.waitMs), end_kind: e.how, ended_at: String(e.at), ended_at_error_ms: 0, duration_ms: String(e.at - g.at), row_version: '1',
  });

  it('spools a release before answering it and a lapse at grant at + TTL untouched; shipping closes both grants, and again adds nothing', async () => {
    const tmp = tempDir('lockaudit-spool-');
    const cluster = uniqueId('c');
    const file = spoolPath(tmp.dir, cluster);
    const grants = new FailOpenGrants(new SpoolWriter(file), cluster, log);
    try {
      const lockClass = shortClass('cache');
      await grants.grant({ key: 'ns/released', namespace: 'ns', holder: 'h1', session: '1', lockClass, waitMs: 0, epoch: 7 });
      await grants.grant({ key: 'ns/lapsed', namespace: 'ns', holder: 'h2', session: '2', lockClass, waitMs: 0, epoch: 7 });
      const releasing = Date.now();
      assert.ok(await grants.release('ns/released', '1'));
      const released = Date.now();
      // On disk when release() resolves.
      const ends = (): SpoolEndRecord[] => readSpool(file).records.filter((r): r is SpoolEndRecord => r.kind === 'end');
      const [release] = ends();
      assert.ok(release);
      assert.equal(release.how, 'release');
      assert.ok(release.at >= releasing && release.at <= released);
      assert.equal(await grants.release('ns/released', '1'), undefined, 'released once only');
      // Nobody touches ns/lapsed again: its timer spools the lapse.
      const lapse = await waitFor('the lapse of ns/lapsed', () => ends().find((e) => e.key === 'ns/lapsed'), 10_000, 50);
      const records = readSpool(file).records;
      const byKey = (key: string): SpoolGrantRecord => {
        const g = records.find((r): r is SpoolGrantRecord => r.kind === 'grant' && r.key === key);
        assert.ok(g, key);
        return g;
      };
      const [g1, g2] = [byKey('ns/released'), byKey('ns/lapsed')];
      assert.equal(release.grantId, g1.id);
      assert.equal(lapse.how, 'expiry');
      assert.equal(lapse.grantId, g2.id);
      assert.equal(lapse.at, g2.at + 1_000, 'a lapse ends at grant at + TTL');
      // ns/released was granted first, so its cancelled timer would have fired by now: still one end per grant.
      assert.deepEqual(ends().map((e) => e.grantId).sort(), [g1.id, g2.id].sort());
      assert.equal(grants.holding('ns/lapsed'), undefined);
      assert.equal(await grants.release('ns/lapsed', '2'), undefined, 'a lapsed hold is not released');
      assert.equal(ends().length, 2);

      const shipper = new SpoolShipper(store, cluster, tmp.dir, log);
      assert.equal(await shipper.shipOnce(), 4);
      const expected = [closedRow(g2, lapse), closedRow(g1, release)];
      assert.deepEqual(await grantRowsOf(cluster), expected);
      const events = await store.rows<{ key: string; event_type: string; wall_time: string }>(
        'SELECT key, event_type, toString(toUnixTimestamp64Milli(wall_time)) AS wall_time FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND op = \'spool\' ORDER BY key',
        { c: cluster },
      );
      assert.deepEqual(
        events,
        [
          { key: `/spool/${g1.id}`, event_type: 'unprotected-grant', wall_time: String(g1.at) },
          { key: `/spool/${g2.id}`, event_type: 'unprotected-grant', wall_time: String(g2.at) },
          { key: `/spool/${release.id}`, event_type: 'release', wall_time: String(release.at) },
          { key: `/spool/${lapse.id}`, event_type: 'expiry', wall_time: String(lapse.at) },
        ].sort((a, b) => (a.key < b.key ? -1 : 1)),
      );
      // Everything shipped again (the sidecar lost): nothing more under FINAL.
      rmSync(`${file}.shipped`);
      assert.equal(await new SpoolShipper(store, cluster, tmp.dir, log).shipOnce(), 4);
      assert.deepEqual(await grantRowsOf(cluster), expected);
      const [n] = await store.rows<{ n: string }>('SELECT toString(count()) AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String}', { c: cluster });
      assert.equal(n?.n, '4');
    } finally {
      await grants.close();
      tmp.remove();
    }
  });

  it('an end shipped after its grant (already shipped in an earlier pass) closes it with the grant\'s own columns', async () => {
    const tmp = tempDir('lockaudit-spool-');
    const cluster = uniqueId('c');
    const file = spoolPath(tmp.dir, cluster);
    const grants = new FailOpenGrants(new SpoolWriter(file), cluster, log);
    try {
      await grants.grant({ key: 'ns/k', namespace: 'ns', holder: 'h1', session: '11', lockClass: shortClass('cache'), waitMs: 0, epoch: 7 });
      const shipper = new SpoolShipper(store, cluster, tmp.dir, log);
      assert.equal(await shipper.shipOnce(), 1);
      assert.deepEqual((await grantRowsOf(cluster)).map((r) => r.end_kind), ['']);
      assert.ok(await grants.release('ns/k', '11'));
      // Only the end line is new to the shipper: the closed row comes from the grant copy the end record carries.
      assert.equal(await shipper.shipOnce(), 1);
      const records = readSpool(file).records;
      const g = records.find((r): r is SpoolGrantRecord => r.kind === 'grant');
      const e = records.find((r): r is SpoolEndRecord => r.kind === 'end');
      assert.ok(g && e);
      assert.deepEqual(await grantRowsOf(cluster), [closedRow(g, e)]);
    } finally {
      await grants.close();
      tmp.remove();
    }
  });
});
