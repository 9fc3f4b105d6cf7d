// Two-person requests against an insider with etcd write access (real etcd, private keyspace root): a pending
// force-release edited to name another hold, a request written by hand in a colleague's name, an approval of a
// request other than the one shown, and a rejected request put back — each refused, nothing released, and
// alarmed where someone wrote around the API. A genuine approval's force record carries the request's hash.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { decodeValue, ForceRecordSchema } from '../../core/keyspace.js';
import { originSecret } from '../../core/originSecret.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { hasValidForceProof } from '../../core/proof.js';
import { twoPersonLog } from '../../reports/twoPersonLog/index.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { createLogger } from '../../core/logger.js';
import { alertMetrics } from '../../exporters/alerts/alertMetrics.js';
import { TwoPersonDelivery } from '../../exporters/alerts/twoPersonDelivery.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { fencedClass, lockApp, type LockApp } from '../support/lockApp.js';

type Json = Record<string, unknown>;

describe('two-person requests: proven, approved by their hash', { timeout: 60_000 }, () => {
  const config = testConfig();
  const cluster = config.etcd.clusters[0]!;
  const root = `/${uniqueId('root')}`;
  const ns = uniqueId('ns');
  const className = `${ns}-fenced`;
  let la: LockApp;
  let closeStore: () => Promise<void>;
  let store: AuditStore;
  let etcd: Etcd3;
  let alice: string;
  let bob: string;
  let client: string;
  let session: string;

  const acquire = async (key: string): Promise<Json> => {
    const r = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/${key}`, session, class: className });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  const held = async (key: string): Promise<boolean> =>
    (await la.call<Json>('GET', `/v1/locks?key=${encodeURIComponent(`${ns}/${key}`)}`, client)).body.holder !== undefined;
  const requestKey = (id: string): string => `${root}/lockaudit/force-request/${id}`;
  const foreignAlarms = (): string[] =>
    la.ctx.health
      .alarms()
      .filter((a) => a.code === 'LOCKAUDIT_ALARM_FOREIGN_WRITE')
      .map((a) => a.message);

  before(async () => {
    etcd = new Etcd3({ hosts: cluster.endpoints });
    const temp = await tempStore();
    closeStore = temp.close;
    store = temp.store;
    la = await lockApp(config, temp.store, { root });
    const admin = await la.token(uniqueId('admin-'), ['admin']);
    alice = await la.token(uniqueId('op-alice-'), ['lock-operator']);
    bob = await la.token(uniqueId('op-bob-'), ['lock-operator']);
    client = await la.token(`spiffe://test/${ns}/w`, ['client']);
    assert.equal((await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns))).status, 200);
    session = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
  });
  after(async () => {
    await la.close();
    await etcd.delete().prefix(`${root}/`);
    etcd.close();
    await closeStore();
  });

  it('a request edited in etcd to name another hold is refused (409) and alarmed; neither hold is released', async () => {
    await acquire('a');
    const b = await acquire('b');
    const req = await la.call<Json>('POST', '/v1/force-releases', alice, { key: `${ns}/a`, reason: 'wedged holder of a' });
    assert.equal(req.status, 202, JSON.stringify(req.body));
    const id = req.body.id as string;
    // The insider points the pending request at hold b, keeping everything else (its proof too).
    const raw = JSON.parse((await etcd.get(requestKey(id)).string()) as string) as Json;
    const { kv: bKv } = await la.service.parts.etcd.get(`${root}/l/${ns}/b`);
    const edited = { ...raw, key: `${ns}/b`, holdCreateRevision: bKv?.createRevision, holdModRevision: bKv?.modRevision };
    const lease = (await etcd.get(requestKey(id)).exec()).kvs[0]?.lease;
    await etcd.put(requestKey(id)).value(JSON.stringify(edited)).lease(String(lease)).exec();

    const shown = await la.call<Json>('GET', `/v1/force-releases/${id}`, bob);
    assert.equal(shown.status, 200);
    assert.equal(shown.body.key, `${ns}/b`, 'what etcd now says');
    assert.equal(shown.body.proven, false, 'and that the API did not write it');
    assert.notEqual(shown.body.requestHash, req.body.requestHash);
    for (const hash of [req.body.requestHash, shown.body.requestHash]) {
      const approved = await la.call<Json>('POST', `/v1/force-releases/${id}/approve`, bob, { requestHash: hash });
      assert.equal(approved.status, 409, JSON.stringify(approved.body));
      assert.equal(approved.body.error, 'LOCKAUDIT_ERR_REQUEST_UNPROVEN');
    }
    assert.ok(await held('a'), 'hold a stays');
    assert.ok(await held('b'), 'hold b stays');
    assert.equal(b.revision, (await la.call<Json>('GET', `/v1/locks?key=${encodeURIComponent(`${ns}/b`)}`, client)).body.revision);
    assert.ok(
      foreignAlarms().some((m) => m.includes('force-release request') && m.includes(requestKey(id))),
      JSON.stringify(foreignAlarms()),
    );
    const list = await la.call<{ requests: Json[] }>('GET', '/v1/force-releases', bob);
    assert.equal(list.body.requests.find((r) => r.id === id)?.proven, false);
    const rejected = await la.call<Json>('POST', `/v1/force-releases/${id}/reject`, bob, { reason: 'edited by hand' });
    assert.equal(rejected.body.status, 'rejected');
  });

  it("a request written by hand in a colleague's name cannot be approved by its writer", async () => {
    const genuine = await la.call<Json>('POST', '/v1/force-releases', alice, { key: `${ns}/a`, reason: 'a template to copy' });
    const template = JSON.parse((await etcd.get(requestKey(genuine.body.id as string)).string()) as string) as Json;
    const forgedId = '00000000-0000-4000-8000-000000000001';
    // Bob writes a request "from alice" (with her proof copied from another request, or none) and approves it himself.
    for (const mac of [template.mac, undefined]) {
      const lease = await etcd.lease(60).grant();
      await etcd
        .put(requestKey(forgedId))
        .value(JSON.stringify({ ...template, id: forgedId, requester: 'someone-else', ...(mac ? { mac } : { mac: undefined }) }))
        .lease(lease)
        .exec();
      const shown = await la.call<Json>('GET', `/v1/force-releases/${forgedId}`, bob);
      const approved = await la.call<Json>('POST', `/v1/force-releases/${forgedId}/approve`, bob, { requestHash: shown.body.requestHash });
      assert.equal(approved.status, 409, JSON.stringify(approved.body));
      assert.equal(approved.body.error, 'LOCKAUDIT_ERR_REQUEST_UNPROVEN');
    }
    assert.ok(await held('a'));
    await la.call<Json>('POST', `/v1/force-releases/${forgedId}/reject`, alice, { reason: 'forged' });
    const cancelled = await la.call<Json>('POST', `/v1/force-releases/${genuine.body.id as string}/reject`, alice, { reason: 'not needed' });
    assert.equal(cancelled.body.status, 'cancelled', 'its requester cancels');
  });

  it('an approval must name the hash of the request shown; a rejected request put back proves nothing', async () => {
    const req = await la.call<Json>('POST', '/v1/force-releases', alice, { key: `${ns}/a`, reason: 'wedged again' });
    const id = req.body.id as string;
    const wrong = await la.call<Json>('POST', `/v1/force-releases/${id}/approve`, bob, { requestHash: 'f'.repeat(64) });
    assert.equal(wrong.status, 409);
    assert.equal(wrong.body.error, 'LOCKAUDIT_ERR_REQUEST_CHANGED');
    const missing = await la.call<Json>('POST', `/v1/force-releases/${id}/approve`, bob, {});
    assert.equal(missing.status, 400, 'requestHash is required');
    assert.match(JSON.stringify(missing.body), /requestHash/);

    const saved = await etcd.get(requestKey(id)).exec();
    const rejected = await la.call<Json>('POST', `/v1/force-releases/${id}/reject`, bob, { reason: 'not convinced' });
    assert.equal(rejected.status, 200, JSON.stringify(rejected.body));
    assert.equal(rejected.body.status, 'rejected');
    assert.equal(await etcd.get(requestKey(id)).string(), null, 'gone');
    // Put back as it was: its lease was revoked, so on a new lease (or none) its proof no longer holds.
    const lease = await etcd.lease(60).grant();
    await etcd.put(requestKey(id)).value(saved.kvs[0]!.value).lease(lease).exec();
    const replayed = await la.call<Json>('POST', `/v1/force-releases/${id}/approve`, bob, { requestHash: req.body.requestHash });
    assert.equal(replayed.status, 409, JSON.stringify(replayed.body));
    assert.equal(replayed.body.error, 'LOCKAUDIT_ERR_REQUEST_UNPROVEN');
    assert.ok(await held('a'));
    await etcd.delete().key(requestKey(id));
  });

  it('a rejected request put back on a lease re-granted with the same id proves nothing (its key was made again)', async () => {
    const req = await la.call<Json>('POST', '/v1/force-releases', alice, { key: `${ns}/a`, reason: 'to be rejected, then replayed' });
    const id = req.body.id as string;
    const saved = (await etcd.get(requestKey(id)).exec()).kvs[0]!;
    assert.equal((await la.call<Json>('POST', `/v1/force-releases/${id}/reject`, bob, { reason: 'not convinced' })).body.status, 'rejected');
    // etcd lets any client grant a lease of an id of its choosing once the old one is gone.
    const granted = await fetch(`${cluster.endpoints[0]}/v3/lease/grant`, { method: 'POST', body: JSON.stringify({ TTL: 3600, ID: String(saved.lease) }) });
    assert.equal(granted.status, 200, await granted.text());
    await etcd.put(requestKey(id)).value(saved.value).lease(String(saved.lease)).exec();
    const shown = await la.call<Json>('GET', `/v1/force-releases/${id}`, bob);
    assert.equal(shown.body.proven, false);
    const approved = await la.call<Json>('POST', `/v1/force-releases/${id}/approve`, bob, { requestHash: req.body.requestHash });
    assert.equal(approved.body.error, 'LOCKAUDIT_ERR_REQUEST_UNPROVEN', JSON.stringify(approved.body));
    assert.ok(await held('a'));
    await etcd.delete().key(requestKey(id));
    await fetch(`${cluster.endpoints[0]}/v3/lease/revoke`, { method: 'POST', body: JSON.stringify({ ID: String(saved.lease) }) });
  });

  it("rejecting a hand-written request never revokes the lease it rides on (it may be a session's)", async () => {
    const victim = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
    const v = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/victim`, session: victim, class: className });
    assert.equal(v.status, 200, JSON.stringify(v.body));
    const id = '11111111-2222-4333-8444-555555555555';
    await etcd.put(requestKey(id)).value('junk').lease(victim).exec();
    const rejected = await la.call<Json>('POST', `/v1/force-releases/${id}/reject`, bob, { reason: 'cleaning up junk' });
    assert.equal(rejected.status, 200, JSON.stringify(rejected.body));
    assert.equal(rejected.body.proven, false);
    assert.ok(await held('victim'), 'the session and its hold live on');
  });

  it('a request value no person could be shown (a time beyond any date) is listed as unreadable, never a 500', async () => {
    const id = '22222222-3333-4444-8555-666666666666';
    const template = {
      id,
      key: `${ns}/a`,
      reason: 'r',
      revokeSession: false,
      requester: 'x',
      requestedAt: 1e20,
      holdCreateRevision: '1',
      holdModRevision: '1',
      holder: 'h',
      session: '1',
      epoch: 1,
      at: 1,
      class: 'c',
      enforcement: 'fenced',
    };
    await etcd.put(requestKey(id)).value(JSON.stringify(template));
    const list = await la.call<{ requests: Json[]; unreadable: number }>('GET', '/v1/force-releases', bob);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.ok(list.body.unreadable >= 1);
    const one = await la.call<Json>('GET', `/v1/force-releases/${id}`, bob);
    assert.equal(one.status, 409, JSON.stringify(one.body));
    await etcd.delete().key(requestKey(id));
  });

  it('a genuine approval names the hash shown, and its force record carries and proves it', async () => {
    const req = await la.call<Json>('POST', '/v1/force-releases', alice, { key: `${ns}/a`, reason: 'wedged for real' });
    const shown = await la.call<Json>('GET', `/v1/force-releases/${req.body.id as string}`, bob);
    assert.equal(shown.body.proven, true);
    assert.equal(shown.body.requestHash, req.body.requestHash);
    const ok = await la.call<Json>('POST', `/v1/force-releases/${req.body.id as string}/approve`, bob, { requestHash: shown.body.requestHash });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.requestHash, req.body.requestHash);
    assert.equal(await held('a'), false);
    const record = decodeValue(ForceRecordSchema, (await etcd.get(`${root}/sys/force/${req.body.id as string}`).string()) ?? '');
    assert.ok(record, 'the force record');
    assert.equal(record.requestHash, req.body.requestHash);
    assert.ok(hasValidForceProof(originSecret(config), record));
    assert.ok(!hasValidForceProof(originSecret(config), { ...record, requestHash: 'e'.repeat(64) }), 'the hash is under the proof');
  });

  it('an epoch-advance request edited or written by hand is refused the same way', async () => {
    const req = await la.call<Json>('POST', '/v1/epoch/advance', alice, { reason: 'test advance' });
    assert.equal(req.status, 202, JSON.stringify(req.body));
    const key = `${root}/lockaudit/epoch-request/${req.body.id as string}`;
    const raw = (await etcd.get(key).exec()).kvs[0]!;
    // The insider makes the request someone else's, so that alice can approve it herself.
    await etcd
      .put(key)
      .value(JSON.stringify({ ...(JSON.parse(raw.value.toString()) as Json), requester: 'carol' }))
      .lease(String(raw.lease))
      .exec();
    const shown = await la.call<Json>('GET', `/v1/epoch/advance/${req.body.id as string}`, alice);
    assert.equal(shown.body.proven, false);
    const approved = await la.call<Json>('POST', `/v1/epoch/advance/${req.body.id as string}/approve`, alice, { requestHash: shown.body.requestHash });
    assert.equal(approved.status, 409, JSON.stringify(approved.body));
    assert.equal(approved.body.error, 'LOCKAUDIT_ERR_REQUEST_UNPROVEN');
    assert.equal((await la.call<Json>('GET', '/v1/epoch', client)).body.epoch, 1, 'no advance');
  });

  it("the audit log holds each request's life: requested, refused (and why), rejected, cancelled, approved", async () => {
    const force = await twoPersonLog({ store, limits: config.reports }, { kind: 'force-release', limit: 1000 }, Date.now() + 1_000);
    const actions = new Set(force.acts.map((a) => a.action));
    for (const a of ['requested', 'refused-unproven', 'refused-changed', 'rejected', 'cancelled', 'approved'])
      assert.ok(actions.has(a), `${a} recorded: ${[...actions].join(', ')}`);
    const approved = force.acts.find((a) => a.action === 'approved');
    assert.ok(approved);
    const requested = force.acts.find((a) => a.action === 'requested' && a.requestId === approved.requestId);
    assert.equal(requested?.requestHash, approved.requestHash, 'the hash requested is the hash approved');
    assert.notEqual(approved.actor, requested?.actor, 'two people');
    assert.ok(BigInt(approved.revision) > BigInt(requested?.revision ?? '0'));
    const epoch = await twoPersonLog({ store, limits: config.reports }, { kind: 'epoch-advance', limit: 1000 }, Date.now() + 1_000);
    assert.deepEqual([...new Set(epoch.acts.map((a) => a.action))].sort(), ['refused-unproven', 'requested']);
  });

  it('every act reaches the alert sinks: a two-person rule gets each one, a two-person-refused rule only the refusals; delivered once', async () => {
    const received: Array<{ sink: string; ev: Json }> = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        for (const line of Buffer.concat(chunks).toString('utf8').trimEnd().split('\n'))
          received.push({ sink: String(req.url).slice(1), ev: JSON.parse(line) as Json });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = (name: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/${name}`;
    const sink = (name: string, kinds: Array<'two-person' | 'two-person-refused'>) => ({
      name,
      url: url(name),
      secret: 'test-secret-0123456789',
      batchSize: 3,
      pollIntervalMs: 20,
      rules: [{ kinds }],
    });
    const deps = { store, log: createLogger('silent'), metrics: alertMetrics(new Registry()), cluster: cluster.name, tokenKey: randomBytes(32) };
    const all = new TwoPersonDelivery({ ...deps, sink: sink(uniqueId('all-'), ['two-person']) });
    const refusals = new TwoPersonDelivery({ ...deps, sink: sink(uniqueId('refused-'), ['two-person-refused']) });
    const signal = new AbortController().signal;
    for (const d of [all, refusals]) while (await d.step(signal));
    const log = await twoPersonLog({ store, limits: config.reports }, { limit: 1000 }, Date.now() + 1_000);
    const of = (prefix: string) => received.filter((r) => r.sink.startsWith(prefix)).map((r) => r.ev);
    const unmapped = (e: Json) => e.unmapped as Json;
    assert.equal(of('all-').length, log.acts.length, 'one event per recorded act');
    assert.deepEqual(
      of('all-')
        .map((e) => unmapped(e).action)
        .sort(),
      log.acts.map((a) => a.action).sort(),
    );
    const refused = of('refused-');
    assert.ok(refused.length > 0);
    assert.deepEqual(
      refused.map((e) => unmapped(e).action).sort(),
      log.acts
        .filter((a) => a.action.startsWith('refused-'))
        .map((a) => a.action)
        .sort(),
    );
    for (const e of refused) {
      assert.equal(unmapped(e).kind, 'two-person-refused');
      assert.equal(e.status, 'Failure');
      assert.equal(e.severity, 'High');
    }
    // The approval names both people: the approver as the OCSF actor, the requester beside it, with the hash approved.
    const approved = log.acts.find((a) => a.action === 'approved' && a.kind === 'force-release');
    const event = of('all-').find((e) => unmapped(e).action === 'approved' && unmapped(e).requestId === approved?.requestId);
    assert.ok(approved && event);
    assert.equal(((event.actor as Json).user as Json).name, approved.actor);
    assert.equal((event.api as Json).operation, 'POST /v1/force-releases/:id/approve');
    assert.equal(unmapped(event).requester, approved.requester);
    assert.equal(unmapped(event).requestHash, approved.requestHash);
    // Delivered acts are recorded: a fresh loop (a restart) sends nothing again.
    const before = received.length;
    assert.equal(await new TwoPersonDelivery({ ...deps, sink: sink(String(received[0]?.sink), ['two-person']) }).step(signal), false);
    assert.equal(received.length, before);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  it('pending requests are limited in all and per lock (429 naming the setting); a decided one frees its room', async () => {
    const limitedRoot = `/${uniqueId('root')}`;
    // Through the settings, as an operator sets them (roles/lockEngine.ts hands them to the lock service).
    const limited = await lockApp(testConfig({ LOCKAUDIT_MAX_PENDING_REQUESTS: '3', LOCKAUDIT_MAX_PENDING_REQUESTS_PER_KEY: '2' }), store, {
      root: limitedRoot,
    });
    try {
      const admin = await limited.token(uniqueId('admin-'), ['admin']);
      const op = await limited.token(uniqueId('op-carol-'), ['lock-operator']);
      const other = await limited.token(uniqueId('op-dave-'), ['lock-operator']);
      const holder = await limited.token(`spiffe://test/${ns}/w`, ['client']);
      assert.equal((await limited.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns))).status, 200);
      const sess = (await limited.call<{ id: string }>('POST', '/v1/sessions', holder, { ttlSeconds: 15 })).body.id;
      for (const k of ['x', 'y'])
        assert.equal((await limited.call('POST', '/v1/locks/acquire', holder, { key: `${ns}/${k}`, session: sess, class: className })).status, 200);
      const request = (k: string) => limited.call<Json>('POST', '/v1/force-releases', op, { key: `${ns}/${k}`, reason: `wedged ${k}` });
      const first = await request('x');
      assert.equal(first.status, 202, JSON.stringify(first.body));
      assert.equal((await request('x')).status, 202);
      const perKey = await request('x');
      assert.equal(perKey.status, 429, JSON.stringify(perKey.body));
      assert.equal(perKey.body.error, 'LOCKAUDIT_ERR_LIMIT_REQUESTS');
      assert.match(String(perKey.body.message), /2 force-release requests for this lock are pending, the most LOCKAUDIT_MAX_PENDING_REQUESTS_PER_KEY \(2\)/);
      assert.equal((await request('y')).status, 202, 'another lock has room');
      const all = await request('y');
      assert.equal(all.status, 429);
      assert.match(String(all.body.message), /3 force-release requests are pending, the most LOCKAUDIT_MAX_PENDING_REQUESTS \(3\) allows/);
      // A decided request frees its room.
      const rejected = await limited.call<Json>('POST', `/v1/force-releases/${first.body.id as string}/reject`, other, { reason: 'not needed' });
      assert.equal(rejected.body.status, 'rejected');
      assert.equal((await request('y')).status, 202, 'room again once one is decided');
    } finally {
      await limited.close();
      await etcd.delete().prefix(`${limitedRoot}/`);
    }
  });
});
