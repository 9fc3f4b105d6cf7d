// The fail-open spool loses nothing across a crash: a writer killed with
// SIGKILL mid-stream leaves every grant it had acknowledged on disk, and a
// torn last line is skipped by readers and closed off by the next writer.
// The end of each unprotected hold is spooled too (a release before it is
// answered, a lapse at grant at + TTL by itself), and shipping closes the
// grant in an embedded ClickHouse of this file's own, idempotently.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FailOpenGrants } from '../../lock/failOpen.js';
import { SpoolWriter } from '../../lock/spool.js';
import type { AuditStore } from '../../core/clickhouse.js';
import type { LockClass } from '../../core/keyspace.js';
import { createLogger } from '../../core/logger.js';
import { projectRoot } from '../../core/paths.js';
import { readSpool, spoolPath, type SpoolEndRecord, type SpoolGrantRecord } from '../../core/spool.js';
import { SpoolShipper } from '../../tailer/sink/spoolShipper.js';
import { waitFor } from '../support/capture.js';
import { tempDir, tempStore, uniqueId } from '../support/env.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

describe('fail-open spool', () => {
  it('every acknowledged record survives a SIGKILL', async () => {
    const tmp = tempDir('lockaudit-spool-');
    try {
      const file = path.join(tmp.dir, 'spool', 'local.jsonl');
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'test/support/spoolChild.ts'), file], {
        cwd: projectRoot,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
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
      const record = {
        v: 1,
        kind: 'grant',
        id: 'a',
        cluster: 'local',
        key: 'ns/k',
        namespace: 'ns',
        class: 'c',
        holder: 'h',
        session: '1',
        token: '0',
        waitMs: 0,
        at: 1,
        epoch: 1,
      } as const;
      appendFileSync(file, `${JSON.stringify(record)}\n{"v":1,"kind":"gra`);
      assert.deepEqual(readSpool(file).badLines, [2]);
      const writer = new SpoolWriter(file);
      await writer.append({ ...record, id: 'b' });
      await writer.close();
      const after = readSpool(file);
      assert.deepEqual(
        after.records.map((r) => r.id),
        ['a', 'b'],
      );
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
  const shortClass = (name: string): LockClass => ({
    name,
    namespace: 'ns',
    purpose: 'efficiency',
    enforcement: 'advisory',
    riskOwner: 'risk@corp',
    waiverExpires: '2099-12-31',
    ttlSeconds: 1,
    tier: 'entity',
    onQuorumLoss: 'open',
    fairness: 'memory',
  });

  interface Row {
    key: string;
    spool_id: string;
    holder: string;
    class: string;
    namespace: string;
    lock_path: string;
    session: string;
    granted_at: string;
    wait_ms: string;
    end_kind: string;
    ended_at: string | null;
    ended_at_error_ms: number;
    duration_ms: string | null;
    row_version: string;
  }
  const grantRowsOf = (cluster: string): Promise<Row[]> =>
    store.rows<Row>(
      `SELECT key, spool_id, holder, class, namespace, lock_path, session, toString(toUnixTimestamp64Milli(granted_at)) AS granted_at, toString(wait_ms) AS wait_ms, end_kind,
            toString(toUnixTimestamp64Milli(ended_at)) AS ended_at, ended_at_error_ms, toString(duration_ms) AS duration_ms, toString(row_version) AS row_version
     FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} ORDER BY key`,
      { c: cluster },
    );
  const closedRow = (g: SpoolGrantRecord, e: SpoolEndRecord): Row => ({
    key: g.key,
    spool_id: g.id,
    holder: g.holder,
    class: g.class,
    namespace: g.namespace,
    lock_path: g.key.slice(g.namespace.length + 1),
    session: g.session,
    granted_at: String(g.at),
    wait_ms: String(g.waitMs),
    end_kind: e.how,
    ended_at: String(e.at),
    ended_at_error_ms: 0,
    duration_ms: String(e.at - g.at),
    row_version: '1',
  });

  // Spool records as the lock API's writer (or a hand) puts them in the file.
  const appendRecords = (file: string, ...records: object[]): void => appendFileSync(file, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
  const grantRecord = (cluster: string, id: string, key: string, holder: string, at: number, waitMs = 0): SpoolGrantRecord => ({
    v: 1,
    kind: 'grant',
    id,
    cluster,
    key,
    namespace: 'ns',
    class: 'cache',
    holder,
    session: '5',
    token: '0',
    waitMs,
    at,
    epoch: 7,
  });
  const endRecord = (cluster: string, id: string, grant: SpoolGrantRecord, at: number, how: 'release' | 'expiry' = 'release'): SpoolEndRecord => ({
    v: 1,
    kind: 'end',
    id,
    grantId: grant.id,
    cluster,
    key: grant.key,
    how,
    at,
    grant,
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
      assert.deepEqual(
        ends()
          .map((e) => e.grantId)
          .sort(),
        [g1.id, g2.id].sort(),
      );
      assert.equal(grants.holding('ns/lapsed'), undefined);
      assert.equal(await grants.release('ns/lapsed', '2'), undefined, 'a lapsed hold is not released');
      assert.equal(ends().length, 2);

      const shipper = new SpoolShipper(store, cluster, tmp.dir, log);
      assert.equal(await shipper.shipOnce(), 4);
      const expected = [closedRow(g2, lapse), closedRow(g1, release)];
      assert.deepEqual(await grantRowsOf(cluster), expected);
      const events = await store.rows<{ key: string; event_type: string; wall_time: string }>(
        "SELECT key, event_type, toString(toUnixTimestamp64Milli(wall_time)) AS wall_time FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND op = 'spool' ORDER BY key",
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

  it("an end shipped after its grant (already shipped in an earlier pass) closes it with the grant's own columns", async () => {
    const tmp = tempDir('lockaudit-spool-');
    const cluster = uniqueId('c');
    const file = spoolPath(tmp.dir, cluster);
    const grants = new FailOpenGrants(new SpoolWriter(file), cluster, log);
    try {
      await grants.grant({ key: 'ns/k', namespace: 'ns', holder: 'h1', session: '11', lockClass: shortClass('cache'), waitMs: 0, epoch: 7 });
      const shipper = new SpoolShipper(store, cluster, tmp.dir, log);
      assert.equal(await shipper.shipOnce(), 1);
      assert.deepEqual(
        (await grantRowsOf(cluster)).map((r) => r.end_kind),
        [''],
      );
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

  it('a spool id names one record: a restarted seq and an end carrying another copy of its grant are quarantined, and what was shipped stands', async () => {
    const tmp = tempDir('lockaudit-spool-');
    const cluster = uniqueId('c');
    const file = spoolPath(tmp.dir, cluster);
    try {
      const T = Date.UTC(2026, 0, 5, 10, 0, 0);
      const append = (...records: object[]): void => appendRecords(file, ...records);
      const v1 = (id: string, key: string, holder: string, at: number): SpoolGrantRecord => grantRecord(cluster, id, key, holder, at, 3);
      const end = (id: string, grant: SpoolGrantRecord, at: number): SpoolEndRecord => endRecord(cluster, id, grant, at);
      mkdirSync(path.dirname(file), { recursive: true });
      // A third-party writer's grant by `seq` (its id is "1"), and a lock-API grant "g".
      const g = v1('g', 'ns/b', 'h-b', T);
      append({ seq: 1, key: 'ns/a', holder: 'h1', session: '1', class: 'cache', at: T }, g);
      const shipper = new SpoolShipper(store, cluster, tmp.dir, log);
      assert.equal(await shipper.shipOnce(), 2);
      // The writer restarts and its seq with it: another grant as "1". An end of "g" whose copy of it has another
      // grant time. In one pass: a grant "h" and an end whose copy names another holder, and an end reusing the id "g".
      const h = v1('h', 'ns/c', 'h-c', T + 10);
      append(
        { seq: 1, key: 'ns/a', holder: 'h2', session: '2', class: 'cache', at: T + 60_000 },
        end('e-g', { ...g, at: T + 5 }, T + 1_000),
        h,
        end('e-h', { ...h, holder: 'someone else' }, T + 2_000),
        end('g', h, T + 3_000),
      );
      assert.equal(await shipper.shipOnce(), 1, 'only the grant "h" is shipped');
      const reasons = (
        await store.rows<{ reason: string }>("SELECT reason FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} AND op = 'spool' ORDER BY key", {
          c: cluster,
        })
      )
        .map((r) => r.reason)
        .sort();
      assert.deepEqual(reasons, [
        'spool line: end id "g" is already the id of a grant record: a spool id names one record',
        'spool line: end record\'s copy of grant "g" differs from the grant as shipped (at differs)',
        'spool line: end record\'s copy of grant "h" differs from the grant as shipped (holder differs)',
        'spool line: grant id "1" was shipped before as a different grant (holder differs): a spool id names one grant',
      ]);
      // What was shipped stands: the first "1" (h1), "g" and "h" still open, each once in every copy of the grants.
      const open = await grantRowsOf(cluster);
      assert.deepEqual(
        open.map((r) => [r.key, r.spool_id, r.holder, r.granted_at, r.end_kind]),
        [
          ['ns/a', '1', 'h1', String(T), ''],
          ['ns/b', 'g', 'h-b', String(T), ''],
          ['ns/c', 'h', 'h-c', String(T + 10), ''],
        ],
      );
      for (const table of ['grants_by_key', 'grants_by_holder']) {
        const [n] = await store.rows<{ n: string }>(`SELECT toString(count()) AS n FROM {db:Identifier}.${table} FINAL WHERE cluster = {c:String}`, {
          c: cluster,
        });
        assert.equal(n?.n, '3', table);
      }
      const [ev] = await store.rows<{ value: string }>("SELECT value FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND key = '/spool/1'", {
        c: cluster,
      });
      assert.equal((JSON.parse(ev?.value ?? '{}') as { holder?: string }).holder, 'h1', 'the event of "1" is the first grant\'s');
      // The ends as the grants were shipped close them; shipping everything again (sidecar lost) adds nothing.
      append(end('e-g2', g, T + 1_000), end('e-h2', h, T + 2_000));
      assert.equal(await shipper.shipOnce(), 2);
      rmSync(`${file}.shipped`);
      assert.equal(await new SpoolShipper(store, cluster, tmp.dir, log).shipOnce(), 5);
      assert.deepEqual(
        (await grantRowsOf(cluster)).map((r) => [r.spool_id, r.end_kind]),
        [
          ['1', ''],
          ['g', 'release'],
          ['h', 'release'],
        ],
      );
      const [q] = await store.rows<{ n: string }>(
        "SELECT toString(count()) AS n FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} AND op = 'spool'",
        { c: cluster },
      );
      assert.equal(q?.n, '4', 'the same four lines, quarantined again under the same keys');
    } finally {
      tmp.remove();
    }
  });

  it('a grant ends once, and an end shipped before its grant line names that grant: a second end and a contradicting grant line are quarantined (reviewer)', async () => {
    const tmp = tempDir('lockaudit-spool-');
    const cluster = uniqueId('c');
    const file = spoolPath(tmp.dir, cluster);
    try {
      const T = Date.UTC(2026, 0, 6, 10, 0, 0);
      const append = (...records: object[]): void => appendRecords(file, ...records);
      const v1 = (id: string, key: string, holder: string, at: number): SpoolGrantRecord => grantRecord(cluster, id, key, holder, at);
      const end = (id: string, grant: SpoolGrantRecord, how: 'release' | 'expiry', at: number): SpoolEndRecord => endRecord(cluster, id, grant, at, how);
      mkdirSync(path.dirname(file), { recursive: true });
      const g = v1('g', 'ns/a', 'alice', T);
      const x = v1('x', 'ns/x', 'xena', T);
      // Pass 1: g and its release; and the end of x alone (its grant line not shipped yet).
      append(g, end('e1', g, 'release', T + 1_000), end('ex', x, 'release', T + 2_000));
      const shipper = new SpoolShipper(store, cluster, tmp.dir, log);
      assert.equal(await shipper.shipOnce(), 3);
      // Pass 2: a second end of g with an identical copy (it rewrote the grant's end: release → expiry an hour later),
      // and a grant line for x that is not the grant its end named (it became a second grant under the id "x").
      append(end('e2', g, 'expiry', T + 3_600_000), v1('x', 'ns/y', 'mallory', T));
      assert.equal(await shipper.shipOnce(), 0);
      const reasons = (
        await store.rows<{ reason: string }>("SELECT reason FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} AND op = 'spool'", { c: cluster })
      )
        .map((r) => r.reason)
        .sort();
      assert.deepEqual(reasons, [
        'spool line: grant "g" already ended (release at 2026-01-06T10:00:01.000Z, end "e1"): a grant ends once',
        'spool line: grant id "x" was shipped before as a different grant (lock differs): a spool id names one grant',
      ]);
      assert.deepEqual(
        (await grantRowsOf(cluster)).map((r) => [r.key, r.spool_id, r.holder, r.end_kind, r.ended_at]),
        [
          ['ns/a', 'g', 'alice', 'release', String(T + 1_000)],
          ['ns/x', 'x', 'xena', 'release', String(T + 2_000)],
        ],
      );
      for (const table of ['grants_by_key', 'grants_by_holder']) {
        const [n] = await store.rows<{ n: string }>(`SELECT toString(count()) AS n FROM {db:Identifier}.${table} FINAL WHERE cluster = {c:String}`, {
          c: cluster,
        });
        assert.equal(n?.n, '2', table);
      }
      // x's own grant line, as its end named it, ships and changes nothing.
      append(x);
      assert.equal(await shipper.shipOnce(), 1);
      assert.deepEqual(
        (await grantRowsOf(cluster)).map((r) => [r.spool_id, r.end_kind]),
        [
          ['g', 'release'],
          ['x', 'release'],
        ],
      );
    } finally {
      tmp.remove();
    }
  });

  it('a pass of more ids than one lookup asks ships every line once and quarantines none, also shipped again', async () => {
    const tmp = tempDir('lockaudit-spool-');
    const cluster = uniqueId('c');
    const file = spoolPath(tmp.dir, cluster);
    try {
      const T = Date.UTC(2026, 0, 7, 10, 0, 0);
      mkdirSync(path.dirname(file), { recursive: true });
      const lines: object[] = [];
      for (let i = 0; i < 1_200; i++) {
        const grant = grantRecord(cluster, `n:${i}`, `ns/k${i % 50}`, `h${i}`, T + i);
        lines.push(grant, endRecord(cluster, `n:${i}:end`, grant, T + i + 500));
      }
      appendRecords(file, ...lines);
      assert.equal(await new SpoolShipper(store, cluster, tmp.dir, log).shipOnce(), 2_400);
      rmSync(`${file}.shipped`);
      assert.equal(await new SpoolShipper(store, cluster, tmp.dir, log).shipOnce(), 2_400, 'shipped again: every line is what it was');
      const [q] = await store.rows<{ n: string }>('SELECT toString(count()) AS n FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String}', {
        c: cluster,
      });
      assert.equal(q?.n, '0');
      const [ended] = await store.rows<{ n: string }>(
        "SELECT toString(countIf(end_kind = 'release')) AS n FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String}",
        { c: cluster },
      );
      assert.equal(ended?.n, '1200');
    } finally {
      tmp.remove();
    }
  });

  it('a rotated spool keeps every quarantined line: the same byte offset in the next file is another line (reviewer)', async () => {
    const tmp = tempDir('lockaudit-spool-');
    const cluster = uniqueId('c');
    const file = spoolPath(tmp.dir, cluster);
    try {
      mkdirSync(path.dirname(file), { recursive: true });
      appendFileSync(file, 'not json, first file\n');
      const shipper = new SpoolShipper(store, cluster, tmp.dir, log);
      assert.equal(await shipper.shipOnce(), 0);
      renameSync(file, `${file}.1`); // rotated away; the writer starts a new file
      appendFileSync(file, 'not json either, second file\n');
      assert.equal(await shipper.shipOnce(), 0);
      const rows = await store.rows<{ value: string }>(
        "SELECT value FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} AND op = 'spool' ORDER BY value",
        { c: cluster },
      );
      assert.deepEqual(
        rows.map((r) => r.value),
        ['not json either, second file', 'not json, first file'],
      );
    } finally {
      tmp.remove();
    }
  });
});
