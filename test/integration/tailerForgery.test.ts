// What an insider with write access to etcd can and cannot make the record
// say (docs/architecture.md, the insider model; issue 21 items 1 and 2). Every
// forgery is made the way an insider would — raw etcd3 txns, no lock API —
// against the suite's etcd (default limits):
// - a hand-written `release` marker in the txn that deletes someone's hold,
//   a `session-close` marker naming no session, a forged /sys/force record:
//   the holds read `deleted` (their leases live), the records foreign, alarmed;
// - a genuine release marker copied into the txn that deletes a later grant
//   of the same key: that grant reads `deleted`;
// - a real grant's value put back by hand after its release, on the same key
//   and live lease, or on no lease: `foreign`, also after the tailer restarted.
// - a /sys/clock write with no proof (claiming 2299), or the tailer's own
//   copied back: foreign, alarmed, and no time anchor; nor does a queue value
//   time the hand delete beside it, and hand puts racing the clock writer do
//   not stop it.
// The API's own release, force-release and session close still read as such.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Etcd3, IRequestOp } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { originSecret } from '../../core/originSecret.js';
import { HealthState } from '../../platform/health.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { writeClock } from '../../tailer/clock/clockWriter.js';
import { checkpointAtHead, headRevision, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { fencedClass, lockApp, type LockApp } from '../support/lockApp.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

const put = (key: string, value: string, lease?: string): IRequestOp => ({
  request_put: { key: Buffer.from(key), value: Buffer.from(value), ...(lease ? { lease } : {}) },
});
const del = (key: string): IRequestOp => ({ request_delete_range: { key: Buffer.from(key) } });

describe('tailer: forged markers, force records and copied holds', { timeout: 240_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let client: Etcd3;
  let la: LockApp;
  let replica: TailerReplica | undefined;
  const health = new HealthState();
  const label = uniqueId('c');
  const startReplica = (h: HealthState = health): TailerReplica => {
    const r = new TailerReplica(
      { cluster: { name: label, endpoints }, store, log, health: h },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, originSecret: originSecret(config) },
    );
    r.start();
    return r;
  };

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    client = createEtcdClient({ name: 'test', endpoints });
    la = await lockApp(config, store);
    await checkpointAtHead(store, client, label);
    replica = startReplica();
  });
  after(async () => {
    await replica?.close();
    await la.close();
    client.close();
    await closeStore();
  });

  /** An insider's txn: raw ops, no compare. */
  async function txn(...ops: IRequestOp[]): Promise<bigint> {
    const res = await client.kv.txn({ compare: [], success: ops, failure: [] });
    return BigInt(res.header.revision);
  }

  async function grantsOf(ns: string, atLeast: bigint): Promise<Array<[string, string, string]>> {
    await waitFor('checkpoint', async () => ((await readCheckpoint(store, label)) >= atLeast ? true : undefined), 60_000, 200);
    const rows = await store.rows<{ key: string; end_kind: string; origin: string }>(
      `SELECT key, end_kind, origin FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND namespace = {ns:String} ORDER BY key, grant_revision`,
      { c: label, ns },
    );
    return rows.map((r) => [r.key.slice(ns.length + 1), r.end_kind, r.origin]);
  }

  async function setup(ns: string): Promise<{
    caller: string;
    cls: string;
    session: () => Promise<string>;
    acquire: (key: string, session: string) => Promise<{ token: string; revision: string }>;
  }> {
    const admin = await la.token(uniqueId('admin-'), ['admin']);
    const cls = `${ns}-fenced`;
    assert.equal((await la.call('PUT', `/v1/classes/${cls}`, admin, fencedClass(cls, ns, { ttlSeconds: 60 }))).status, 200);
    const caller = await la.token(`spiffe://test/${ns}/worker`, ['client']);
    return {
      caller,
      cls,
      session: async () => {
        const s = await la.call<{ id: string }>('POST', '/v1/sessions', caller, { ttlSeconds: 60 });
        assert.ok(s.status === 201 || s.status === 200, JSON.stringify(s.body)); // 200: the caller's live session of this TTL, reused
        return s.body.id;
      },
      acquire: async (key, session) => {
        const r = await la.call<{ token: string; revision: string }>('POST', '/v1/locks/acquire', caller, { key: `${ns}/${key}`, session, class: cls });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r.body;
      },
    };
  }

  it("forged markers and force records explain nothing: the holds deleted beside them read `deleted`, the records foreign (alarmed); the API's own ends still read as such", async () => {
    const ns = uniqueId('ns');
    const { caller, session, acquire } = await setup(ns);
    const s1 = await session();
    const holder = `spiffe://test/${ns}/worker`;
    const g = {} as Record<string, { token: string; revision: string }>;
    for (const k of ['forged-release', 'open-close', 'forged-force', 'copied-marker', 'released', 'forced']) g[k] = await acquire(k, s1);

    // 1. A hand-written release marker in the txn that deletes the hold.
    await txn(
      put(`/sys/mark/${randomUUID()}`, JSON.stringify({ kind: 'release', by: holder, at: Date.now(), key: `${ns}/forged-release`, session: s1 })),
      del(`/l/${ns}/forged-release`),
    );
    // 2. A session-close marker that names no session.
    await txn(put(`/sys/mark/${randomUUID()}`, JSON.stringify({ kind: 'session-close', by: holder, at: Date.now() })), del(`/l/${ns}/open-close`));
    // 3. A force record naming two operators who never approved anything.
    const id = randomUUID();
    const forged = {
      id,
      key: `${ns}/forged-force`,
      holder,
      session: s1,
      token: g['forged-force']?.token,
      class: `${ns}-fenced`,
      enforcement: 'fenced',
      requester: 'alice@corp',
      approver: 'bob@corp',
      reason: 'worker wedged',
      requestedAt: Date.now() - 60_000,
      approvedAt: Date.now(),
      revokedSession: false,
    };
    await txn(put(`/sys/force/${id}`, JSON.stringify(forged)), del(`/l/${ns}/forged-force`));
    // 4. A genuine release marker (signed), copied into the txn that deletes a later grant of the same key.
    const rel = await la.call<{ revision: string }>('POST', '/v1/locks/release', caller, {
      key: `${ns}/copied-marker`,
      session: s1,
      token: g['copied-marker']?.token,
    });
    assert.equal(rel.status, 200, JSON.stringify(rel.body));
    const marks = await client.getAll().prefix('/sys/mark/').exec();
    const genuine = marks.kvs.find((kv) => String(kv.mod_revision) === rel.body.revision);
    assert.ok(genuine, 'the release wrote its marker');
    await acquire('copied-marker', s1);
    await txn(put(`/sys/mark/${randomUUID()}`, genuine.value.toString()), del(`/l/${ns}/copied-marker`));
    // The API's own: a release, a force-release approved by two operators, a session close.
    assert.equal((await la.call('POST', '/v1/locks/release', caller, { key: `${ns}/released`, session: s1, token: g.released?.token })).status, 200);
    const alice = await la.token(uniqueId('alice-'), ['lock-operator']);
    const bob = await la.token(uniqueId('bob-'), ['lock-operator']);
    const fr = await la.call<{ id: string; requestHash: string }>('POST', '/v1/force-releases', alice, { key: `${ns}/forced`, reason: 'wedged' });
    assert.equal((await la.call('POST', `/v1/force-releases/${fr.body.id}/approve`, bob, { requestHash: fr.body.requestHash })).status, 200);
    assert.equal(await session(), s1, 'one session per caller and TTL: closed last');
    await acquire('closed', s1);
    assert.equal((await la.call('DELETE', `/v1/sessions/${s1}`, caller)).status, 200);
    const head = await headRevision(client);

    assert.deepEqual(await grantsOf(ns, head), [
      ['closed', 'session-close', 'api'],
      ['copied-marker', 'release', 'api'],
      ['copied-marker', 'deleted', 'api'],
      ['forced', 'force', 'api'],
      ['forged-force', 'deleted', 'api'],
      ['forged-release', 'deleted', 'api'],
      ['open-close', 'deleted', 'api'],
      ['released', 'release', 'api'],
    ]);
    // The forged records are in the log as what they are.
    const records = await store.rows<{ event_type: string; origin: string; n: string }>(
      `SELECT event_type, origin, toString(count()) AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND event_type IN ('marker', 'force-record') AND (value LIKE {like:String} OR value LIKE {id:String}) GROUP BY event_type, origin ORDER BY event_type, origin`,
      { c: label, like: `%${ns}/%`, id: `%${id}%` },
    );
    assert.deepEqual(
      records.map((r) => [r.event_type, r.origin, r.n]),
      [
        ['force-record', 'api', '1'],
        ['force-record', 'foreign', '1'],
        ['marker', 'api', '4'], // the two genuine releases, the genuine marker's copy (proven, but bound to another grant), the session close
        ['marker', 'foreign', '2'], // the hand-written release and session-close markers
      ],
    );
    const alarm = health.alarms().find((a) => a.name === `foreign-write:${label}`);
    assert.ok(alarm, 'foreign-write alarm raised');
    assert.match(alarm.message, /reason marker|force record/);
  });

  it("a forged /sys/clock write, or the tailer's own copied back, times nothing: the hold deleted beside it keeps a time bracketed by proven writes; the write is foreign and alarmed", async () => {
    // A tailer of its own health: an alarm keeps the message it was first raised with (the markers' above).
    await replica?.close();
    const clockHealth = new HealthState();
    replica = startReplica(clockHealth);
    const ns = uniqueId('ns');
    const { session, acquire } = await setup(ns);
    const s1 = await session();
    for (const k of ['beside-forged', 'beside-copy', 'beside-queue']) await acquire(k, s1);
    const future = Date.parse('2299-01-01T00:00:00Z');
    // 1. A clock value with no proof, claiming 2299, in the txn that deletes a hold by hand (the delete has no time of its own).
    const t0 = Date.now();
    const forgedRev = await txn(put('/sys/clock', JSON.stringify({ at: future })), del(`/l/${ns}/beside-forged`));
    // 2. The tailer's own proven clock value, copied back after later ones were written.
    const current = await waitFor(
      'a proven clock write after the forgery',
      async () => {
        const [kv] = (await client.kv.range({ key: Buffer.from('/sys/clock') })).kvs;
        return kv && BigInt(kv.mod_revision) > forgedRev && 'mac' in JSON.parse(kv.value.toString()) ? kv : undefined;
      },
      20_000,
      100,
    );
    // Proven writes after it (the new leader's, a second apart), so the copy's neighbours are later than the copied time.
    await waitFor(
      'two more clock writes',
      async () => {
        const [kv] = (await client.kv.range({ key: Buffer.from('/sys/clock') })).kvs;
        return kv && BigInt(kv.version) >= BigInt(current.version) + 2n && kv.create_revision === current.create_revision ? true : undefined;
      },
      20_000,
      100,
    );
    const copyRev = await txn(put('/sys/clock', current.value.toString()), del(`/l/${ns}/beside-copy`));
    // 3. A queue value (which carries no proof) claiming 55 s ahead, in the txn of a hand delete (helper review).
    const queueRev = await txn(
      put(`/q/${ns}/beside-queue/999`, JSON.stringify({ holder: 'spiffe://x/q', session: '999', class: `${ns}-fenced`, at: Date.now() + 55_000 })),
      del(`/l/${ns}/beside-queue`),
    );
    const t1 = Date.now();
    await grantsOf(ns, await headRevision(client));
    const rows = await store.rows<{ revision: string; key: string; event_type: string; origin: string; wall: string }>(
      `SELECT toString(revision) AS revision, key, event_type, origin, toString(toUnixTimestamp64Milli(wall_time)) AS wall FROM {db:Identifier}.events FINAL
       WHERE cluster = {c:String} AND revision IN ({a:UInt64}, {b:UInt64}, {q:UInt64}) AND NOT startsWith(key, '/q/') ORDER BY revision, key`,
      { c: label, a: forgedRev.toString(), b: copyRev.toString(), q: queueRev.toString() },
    );
    assert.deepEqual(
      rows.map((r) => [r.key.startsWith('/l/') ? 'hold' : r.key, r.event_type, r.origin]),
      [
        ['hold', 'deleted', 'api'],
        ['/sys/clock', 'clock', 'foreign'],
        ['hold', 'deleted', 'api'],
        ['/sys/clock', 'clock', 'foreign'],
        ['hold', 'deleted', 'api'],
      ],
    );
    // Before the clock's proof the delete beside the forgery was stamped 2299, and the one beside the copy with the copied (older) time.
    for (const r of rows) {
      const wall = Number(r.wall);
      assert.ok(
        wall >= t0 - 5_000 && wall <= t1 + 5_000,
        `${r.key} at ${r.revision} timed ${new Date(wall).toISOString()}, not between the proven writes around it`,
      );
    }
    const copied = rows.find((r) => r.revision === copyRev.toString() && r.key.startsWith('/l/'));
    assert.ok(Number(copied?.wall) > Number(JSON.parse(current.value.toString()).at), 'the delete beside the copy is after the copied write');
    const alarm = clockHealth.alarms().find((a) => a.name === `foreign-write:${label}`);
    assert.match(alarm?.message ?? '', /\/sys\/clock/);
  });

  it("a hold written by hand claiming 2286 or 2020 is granted when etcd's history says (the proven clock before it), at its put and at its delete alike", async () => {
    const ns = uniqueId('ns');
    const t0 = Date.now();
    const hold = (at: number) => JSON.stringify({ holder: 'spiffe://attacker/x', session: '0', class: 'payments', epoch: 1, waitMs: 0, at });
    await txn(put(`/l/${ns}/future`, hold(Date.parse('2286-11-20T00:00:00Z'))));
    await txn(put(`/l/${ns}/backdated`, hold(Date.parse('2020-01-01T00:00:00Z'))));
    const opened = await grantsOf(ns, await headRevision(client));
    assert.deepEqual(opened, [
      ['backdated', '', 'foreign'],
      ['future', '', 'foreign'],
    ]);
    await new Promise((r) => setTimeout(r, 1_200)); // a proven clock write between the puts and the deletes
    await txn(del(`/l/${ns}/future`));
    await txn(del(`/l/${ns}/backdated`));
    const t1 = Date.now();
    assert.deepEqual(await grantsOf(ns, await headRevision(client)), [
      ['backdated', 'deleted', 'foreign'],
      ['future', 'deleted', 'foreign'],
    ]);
    for (const table of ['grants', 'grants_by_key']) {
      const rows = await store.rows<{ key: string; granted: string; ended: string; n: string }>(
        `SELECT key, toString(toUnixTimestamp64Milli(any(granted_at))) AS granted, toString(toUnixTimestamp64Milli(any(ended_at))) AS ended, toString(count()) AS n
         FROM {db:Identifier}.${table} FINAL WHERE cluster = {c:String} AND namespace = {ns:String} GROUP BY key ORDER BY key`,
        { c: label, ns },
      );
      assert.deepEqual(
        rows.map((r) => [r.key.slice(ns.length + 1), r.n]),
        [
          ['backdated', '1'],
          ['future', '1'],
        ],
        `${table}: one row a grant (the delete named the put's grant time)`,
      );
      for (const r of rows) {
        // Before: granted 2286-11-20 (invisible to every search up to now) and 2020-01-01 (in a day long exported).
        assert.ok(Number(r.granted) >= t0 - 3_000 && Number(r.granted) <= t1, `${table} ${r.key} granted ${new Date(Number(r.granted)).toISOString()}`);
        assert.ok(Number(r.ended) >= Number(r.granted) && Number(r.ended) <= t1 + 2_000, `${table} ${r.key} ended ${new Date(Number(r.ended)).toISOString()}`);
      }
    }
  });

  it("hand puts racing the tailer's clock writes: each write still ends, on its own put or on theirs (no throw, no endless loop)", async () => {
    const stop = AbortSignal.timeout(3_000);
    const flood = async (): Promise<number> => {
      let n = 0;
      while (!stop.aborted) {
        await client
          .put('/sys/clock')
          .value(JSON.stringify({ at: Date.now() }))
          .exec();
        n += 1;
      }
      return n;
    };
    const writers = [flood(), flood(), flood()];
    const secret = originSecret(config);
    let wrote = 0;
    while (!stop.aborted) {
      const before = await headRevision(client);
      const revision = await writeClock(client, secret);
      assert.ok(revision >= before, `a clock write ends on a revision at or after ${before} (${revision})`);
      wrote += 1;
    }
    assert.ok(
      (await Promise.all(writers)).every((n) => n > 10),
      'the hand puts ran',
    );
    assert.ok(wrote > 3, `${wrote} clock writes ended within 3 s`);
  });

  it("a real grant's value put back by hand after its release reads foreign — on its lease, on none, and after the tailer restarted", async () => {
    const ns = uniqueId('ns');
    const { caller, session, acquire } = await setup(ns);
    const s = await session();
    const granted = await acquire('k', s);
    const value = (await client.get(`/l/${ns}/k`).string()) as string;
    assert.equal((await la.call('POST', '/v1/locks/release', caller, { key: `${ns}/k`, session: s, token: granted.token })).status, 200);
    // Put back on the same key and the same live lease, then deleted by hand; then on no lease at all.
    await txn(put(`/l/${ns}/k`, value, s));
    await txn(del(`/l/${ns}/k`));
    await txn(put(`/l/${ns}/k`, value));
    await txn(del(`/l/${ns}/k`));
    let head = await headRevision(client);
    assert.deepEqual(await grantsOf(ns, head), [
      ['k', 'release', 'api'],
      ['k', 'deleted', 'foreign'],
      ['k', 'deleted', 'foreign'],
    ]);
    // A new tailer process knows nothing of the first grant but what the store holds.
    await replica?.close();
    replica = startReplica();
    await txn(put(`/l/${ns}/k`, value, s));
    head = await headRevision(client);
    const rows = await grantsOf(ns, head);
    assert.deepEqual(rows.at(-1), ['k', '', 'foreign']);
    await txn(del(`/l/${ns}/k`));
    // A genuine grant afterwards is the API's.
    const again = await acquire('k', s);
    head = await headRevision(client);
    assert.deepEqual((await grantsOf(ns, head)).at(-1), ['k', '', 'api']);
    assert.equal((await la.call('POST', '/v1/locks/release', caller, { key: `${ns}/k`, session: s, token: again.token })).status, 200);
    const alarm = health.alarms().find((a) => a.name === `foreign-write:${label}`);
    assert.ok(alarm, 'foreign-write alarm raised');
  });

  it('a copied hold deleted by hand and its session closed at once, read later in catch-up (no lease witness): `deleted`; a session that lapses: `expiry`', async () => {
    const ns = uniqueId('ns');
    const { caller, session, acquire } = await setup(ns);
    // The tailer is away: by the time it reads these revisions every lease involved is gone.
    await replica?.close();
    replica = undefined;
    const s = await session();
    const granted = await acquire('copied', s);
    const value = (await client.get(`/l/${ns}/copied`).string()) as string;
    assert.equal((await la.call('POST', '/v1/locks/release', caller, { key: `${ns}/copied`, session: s, token: granted.token })).status, 200);
    await txn(put(`/l/${ns}/copied`, value, s));
    await txn(del(`/l/${ns}/copied`));
    assert.equal((await la.call('DELETE', `/v1/sessions/${s}`, caller)).status, 200); // the lease revoked right after
    // A session of its own left to lapse while it holds a key: etcd deletes the hold and the owner record together.
    const admin = await la.token(uniqueId('admin-'), ['admin']);
    assert.equal((await la.call('PUT', `/v1/classes/${ns}-short`, admin, fencedClass(`${ns}-short`, ns, { ttlSeconds: 5 }))).status, 200);
    const short = await la.call<{ id: string }>('POST', '/v1/sessions', caller, { ttlSeconds: 5 });
    assert.equal(short.status, 201, JSON.stringify(short.body));
    assert.equal((await la.call('POST', '/v1/locks/acquire', caller, { key: `${ns}/lapses`, session: short.body.id, class: `${ns}-short` })).status, 200);
    await waitFor('the short session to lapse', async () => ((await client.get(`/l/${ns}/lapses`).string()) === null ? true : undefined), 30_000, 250);
    const head = await headRevision(client);
    replica = startReplica();
    assert.deepEqual(await grantsOf(ns, head), [
      ['copied', 'release', 'api'],
      ['copied', 'deleted', 'foreign'],
      ['lapses', 'expiry', 'api'],
    ]);
  });
});
