// Fenced writes (issue 21 item 6), against a private etcd (ports
// LOCKAUDIT_LOCAL_PORT_BASE + 70/71) and an embedded chdb: a tailer leader
// that lost its lease and went on writing — its sink's drain, a stalled
// checkpoint insert — never replaces what its successor wrote. Each leader's
// term is its campaign key's create revision in etcd's election (real
// elections here); the store keeps the highest term's row under FINAL, the
// grant history shows the successor's classification, a deposed leader's
// late checkpoint counts neither over its successor's nor for the next
// timeline, and no gap is recorded from a stale checkpoint.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import type { AuditEventRow } from '../../core/events.js';
import { PREFIX, tailerElectionName } from '../../core/keyspace.js';
import { migrate } from '../../core/migrations.js';
import { sqlDir } from '../../core/paths.js';
import { createLogger } from '../../core/logger.js';
import { LeaderElection } from '../../platform/leaderElection.js';
import { grantHistory } from '../../reports/grantHistory/index.js';
import { BatchSink } from '../../tailer/sink/clickhouseSink.js';
import { readCheckpoint, writeCheckpoint } from '../../tailer/sink/offsets.js';
import { writeRows } from '../../tailer/sink/rowWriter.js';
import { TailerReplica } from '../../tailer/replica.js';
import type { RowBatch } from '../../tailer/types.js';
import { waitFor } from '../support/capture.js';
import { tempDir, testConfig, uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';
import { grantRows } from '../support/grants.js';
import { startPrivateEtcd, type PrivateEtcd } from '../support/privateEtcd.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
const db = fileStore();
const PORT_BASE = Number(process.env.LOCKAUDIT_LOCAL_PORT_BASE ?? 24_000);

let own: PrivateEtcd;
let etcd: Etcd3;
before(async () => {
  own = await startPrivateEtcd(PORT_BASE + 70, PORT_BASE + 71);
  etcd = createEtcdClient({ name: 'own', endpoints: [own.endpoint] });
});
after(async () => {
  etcd?.close();
  await own?.stop();
});

/** The campaign key etcd holds for `candidate` in election `name`: its create revision is the candidate's term. */
async function campaignKey(name: string, candidate: string): Promise<{ key: Buffer; lease: string; term: bigint } | undefined> {
  const prefix = `${PREFIX.sys}election/${name}/`;
  const res = await etcd.kv.range({ key: Buffer.from(prefix), range_end: Buffer.from(`${prefix.slice(0, -1)}0`) });
  const kv = res.kvs.find((k) => k.value.toString('utf8') === candidate);
  return kv ? { key: kv.key, lease: String(kv.lease), term: BigInt(kv.create_revision) } : undefined;
}

/** Elects `candidate` (waits while another leads) and returns its election and term. */
async function elect(name: string, candidate: string): Promise<{ election: LeaderElection; term: bigint }> {
  const election = new LeaderElection(etcd, name, candidate, 3);
  await election.campaign(new AbortController().signal, () => undefined);
  const key = await campaignKey(name, candidate);
  assert.ok(key, `${candidate}'s campaign key`);
  return { election, term: key.term };
}

const AT = Date.now() - 60_000;

/** Both leaders decode the same change (the same hold, holder and times); only the classification differs. */
const ended = (cluster: string, ns: string, kind: 'expiry' | 'deleted' | 'release'): RowBatch => {
  const holder = 'spiffe://corp/worker';
  const g = grantRows({ cluster, key: `${ns}/job`, class: 'c', holder, rev: 10, at: AT, end: { kind, at: AT + 59_000, rev: 20 } });
  const event: AuditEventRow = {
    cluster,
    revision: '20',
    key: `${PREFIX.hold}${ns}/job`,
    event_type: kind,
    op: 'delete',
    namespace: ns,
    lock_path: 'job',
    class: 'c',
    holder,
    session: '7587862',
    token: g.open.token,
    epoch: 40,
    grant_revision: '10',
    wait_ms: 0,
    wall_time: AT + 59_000,
    time_estimated: 0,
    time_error_ms: 0,
    create_revision: '10',
    mod_revision: '20',
    version: '0',
    lease: '7587862',
    value: '',
    prev_value: '',
    unprotected: 0,
  } as AuditEventRow;
  return { events: [event], grants: [g.open, g.closed as NonNullable<typeof g.closed>], quarantine: [] };
};

async function write(store: AuditStore, batch: RowBatch, term: bigint): Promise<void> {
  const sink = new BatchSink(store, log, { maxDelayMs: 1, term });
  let durable = false;
  await sink.add(batch, () => {
    durable = true;
  });
  await sink.drain();
  assert.ok(durable);
}

describe('fenced writes: a deposed tailer leader never overrides its successor', { timeout: 180_000 }, () => {
  it("its late rows never replace the successor's, under FINAL, after merges and in the grant history", async () => {
    const cluster = uniqueId('f');
    const ns = uniqueId('ns');
    const name = tailerElectionName(cluster);
    const zombie = await elect(name, 'zombie');
    const standby = elect(name, 'successor');
    await zombie.election.resign(); // its lease gone: the successor is elected
    const successor = await standby;
    try {
      assert.ok(successor.term > zombie.term, `successor term ${successor.term} above the zombie's ${zombie.term}`);

      // The successor classifies the delete as a hand delete (its lease witness knew the lease had TTL left);
      // the zombie's drain, still running, lands its own batch later — an expiry.
      await write(db.store, ended(cluster, ns, 'deleted'), successor.term);
      await new Promise((r) => setTimeout(r, 20)); // a later ingested_at: the old version column let it win
      await write(db.store, ended(cluster, ns, 'expiry'), zombie.term);

      const read = async (): Promise<unknown[]> => [
        await db.store.rows<{ event_type: string }>('SELECT event_type FROM {db:Identifier}.events FINAL WHERE cluster = {c:String}', { c: cluster }),
        await db.store.rows<{ end_kind: string }>('SELECT end_kind FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String}', { c: cluster }),
        await db.store.rows<{ end_kind: string }>('SELECT end_kind FROM {db:Identifier}.grants_by_holder FINAL WHERE cluster = {c:String}', { c: cluster }),
      ];
      const expected = [[{ event_type: 'deleted' }], [{ end_kind: 'deleted' }], [{ end_kind: 'deleted' }]];
      assert.deepEqual(await read(), expected);
      for (const t of ['events', 'grants', 'grants_by_holder']) await db.store.command(`OPTIMIZE TABLE {db:Identifier}.${t} FINAL`);
      assert.deepEqual(await read(), expected, 'the same after merges');

      const deps = { store: db.store, limits: testConfig().reports, cursorKey: randomBytes(32) };
      const page = await grantHistory(deps, { namespace: ns, limit: 10 }, Date.now());
      assert.deepEqual(
        page.items.map((g) => g.endKind),
        ['deleted'],
      );
      const byHolder = await grantHistory(deps, { holder: 'spiffe://corp/worker', limit: 100 }, Date.now());
      assert.deepEqual(
        byHolder.items.filter((g) => g.key === `${ns}/job`).map((g) => g.endKind),
        ['deleted'],
        'by holder (grants_by_holder) too',
      );
    } finally {
      await successor.election.resign();
    }
  });

  it("its late checkpoint counts neither over its successor's nor for the next timeline", async () => {
    const cluster = uniqueId('f');
    const name = tailerElectionName(cluster);
    const zombie = await elect(name, 'zombie');
    const standby = elect(name, 'successor');
    await zombie.election.resign();
    const successor = await standby;
    const leading = async (): Promise<boolean> => true;
    try {
      assert.equal(
        (await writeCheckpoint(db.store, { cluster, revision: 100n, leader: 'successor', term: successor.term, timeline: 0, fence: leading })).kind,
        'written',
      );
      // The zombie passed its etcd check before it lost the lease; its write comes now. The store says a later term wrote.
      const late = await writeCheckpoint(db.store, { cluster, revision: 500n, leader: 'zombie', term: zombie.term, timeline: 0, fence: leading });
      assert.equal(late.kind, 'not-leader');
      // A stalled insert past every check: it lands anyway, and must not count.
      await db.store.insert('checkpoints', [{ cluster, revision: '600', leader: 'zombie', term: zombie.term.toString(), timeline: 0 }]);
      assert.equal(await readCheckpoint(db.store, cluster), 100n);
      await db.store.command('OPTIMIZE TABLE {db:Identifier}.checkpoints_highest FINAL');
      assert.equal(await readCheckpoint(db.store, cluster), 100n, 'the same after merges');

      // A restore starts timeline 1, resuming at 50; the old timeline's leader (any term) lands a late checkpoint afterwards.
      await db.store.insert('etcd_timelines', [
        {
          cluster,
          generation: 0,
          cluster_id: 'a',
          previous_cluster_id: '',
          previous_checkpoint: '0',
          restored_head: '0',
          diverged_after: '0',
          resume_revision: '0',
          reason: 'first start',
          timeline: 0,
        },
      ]);
      await new Promise((r) => setTimeout(r, 20));
      await db.store.insert('etcd_timelines', [
        {
          cluster,
          generation: 1,
          cluster_id: 'a',
          previous_cluster_id: 'a',
          previous_checkpoint: '100',
          restored_head: '60',
          diverged_after: '50',
          resume_revision: '50',
          reason: 'restore',
          timeline: 1,
        },
      ]);
      await new Promise((r) => setTimeout(r, 20));
      await db.store.insert('checkpoints', [{ cluster, revision: '900', leader: 'successor', term: successor.term.toString(), timeline: 0 }]);
      assert.equal(await readCheckpoint(db.store, cluster), 50n, "the old timeline's late checkpoint does not count for the new one");
      assert.equal(
        (await writeCheckpoint(db.store, { cluster, revision: 55n, leader: 'next', term: successor.term + 1n, timeline: 1, fence: leading })).kind,
        'written',
      );
      assert.equal(await readCheckpoint(db.store, cluster), 55n);
    } finally {
      await successor.election.resign();
    }
  });

  it('no gap is recorded from a stale checkpoint: a leader deposed after reading it records nothing', async () => {
    const cluster = uniqueId('f');
    const name = tailerElectionName(cluster);
    for (let i = 0; i < 20; i++) await etcd.put(`/lockaudit-test/${cluster}/${i}`).value(String(i));
    const stale = BigInt((await etcd.kv.range({ key: Buffer.from('/'), count_only: true })).header.revision) - 15n;
    await db.store.insert('checkpoints', [{ cluster, revision: stale.toString(), leader: 'earlier' }]);
    const head = BigInt((await etcd.kv.range({ key: Buffer.from('/'), count_only: true })).header.revision);
    await etcd.kv.compact({ revision: head.toString(), physical: true }); // history after the stale checkpoint is gone

    // Right after the replica read its checkpoint, it is deposed: its lease revoked, a successor elected,
    // and the successor — having handled everything up to the head — checkpoints there.
    let successor: { election: LeaderElection; term: bigint } | undefined;
    let deposed = false;
    const store = new Proxy(db.store, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (prop !== 'rows' || typeof value !== 'function') return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        return async (query: string, params?: Record<string, unknown>) => {
          const rows: unknown = await (value as (q: string, p?: Record<string, unknown>) => Promise<unknown>).call(target, query, params);
          if (!deposed && /checkpoints_(highest|fenced)/.test(query) && (params as { cluster?: string } | undefined)?.cluster === cluster) {
            deposed = true;
            const mine = await campaignKey(name, 'replica');
            assert.ok(mine, 'the replica campaigned');
            await etcd.leaseClient.leaseRevoke({ ID: mine.lease });
            successor = await elect(name, 'successor');
            const wrote = await writeCheckpoint(db.store, {
              cluster,
              revision: head,
              leader: 'successor',
              term: successor.term,
              timeline: 0,
              fence: async () => true,
            });
            assert.equal(wrote.kind, 'written');
          }
          return rows;
        };
      },
    });
    const replica = new TailerReplica(
      { cluster: { name: cluster, endpoints: [own.endpoint] }, store, log, replicaId: 'replica' },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, leaseWitness: false },
    );
    const gaps = async (): Promise<Array<{ from_revision: string }>> =>
      db.store.rows('SELECT toString(from_revision) AS from_revision FROM {db:Identifier}.gaps FINAL WHERE cluster = {c:String}', { c: cluster });
    try {
      replica.start();
      await waitFor('the replica deposed', () => (deposed && successor ? true : undefined), 30_000, 50);
      await new Promise((r) => setTimeout(r, 3_000)); // what the deposed replica goes on doing
      assert.deepEqual(await gaps(), [], 'no gap from the stale checkpoint');
      assert.equal(await readCheckpoint(db.store, cluster), head);
      // The replica leads again (a new term), from the successor's checkpoint: still no gap.
      await successor?.election.resign();
      await waitFor('the replica leading again', async () => ((await campaignKey(name, 'replica')) && replica.status().leader ? true : undefined), 30_000, 100);
      await new Promise((r) => setTimeout(r, 1_000));
      assert.deepEqual(await gaps(), []);
    } finally {
      await successor?.election.resign();
      await replica.close();
    }
  });

  it('the migration keeps every row written before it, and the views on events and grants still feed', async () => {
    const target = db.store.target;
    assert.ok(target.mode === 'embedded');
    // chdb binds one data directory per process: a database of its own in the file's store, migrated up to 109 first.
    const before110 = tempDir('lockaudit-sql-');
    for (const f of readdirSync(sqlDir).filter((n) => /^\d{3}_/.test(n) && Number(n.slice(0, 3)) < 110))
      copyFileSync(path.join(sqlDir, f), path.join(before110.dir, f));
    const old = new AuditStore({ mode: 'embedded', path: target.path, database: uniqueId('pre') });
    try {
      await migrate(old, { dir: before110.dir });
      const cluster = 'c1';
      const ns = uniqueId('ns');
      const early = ended(cluster, ns, 'expiry');
      early.events.push({ ...(early.events[0] as AuditEventRow), revision: '10', event_type: 'grant', op: 'put' });
      // As JSON: a binary insert would cache the table's pre-110 columns in this store (a process migrates before it writes).
      await old.insert('events', early.events);
      await old.insert('grants', early.grants);
      await old.insert('checkpoints', [{ cluster, revision: '20', leader: 'before' }]);
      await migrate(old);

      const rows = async (q: string): Promise<unknown[]> => old.rows(q, { c: cluster });
      assert.deepEqual(
        await rows(
          'SELECT toString(revision) AS r, event_type, toString(term) AS term FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} ORDER BY revision',
        ),
        [
          { r: '10', event_type: 'grant', term: '0' },
          { r: '20', event_type: 'expiry', term: '0' },
        ],
      );
      assert.deepEqual(await rows('SELECT end_kind FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String}'), [{ end_kind: 'expiry' }]);
      assert.deepEqual(await rows('SELECT end_kind FROM {db:Identifier}.grants_by_holder FINAL WHERE cluster = {c:String}'), [{ end_kind: 'expiry' }]);
      assert.deepEqual(
        await rows('SELECT count() AS n FROM {db:Identifier}.events_unfenced WHERE cluster = {c:String}'),
        [{ n: '2' }],
        'the old table is kept',
      );
      assert.equal(await readCheckpoint(old, cluster), 20n);

      // Written after: the higher term wins in grants and (through its view) grants_by_holder; a later grant still raises the high-water mark.
      await writeRows(old, ended(cluster, ns, 'deleted'), { term: 9n });
      await writeRows(old, ended(cluster, ns, 'release'), { term: 8n });
      assert.deepEqual(await rows('SELECT end_kind FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String}'), [{ end_kind: 'deleted' }]);
      assert.deepEqual(await rows('SELECT end_kind FROM {db:Identifier}.grants_by_holder FINAL WHERE cluster = {c:String}'), [{ end_kind: 'deleted' }]);
      const later = { ...(early.events[1] as AuditEventRow), revision: '30', grant_revision: '30', token: '11258999068426270' };
      await writeRows(old, { events: [later], grants: [], quarantine: [] }, { term: 9n });
      assert.deepEqual(await rows('SELECT toString(max(token)) AS t FROM {db:Identifier}.grant_high_water WHERE cluster = {c:String}'), [
        { t: '11258999068426270' },
      ]);
    } finally {
      await old.close();
      before110.remove();
    }
  });
});
