// GET /v1/state and /v1/diff against known answers: a scripted workload
// through the lock API (plus an expiry and a queue entry written the way the
// API writes them), captured by a real tailer into this file's own ClickHouse.
// The state at five recorded revisions must equal the holds and queue
// entries etcd itself reports at those revisions (revision-pinned range
// reads: the suite's etcd is not compacted meanwhile); a diff must equal the
// set difference of two of them; a gap inside a window must be named.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { buildApp, type App } from '../../api/app.js';
import { stateRoutes } from '../../api/routes/state.js';
import type { AuditStore } from '../../core/clickhouse.js';
import type { Config } from '../../core/config.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createApiToken } from '../../core/apiTokens.js';
import { createLogger } from '../../core/logger.js';
import { makeToken } from '../../core/token.js';
import { stateAt } from '../../reports/state/index.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { waitFor } from '../support/capture.js';
import { startPrivateEtcd } from '../support/privateEtcd.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { fencedClass, lockApp, type LockApp } from '../support/lockApp.js';
import { Workload } from '../support/workload.js';

type Json = Record<string, unknown>;
interface Hold {
  key: string;
  holder: string;
  grantRevision: string;
  token: string;
}
interface StateBody {
  at: { revision: string };
  holds: Hold[];
  queue: Array<{ key: string; leaseId: string }>;
  classes: Array<{ name: string; definition: Json }>;
  unknown: Array<{ key: string; kind: string; gap: { fromRevision: string } | null }>;
  gaps: Array<{ fromRevision: string; toRevision: string }>;
  complete: boolean;
}
interface DiffBody {
  holds: {
    appeared: Hold[];
    ended: Array<Hold & { endKind: string; endRevision: string | null; endedBy: string | null }>;
    changedHolder: Array<{ key: string }>;
  };
  classes: { created: Array<{ name: string }>; changed: Array<{ name: string; fields: Array<{ field: string; before: unknown; after: unknown }> }> };
  forceReleases: Array<{ key: string; approver: string; requester: string; revision: string }>;
  gaps: Array<{ fromRevision: string }>;
  complete: boolean;
}

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

describe('keyspace at a moment and diff (known answers)', { timeout: 180_000 }, () => {
  const label = uniqueId('c');
  let config: Config;
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let etcd: Etcd3;
  let la: LockApp;
  let api: App;
  let replica: TailerReplica;
  let investigator: string;

  before(async () => {
    const base = testConfig();
    const endpoints = base.etcd.clusters[0]?.endpoints ?? [];
    // The API and the tailer name the suite's etcd by this file's own cluster label.
    config = { ...base, etcd: { ...base.etcd, clusters: [{ name: label, endpoints }] } };
    ({ store, close: closeStore } = await tempStore());
    etcd = createEtcdClient({ name: label, endpoints });
    la = await lockApp(config, store);
    api = await buildApp(la.ctx, [stateRoutes]);
    investigator = await la.token(uniqueId('inv-'), ['investigator']);
  });

  after(async () => {
    await replica?.close();
    await api?.close();
    await la?.close();
    etcd?.close();
    await closeStore?.();
  });

  const get = async <T>(url: string, token = investigator): Promise<{ status: number; body: T }> => {
    const res = await api.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
    return { status: res.statusCode, body: res.json() as T };
  };

  /** What etcd itself holds under /l/<ns>/ and /q/<ns>/ at `revision`. */
  async function etcdAt(ns: string, revision: string): Promise<{ holds: string[]; queue: string[] }> {
    const read = async (prefix: string) => (await etcd.kv.range({ key: Buffer.from(prefix), range_end: Buffer.from(prefix.slice(0, -1) + '0'), revision })).kvs;
    const holds = (await read(`/l/${ns}/`)).map((kv) => {
      const v = JSON.parse(kv.value.toString()) as { holder: string; epoch: number };
      return `${kv.key.toString().slice(3)} ${v.holder} ${kv.mod_revision} ${makeToken(v.epoch, BigInt(String(kv.mod_revision)))}`;
    });
    const queue = (await read(`/q/${ns}/`)).map((kv) => kv.key.toString().slice(3));
    return { holds: holds.sort(), queue: queue.sort() };
  }

  const holdSet = (holds: Hold[]): string[] => holds.map((h) => `${h.key} ${h.holder} ${h.grantRevision} ${h.token}`).sort();

  it('state at five revisions equals etcd at those revisions; a diff is their set difference; a gap in the window is named', async () => {
    const ns = uniqueId('ns');
    const admin = await la.token(uniqueId('admin-'), ['admin']);
    const op1 = await la.token(uniqueId('op-a-'), ['lock-operator']);
    const op2Identity = uniqueId('op-b-');
    const op2 = await la.token(op2Identity, ['lock-operator']);
    const head = async (): Promise<string> => String((await etcd.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
    const from = BigInt(await head()) + 1n;
    await store.insert('checkpoints', [{ cluster: label, revision: (from - 1n).toString(), leader: 'test' }]);
    replica = new TailerReplica(
      { cluster: { name: label, endpoints: config.etcd.clusters[0]?.endpoints ?? [] }, store, log },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100 },
    );
    replica.start();

    const className = `${ns}-fenced`.toLowerCase();
    const ok = (r: { status: number; body: unknown }, status = 200) => assert.equal(r.status, status, JSON.stringify(r.body));
    ok(await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns)));
    const workers = await Promise.all(
      ['w1', 'w2', 'w3'].map(async (w) => {
        const token = await la.token(`spiffe://test/${ns}/${w}`, ['client']);
        const s = await la.call<{ id: string }>('POST', '/v1/sessions', token, { ttlSeconds: 15 });
        ok(s, 201);
        return { token, session: s.body.id };
      }),
    );
    const acquire = async (i: number, path: string) => {
      const w = workers[i]!;
      const r = await la.call<{ token: string }>('POST', '/v1/locks/acquire', w.token, { key: `${ns}/${path}`, session: w.session, class: className });
      ok(r);
      return r.body.token;
    };
    const revisions: string[] = [];

    // r1: two holds.
    const t1 = await acquire(0, 'k1');
    await acquire(1, 'k2');
    revisions.push(await head());
    // r2: a third hold, k1 released.
    await acquire(2, 'k3');
    ok(await la.call('POST', '/v1/locks/release', workers[0]!.token, { key: `${ns}/k1`, session: workers[0]!.session, token: t1 }));
    revisions.push(await head());
    // r3: the class changes; k1 goes to w2 (a new grant, another holder); w3 queues for k3 (written as the API does).
    ok(await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns, { tier: 'coord' })));
    await acquire(1, 'k1');
    const w = new Workload(etcd, ns);
    const queued = await w.session(60);
    await w.queueEnter(queued, 'k3');
    revisions.push(await head());
    // r4: k2 force-released by two operators.
    const req = await la.call<{ id: string; requestHash: string }>('POST', '/v1/force-releases', op1, { key: `${ns}/k2`, reason: 'wedged (test)' });
    ok(req, 202);
    const approved = await la.call<{ revision: string }>('POST', `/v1/force-releases/${req.body.id}/approve`, op2, { requestHash: req.body.requestHash });
    ok(approved);
    revisions.push(await head());
    // r5: a hold granted and lapsed by lease expiry (no marker), another one kept.
    const lapsing = await w.session(60);
    await w.grant(lapsing, 'k5', { holder: `spiffe://test/${ns}/w5` });
    await w.grant(lapsing, 'k6', { holder: `spiffe://test/${ns}/w5` });
    await w.expire(lapsing);
    await w.grant(await w.session(60), 'k7', { holder: `spiffe://test/${ns}/w6` });
    revisions.push(await head());
    const end = BigInt(await w.clock());
    await waitFor('tailer checkpoint', async () => ((await readCheckpoint(store, label)) >= end ? true : undefined), 60_000, 200);

    for (const rev of revisions) {
      const expected = await etcdAt(ns, rev);
      const got = await get<StateBody>(`/v1/state?at=${rev}&prefix=${ns}/`);
      ok(got);
      assert.equal(got.body.at.revision, rev);
      assert.deepEqual(holdSet(got.body.holds), expected.holds, `holds at ${rev}`);
      assert.deepEqual(got.body.queue.map((q) => `${q.key}/${q.leaseId}`).sort(), expected.queue, `queue at ${rev}`);
      assert.equal(got.body.complete, true);
      assert.deepEqual(got.body.unknown, []);
      assert.deepEqual(
        got.body.classes.map((c) => c.name),
        [className],
      );
    }

    // Diff r1 → r4: exactly the set difference of what etcd held, with how and by whom each hold ended.
    const [r1, , , r4, r5] = revisions as [string, string, string, string, string];
    const [e1, e4] = [await etcdAt(ns, r1), await etcdAt(ns, r4)];
    const d = await get<DiffBody>(`/v1/diff?from=${r1}&to=${r4}&prefix=${ns}/`);
    ok(d);
    assert.deepEqual(
      holdSet(d.body.holds.appeared),
      e4.holds.filter((h) => !e1.holds.includes(h)),
    );
    assert.deepEqual(
      holdSet(d.body.holds.ended),
      e1.holds.filter((h) => !e4.holds.includes(h)),
    );
    const endOf = Object.fromEntries(d.body.holds.ended.map((h) => [h.key.slice(ns.length + 1), [h.endKind, h.endedBy]]));
    assert.deepEqual(endOf, { k1: ['release', `spiffe://test/${ns}/w1`], k2: ['force', op2Identity] });
    assert.deepEqual(
      d.body.holds.changedHolder.map((c) => c.key),
      [`${ns}/k1`],
    );
    assert.deepEqual(
      d.body.classes.changed.map((c) => [c.name, c.fields]),
      [[className, [{ field: 'tier', before: 'entity', after: 'coord' }]]],
    );
    assert.deepEqual(
      d.body.forceReleases.map((f) => [f.key, f.approver, f.revision]),
      [[`${ns}/k2`, op2Identity, approved.body.revision]],
    );
    assert.equal(d.body.complete, true);
    // r4 → r5: the lapsed holds never show, the expiry is between two states only for holds held at r4: none of k5/k6.
    const d45 = await get<DiffBody>(`/v1/diff?from=${r4}&to=${r5}&prefix=${ns}/`);
    assert.deepEqual(
      d45.body.holds.appeared.map((h) => h.key),
      [`${ns}/k7`],
    );

    // A token scoped to this namespace (issue 44) reads the same state and diff, without a prefix too (narrowed, and
    // told); one scoped to another namespace reads none of it and is refused this prefix.
    const mine = (await createApiToken(store, uniqueId('pat-'), ['investigator'], { scope: { namespaces: [ns], clusters: [] } })).token;
    const other = (await createApiToken(store, uniqueId('oth-'), ['investigator'], { scope: { namespaces: ['someone-else'], clusters: [] } })).token;
    const full = await get<StateBody>(`/v1/state?at=${r4}&prefix=${ns}/`);
    assert.deepEqual((await get<StateBody>(`/v1/state?at=${r4}&prefix=${ns}/`, mine)).body, full.body);
    const narrowed = await get<StateBody & { narrowedTo?: unknown }>(`/v1/state?at=${r4}`, mine);
    ok(narrowed);
    assert.deepEqual(holdSet(narrowed.body.holds), holdSet(full.body.holds));
    assert.deepEqual(narrowed.body.queue, full.body.queue);
    assert.deepEqual(narrowed.body.narrowedTo, { namespaces: [ns], clusters: [] });
    const theirs = await get<StateBody>(`/v1/state?at=${r4}`, other);
    ok(theirs);
    assert.deepEqual([theirs.body.holds, theirs.body.queue, theirs.body.classes], [[], [], []]);
    const refusedState = await get<{ error: string; message: string }>(`/v1/state?at=${r4}&prefix=${ns}/`, other);
    assert.equal(refusedState.status, 403);
    assert.match(refusedState.body.message, /querystring\.prefix: namespace .* outside .*someone-else/);
    const mineDiff = await get<DiffBody>(`/v1/diff?from=${r1}&to=${r4}`, mine);
    assert.deepEqual(mineDiff.body.holds, d.body.holds);
    assert.deepEqual(mineDiff.body.forceReleases, d.body.forceReleases); // its own force-release, read through the scope's SQL bound
    assert.equal(mineDiff.body.forceReleases.length, 1);
    const theirDiff = await get<DiffBody>(`/v1/diff?from=${r1}&to=${r4}`, other);
    ok(theirDiff);
    assert.deepEqual([theirDiff.body.holds.appeared, theirDiff.body.holds.ended, theirDiff.body.forceReleases], [[], [], []]);

    // A time instead of a revision resolves to a captured revision at or before it.
    const byTime = await get<StateBody>(`/v1/state?at=${encodeURIComponent(new Date().toISOString())}&prefix=${ns}/`);
    ok(byTime);
    assert.ok(BigInt(byTime.body.at.revision) >= BigInt(r5));

    // A gap recorded inside (r4, r5]: the diff names it; the state inside it is incomplete and marks the holds it hides unknown.
    const gapFrom = (BigInt(r4) + 1n).toString();
    const gapTo = (BigInt(r5) - 1n).toString();
    await store.insert('gaps', [
      { cluster: label, from_revision: gapFrom, to_revision: gapTo, detected_at: Date.now(), reason: 'test: compacted before capture' },
    ]);
    const dg = await get<DiffBody>(`/v1/diff?from=${r1}&to=${r5}&prefix=${ns}/`);
    assert.deepEqual(
      dg.body.gaps.map((g) => g.fromRevision),
      [gapFrom],
    );
    assert.equal(dg.body.complete, false);
    const inside = await get<StateBody>(`/v1/state?at=${gapFrom}&prefix=${ns}/`);
    assert.equal(inside.body.complete, false);
    assert.deepEqual(
      inside.body.gaps.map((g) => [g.fromRevision, g.toRevision]),
      [[gapFrom, gapTo]],
    );
    // Every hold etcd had at r4 is unknown inside the gap (no snapshot after it was written): never a confident answer.
    assert.ok(
      inside.body.holds.every((x) => !e4.holds.some((h) => h.startsWith(`${x.key} `))),
      'no hold from before the gap is asserted inside it',
    );
    assert.deepEqual(
      inside.body.unknown
        .filter((u) => u.kind === 'hold')
        .map((u) => u.key)
        .sort(),
      e4.holds.map((h) => h.split(' ')[0]).sort(),
    );
    assert.ok(inside.body.unknown.every((u) => u.gap?.fromRevision === gapFrom));
  });

  it('a real gap (etcd compacted history while the tailer was stopped): inside it, only what the snapshot proves is held; after it, state equals etcd again', async () => {
    // A private etcd in this file's port block (test services use base+0..31), so compaction touches nobody else.
    const portBase = Number(process.env.LOCKAUDIT_TEST_PORT_BASE ?? 24000);
    const own = await startPrivateEtcd(portBase + 40, portBase + 41);
    const client = createEtcdClient({ name: 'own', endpoints: [own.endpoint] });
    const gapLabel = uniqueId('g');
    const replicas: TailerReplica[] = [];
    const start = (): TailerReplica => {
      const r = new TailerReplica({ cluster: { name: gapLabel, endpoints: [own.endpoint] }, store, log }, { electionTtlSeconds: 3, checkpointIntervalMs: 100 });
      replicas.push(r);
      r.start();
      return r;
    };
    const deps = { store, limits: config.reports, clusters: [gapLabel] };
    try {
      const ns = uniqueId('ns');
      const w = new Workload(client, ns);
      const startRev = BigInt((await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision) + 1n;
      await store.insert('checkpoints', [{ cluster: gapLabel, revision: (startRev - 1n).toString(), leader: 'test' }]);
      const first = start();
      const a = await w.session();
      const b = await w.session();
      await w.grant(a, 'across', { holder: 'h-across' });
      await w.grant(b, 'gone', { holder: 'h-gone' });
      const mid = BigInt(await w.clock());
      await waitFor('first checkpoint', async () => ((await readCheckpoint(store, gapLabel)) >= mid ? true : undefined), 60_000, 100);
      await first.close();
      // While stopped: 'gone' ends, 'inside' is granted, then 'late'; etcd compacts all of it away.
      await w.release(b, 'gone');
      const inside = await w.grant(await w.session(), 'inside', { holder: 'h-inside' });
      await w.grant(await w.session(), 'late', { holder: 'h-late' });
      const compactAt = BigInt(await w.clock());
      await client.kv.compact({ revision: compactAt.toString(), physical: true });
      start();
      await waitFor('checkpoint past the gap', async () => ((await readCheckpoint(store, gapLabel)) >= compactAt ? true : undefined), 60_000, 100);

      const atInside = await stateAt(deps, { at: inside, prefix: `${ns}/` });
      assert.equal(atInside.complete, false);
      assert.equal(atInside.gaps.length, 1);
      assert.deepEqual(
        atInside.holds.map((x) => [x.key, x.holder, x.startKnown]),
        [
          [`${ns}/across`, 'h-across', true],
          [`${ns}/inside`, 'h-inside', false],
        ],
      );
      assert.deepEqual(atInside.unknown.map((u) => [u.key, u.lastKnownHolder]).sort(), [
        [`${ns}/gone`, 'h-gone'],
        [`${ns}/late`, null],
      ]);

      // After the gap, at a revision etcd can still read: exactly etcd's holds ('gone' ended inside the gap).
      await w.release(a, 'across');
      const after = await w.clock();
      await waitFor('checkpoint after', async () => ((await readCheckpoint(store, gapLabel)) >= BigInt(after) ? true : undefined), 60_000, 100);
      for (const rev of [compactAt.toString(), after]) {
        const got = await stateAt(deps, { at: rev, prefix: `${ns}/` });
        const res = await client.kv.range({ key: Buffer.from(`/l/${ns}/`), range_end: Buffer.from(`/l/${ns}0`), revision: rev });
        const expected = res.kvs.map((kv) => `${kv.key.toString().slice(3)} ${kv.mod_revision}`).sort();
        assert.deepEqual(got.holds.map((x) => `${x.key} ${x.grantRevision}`).sort(), expected, `holds at ${rev}`);
        assert.equal(got.complete, true);
      }
    } finally {
      for (const r of replicas) await r.close();
      client.close();
      await own.stop();
    }
  });

  it('roles, bad input naming the field, and the read audit', async () => {
    const client = await la.token(uniqueId('cl-'), ['client']);
    assert.equal((await get('/v1/state?at=1', client)).status, 403);
    const auditor = await la.token(uniqueId('aud-'), ['auditor']);
    const bad = await get<Json>('/v1/state?at=yesterday', auditor);
    assert.equal(bad.status, 400);
    assert.match(String(bad.body.message), /at/);
    await get('/v1/diff?from=1&to=1');
    const missing = await get<Json>('/v1/diff?from=1');
    assert.equal(missing.status, 400);
    assert.match(String(missing.body.message), /to/);
    // Times are read by core/instant.ts alone: a day the month lacks, or a year past 2299, is refused — not read as 2 March or served as "now".
    for (const at of ['2099-02-30T00:00:00Z', '2301-01-01T00:00:00Z']) {
      const impossible = await get<Json>(`/v1/state?at=${at}&prefix=x/`, auditor);
      assert.equal(impossible.status, 400, `${at}: ${JSON.stringify(impossible.body)}`);
      assert.match(String(impossible.body.message), /querystring\.at: is neither a revision nor an RFC 3339 date-time/);
      const diff = await get<Json>(`/v1/diff?from=1&to=${at}&prefix=x/`, auditor);
      assert.equal(diff.status, 400, `diff to ${at}: ${JSON.stringify(diff.body)}`);
      assert.match(String(diff.body.message), /querystring\.to/);
    }
    const future = await get<Json>('/v1/state?at=999999999999');
    assert.equal(future.status, 400);
    assert.match(String(future.body.message), /querystring\.at: .*checkpoint/);
    const unknownCluster = await get<Json>('/v1/state?at=1&cluster=nope');
    assert.equal(unknownCluster.status, 400);
    assert.match(String(unknownCluster.body.message), /querystring\.cluster/);
    const doc = (await api.inject({ method: 'GET', url: '/docs/json' })).json() as {
      paths: Record<string, { get?: { summary?: string; responses: Record<string, unknown> } }>;
    };
    for (const p of ['/v1/state', '/v1/diff']) {
      const op = doc.paths[p]?.get;
      assert.ok(op?.summary, `${p} documented`);
      assert.match(JSON.stringify(op.responses['200']), /"example/, `${p}: success response with an example`);
      assert.ok(op.responses['400'] && op.responses['401'] && op.responses['403'], `${p}: error responses`);
    }
    const reads = await store.rows<{ format: string }>("SELECT format FROM {db:Identifier}.grant_history_reads WHERE format IN ('state', 'diff')");
    assert.ok(reads.some((r) => r.format === 'state') && reads.some((r) => r.format === 'diff'), 'state and diff reads are recorded');
  });
});
