// The embedded lock API against the suite's real etcd: sessions, acquire,
// release, inspect, mutual exclusion under contention, the log shape of each
// way a hold ends, force-release, class rules, durable queues, metrics and
// bad input on every route. Each test uses its own namespace.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Etcd3 } from 'etcd3';
import { decodeValue, ForceRecordSchema, HoldValueSchema, MarkValueSchema } from '../../core/keyspace.js';
import { splitToken } from '../../core/token.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { advisoryClass, eventsAt, fencedClass, lockApp, type LockApp } from '../support/lockApp.js';

type Json = Record<string, unknown>;

describe('lock API', { timeout: 120_000 }, () => {
  const config = testConfig();
  const cluster = config.etcd.clusters[0]!;
  let la: LockApp;
  let closeStore: () => Promise<void>;
  let admin: string;
  let op1: string;
  let op2: string;
  let etcd: Etcd3;

  before(async () => {
    const temp = await tempStore();
    closeStore = temp.close;
    la = await lockApp(config, temp.store);
    admin = await la.token(uniqueId('admin-'), ['admin']);
    op1 = await la.token(uniqueId('op-alice-'), ['lock-operator']);
    op2 = await la.token(uniqueId('op-bob-'), ['lock-operator']);
    etcd = new Etcd3({ hosts: cluster.endpoints });
  });
  after(async () => {
    etcd.close();
    await la.close();
    await closeStore();
  });

  /** A namespace with a fenced class (and optionally more), and a client with a session. */
  async function setup(options: { ttlSeconds?: number; extra?: 'advisory' | 'durable' } = {}) {
    const ns = uniqueId('ns');
    const className = `${ns}-fenced`;
    const put = await la.call(
      'PUT',
      `/v1/classes/${className}`,
      admin,
      fencedClass(className, ns, { ttlSeconds: options.ttlSeconds ?? 15, fairness: options.extra === 'durable' ? 'durable' : 'memory' }),
    );
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const client = await la.token(`spiffe://test/${ns}/worker`, ['client']);
    const session = await la.call<{ id: string; ttlSeconds: number }>('POST', '/v1/sessions', client, { ttlSeconds: options.ttlSeconds ?? 15 });
    assert.equal(session.status, 201, JSON.stringify(session.body));
    return { ns, className, client, session: session.body.id, key: `${ns}/acct-42` };
  }

  it('sessions: one lease per (identity, TTL), keepalive, and close', async () => {
    const { client, session } = await setup();
    const again = await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 });
    assert.equal(again.status, 200);
    assert.equal(again.body.id, session, 'the same identity and TTL reuse the lease');
    const other = await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 30 });
    assert.equal(other.status, 201);
    assert.notEqual(other.body.id, session);
    assert.match(session, /^[1-9]\d*$/);
    const ka = await la.call('POST', `/v1/sessions/${session}/keepalive`, client);
    assert.equal(ka.status, 200, JSON.stringify(ka.body));
    // Someone else's session looks exactly like a missing one.
    const stranger = await la.token(uniqueId('stranger-'), ['client']);
    const foreign = await la.call<Json>('POST', `/v1/sessions/${session}/keepalive`, stranger);
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.error, 'LOCKAUDIT_ERR_SESSION_NOT_FOUND');
    const closed = await la.call('DELETE', `/v1/sessions/${other.body.id}`, client);
    assert.equal(closed.status, 200);
    const gone = await la.call('POST', `/v1/sessions/${other.body.id}/keepalive`, client);
    assert.equal(gone.status, 404);
  });

  it('acquire, inspect (token only to the holder), release; the token is epoch × 2^48 + the grant revision', async () => {
    const { client, session, key, className } = await setup();
    const got = await la.call<Json>('POST', '/v1/locks/acquire', client, { key, session, class: className });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    assert.equal(typeof got.body.token, 'string');
    assert.equal(got.body.enforcement, 'fenced');
    const token = BigInt(got.body.token as string);
    assert.equal(splitToken(token).revision, BigInt(got.body.revision as string));
    assert.equal(splitToken(token).epoch, BigInt(got.body.epoch as number));

    const mine = await la.call<Json>('GET', `/v1/locks?key=${encodeURIComponent(key)}`, client);
    assert.equal(mine.status, 200);
    assert.equal(mine.body.held, true);
    assert.equal(mine.body.token, got.body.token);
    assert.ok(mine.body.since);
    const other = await la.token(uniqueId('other-'), ['client']);
    const theirs = await la.call<Json>('GET', `/v1/locks?key=${encodeURIComponent(key)}`, other);
    assert.equal(theirs.body.held, true);
    assert.equal(theirs.body.holder, mine.body.holder);
    assert.equal(theirs.body.token, undefined, 'the token goes only to its holder');
    assert.equal(theirs.body.session, undefined);

    // Held: a second caller gets 409 after waitMs.
    const otherSession = await la.call<{ id: string }>('POST', '/v1/sessions', other, { ttlSeconds: 15 });
    const t0 = Date.now();
    const refused = await la.call<Json>('POST', '/v1/locks/acquire', other, { key, session: otherSession.body.id, class: className, waitMs: 300 });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error, 'LOCKAUDIT_ERR_LOCK_NOT_GRANTED');
    assert.ok(Date.now() - t0 >= 280);
    // The same session asking again is told so, not queued behind itself.
    const twice = await la.call<Json>('POST', '/v1/locks/acquire', client, { key, session, class: className });
    assert.equal(twice.body.error, 'LOCKAUDIT_ERR_LOCK_ALREADY_HELD');

    // Only the holder's token releases.
    const wrong = await la.call<Json>('POST', '/v1/locks/release', client, { key, session, token: (token + 1n).toString() });
    assert.equal(wrong.status, 409);
    assert.equal(wrong.body.error, 'LOCKAUDIT_ERR_LOCK_NOT_HOLDER');
    const notTheirs = await la.call<Json>('POST', '/v1/locks/release', other, { key, session: otherSession.body.id, token: got.body.token });
    assert.equal(notTheirs.status, 409);
    const ok = await la.call<Json>('POST', '/v1/locks/release', client, { key, session, token: got.body.token });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const free = await la.call<Json>('GET', `/v1/locks?key=${encodeURIComponent(key)}`, client);
    assert.equal(free.body.held, false);
  });

  it('inspect says who wrote the hold: api for a grant, foreign for a hand put, a copy on another lease, or a value that is no hold', async () => {
    const { client, session, key, className, ns } = await setup();
    const view = async (k: string): Promise<Json> => {
      const res = await la.call<Json>('GET', `/v1/locks?key=${encodeURIComponent(k)}`, client);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body;
    };
    const got = await la.call<Json>('POST', '/v1/locks/acquire', client, { key, session, class: className });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    const granted = await view(key);
    assert.equal(granted.held, true);
    assert.equal(granted.origin, 'api');

    // etcdctl put of a well-formed hold on the caller's own live session: held, but not by the API.
    const byHand = `${ns}/by-hand`;
    const rogue = { holder: `spiffe://test/${ns}/worker`, session, class: className, epoch: 0, waitMs: 0, at: Date.now() };
    await etcd.put(`/l/${byHand}`).value(JSON.stringify(rogue)).lease(session).exec();
    const hand = await view(byHand);
    assert.equal(hand.held, true);
    assert.equal(hand.origin, 'foreign', 'a hand-put hold reads foreign');
    assert.equal(hand.holder, rogue.holder);

    // The real grant's signed value copied onto another key and onto no lease: both foreign (the proof binds key and lease).
    const signed = (await etcd.get(`/l/${key}`).string()) as string;
    const copyKey = `${ns}/copy`;
    await etcd.put(`/l/${copyKey}`).value(signed).lease(session).exec();
    assert.equal((await view(copyKey)).origin, 'foreign', 'a signed value on another key');
    const noLease = `${ns}/no-lease`;
    await etcd
      .put(`/l/${noLease}`)
      .value(JSON.stringify({ ...(JSON.parse(signed) as Json), holder: rogue.holder }))
      .exec();
    assert.equal((await view(noLease)).origin, 'foreign', 'a hold on no lease');

    // A value no hold decoder takes still blocks every acquire: held, foreign.
    const junk = `${ns}/junk`;
    await etcd.put(`/l/${junk}`).value('not a hold').exec();
    const junkView = await view(junk);
    assert.equal(junkView.held, true);
    assert.equal(junkView.origin, 'foreign');
    assert.equal((await view(`${ns}/free`)).origin, undefined, 'not held: no origin');
    for (const k of [byHand, copyKey, noLease, junk]) await etcd.delete().key(`/l/${k}`).exec();

    // The OpenAPI document names the field.
    const doc = await la.call<{
      paths: Record<string, { get?: { responses?: Record<string, { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> }> } }>;
    }>('GET', '/docs/json', undefined);
    const origin = JSON.stringify(doc.body.paths['/v1/locks']?.get?.responses?.['200']?.content?.['application/json']?.schema?.properties?.origin ?? null);
    assert.match(origin, /"api".*"foreign"/, `the response schema's origin: ${origin}`);
  });

  it('mutual exclusion: 50 concurrent contenders on one key never overlap, and tokens strictly increase', async () => {
    const ns = uniqueId('ns');
    const className = `${ns}-fenced`;
    assert.equal((await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns))).status, 200);
    const key = `${ns}/hot`;
    const contenders = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const token = await la.token(`spiffe://test/${ns}/c${i}`, ['client']);
        const session = await la.call<{ id: string }>('POST', '/v1/sessions', token, { ttlSeconds: 15 });
        assert.equal(session.status, 201);
        return { token, session: session.body.id };
      }),
    );
    const intervals: Array<{ token: bigint; start: bigint; end: bigint }> = [];
    await Promise.all(
      contenders.map(async (c) => {
        const got = await la.call<Json>('POST', '/v1/locks/acquire', c.token, { key, session: c.session, class: className, waitMs: 60_000 });
        assert.equal(got.status, 200, JSON.stringify(got.body));
        const start = process.hrtime.bigint();
        await sleep(2);
        const end = process.hrtime.bigint();
        intervals.push({ token: BigInt(got.body.token as string), start, end });
        const rel = await la.call('POST', '/v1/locks/release', c.token, { key, session: c.session, token: got.body.token });
        assert.equal(rel.status, 200, JSON.stringify(rel.body));
      }),
    );
    assert.equal(intervals.length, 50);
    const byStart = [...intervals].sort((a, b) => (a.start < b.start ? -1 : 1));
    for (let i = 1; i < byStart.length; i++) {
      const prev = byStart[i - 1]!;
      const cur = byStart[i]!;
      assert.ok(prev.end <= cur.start, `grant ${i} started before grant ${i - 1} ended`);
      assert.ok(cur.token > prev.token, `token ${cur.token} does not exceed ${prev.token}`);
    }
  });

  it('release: the hold is deleted and a release marker written at the same revision', async () => {
    const { client, session, key, className } = await setup();
    const got = await la.call<Json>('POST', '/v1/locks/acquire', client, { key, session, class: className });
    const grantEvents = await eventsAt(cluster, got.body.revision as string);
    const hold = grantEvents.find((e) => e.key === `/l/${key}`);
    assert.ok(hold && hold.type === 'put', 'the grant put the hold');
    const value = decodeValue(HoldValueSchema, hold.value);
    assert.ok(value);
    assert.equal(value.session, session);
    assert.equal(value.class, className);
    assert.equal(hold.lease, session, 'the hold rides on the session lease');
    assert.deepEqual(
      grantEvents.filter((e) => e.key.startsWith('/l/') || e.key.startsWith('/q/') || e.key.startsWith('/sys/')).map((e) => e.key),
      [`/l/${key}`],
    );

    const rel = await la.call<Json>('POST', '/v1/locks/release', client, { key, session, token: got.body.token });
    const events = await eventsAt(cluster, rel.body.revision as string);
    const tailed = events.filter((e) => /^\/(l|q|sys)\//.test(e.key));
    assert.equal(tailed.length, 2, JSON.stringify(tailed));
    assert.ok(tailed.some((e) => e.type === 'delete' && e.key === `/l/${key}`));
    const mark = tailed.find((e) => e.key.startsWith('/sys/mark/'));
    assert.ok(mark && mark.type === 'put');
    const mv = decodeValue(MarkValueSchema, mark.value);
    assert.equal(mv?.kind, 'release');
    assert.equal(mv?.key, key);
    assert.equal(mv?.session, session);
    assert.notEqual(mark.lease, '0', 'markers ride on a short lease');
  });

  it('session close: every hold of the session deleted with one session-close marker at one revision', async () => {
    const { client, session, key, className } = await setup();
    const keys = [key, `${key}-b`, `${key}-c`];
    for (const k of keys) assert.equal((await la.call('POST', '/v1/locks/acquire', client, { key: k, session, class: className })).status, 200);
    const closed = await la.call<Json>('DELETE', `/v1/sessions/${session}`, client);
    assert.equal(closed.status, 200, JSON.stringify(closed.body));
    assert.deepEqual([...(closed.body.released as string[])].sort(), [...keys].sort());
    const tailed = (await eventsAt(cluster, closed.body.revision as string)).filter((e) => /^\/(l|q|sys)\//.test(e.key));
    assert.deepEqual(
      tailed
        .filter((e) => e.key.startsWith('/l/'))
        .map((e) => `${e.type} ${e.key}`)
        .sort(),
      keys.map((k) => `delete /l/${k}`).sort(),
    );
    const marks = tailed.filter((e) => e.key.startsWith('/sys/mark/'));
    assert.equal(marks.length, 1);
    const mv = decodeValue(MarkValueSchema, marks[0]!.value);
    assert.equal(mv?.kind, 'session-close');
    assert.equal(mv?.session, session);
  });

  it('expiry: a lapsed session deletes its hold with no marker at that revision', { timeout: 30_000 }, async () => {
    const { client, session, key, className } = await setup({ ttlSeconds: 5 });
    const got = await la.call<Json>('POST', '/v1/locks/acquire', client, { key, session, class: className });
    assert.equal(got.status, 200, JSON.stringify(got.body));
    const watcher = await etcd
      .watch()
      .key(`/l/${key}`)
      .startRevision(String(BigInt(got.body.revision as string) + 1n))
      .create();
    const deletedAt = await new Promise<string>((resolve) => watcher.on('delete', (kv) => resolve(String(kv.mod_revision))));
    await watcher.cancel();
    const tailed = (await eventsAt(cluster, deletedAt)).filter((e) => /^\/(l|q|sys)\//.test(e.key));
    assert.ok(tailed.some((e) => e.type === 'delete' && e.key === `/l/${key}`));
    assert.equal(tailed.filter((e) => e.key.startsWith('/sys/mark/') || e.key.startsWith('/sys/force/')).length, 0, 'an expiry carries no marker');
    // The former holder presenting its token is fenced out.
    const after = await la.call<Json>('POST', '/v1/locks/release', client, { key, session, token: got.body.token });
    assert.equal(after.status, 409);
    assert.equal(after.body.error, 'LOCKAUDIT_ERR_LOCK_NOT_HOLDER');
    assert.equal((await la.call('POST', `/v1/sessions/${session}/keepalive`, client)).status, 404, 'the session itself has expired');
  });

  it('force-release: a second lock-operator approves; one txn deletes the hold and puts /sys/force/<id>', async () => {
    const { client, session, key, className } = await setup();
    const ns2 = key.split('/')[0]!;
    const adv = `${ns2}-advisory`;
    assert.equal((await la.call('PUT', `/v1/classes/${adv}`, admin, advisoryClass(adv, ns2))).status, 200);
    const got = await la.call<Json>('POST', '/v1/locks/acquire', client, { key, session, class: className });
    assert.equal(got.status, 200);

    const req = await la.call<Json>('POST', '/v1/force-releases', op1, { key, reason: 'holder is wedged (INC-1)' });
    assert.equal(req.status, 202, JSON.stringify(req.body));
    assert.equal(req.body.status, 'pending');
    assert.equal(req.body.enforcement, 'fenced');
    assert.equal(req.body.token, undefined, 'no token in the request view');
    const self = await la.call<Json>('POST', `/v1/force-releases/${req.body.id}/approve`, op1, { requestHash: req.body.requestHash });
    assert.equal(self.status, 403);
    assert.equal(self.body.error, 'LOCKAUDIT_ERR_FORCE_SELF_APPROVAL');
    const clientCannot = await la.call<Json>('POST', `/v1/force-releases/${req.body.id}/approve`, client, { requestHash: req.body.requestHash });
    assert.equal(clientCannot.status, 403);
    const ok = await la.call<Json>('POST', `/v1/force-releases/${req.body.id}/approve`, op2, { requestHash: req.body.requestHash });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const tailed = (await eventsAt(cluster, ok.body.revision as string)).filter((e) => /^\/(l|q|sys)\//.test(e.key));
    assert.equal(tailed.length, 2, JSON.stringify(tailed));
    assert.ok(tailed.some((e) => e.type === 'delete' && e.key === `/l/${key}`));
    const force = tailed.find((e) => e.key === `/sys/force/${req.body.id}`);
    assert.ok(force);
    const record = decodeValue(ForceRecordSchema, force.value);
    assert.ok(record, force.value);
    assert.equal(record.token, got.body.token);
    assert.equal(record.enforcement, 'fenced');
    assert.equal(record.requester !== record.approver, true);
    const lease = await etcd.leaseClient.leaseTimeToLive({ ID: force.lease });
    assert.ok(Number(lease.grantedTTL) === 86_400, 'the force record has a 24 h lease');
    // The former holder is fenced out.
    const late = await la.call<Json>('POST', '/v1/locks/release', client, { key, session, token: got.body.token });
    assert.equal(late.body.error, 'LOCKAUDIT_ERR_LOCK_NOT_HOLDER');

    // Advisory: the request says two writers may follow. A stale request is refused.
    const advKey = `${ns2}/cache-1`;
    const advClient = await la.token(`spiffe://test/${ns2}/adv`, ['client']);
    const advSession = await la.call<{ id: string }>('POST', '/v1/sessions', advClient, { ttlSeconds: 30 });
    const g1 = await la.call<Json>('POST', '/v1/locks/acquire', advClient, { key: advKey, session: advSession.body.id, class: adv });
    assert.equal(g1.status, 200, JSON.stringify(g1.body));
    const advReq = await la.call<Json>('POST', '/v1/force-releases', op1, { key: advKey, reason: 'stuck cache rebuild', revokeSession: true });
    assert.equal(advReq.body.enforcement, 'advisory');
    assert.match(advReq.body.warning as string, /two writers/);
    await la.call('POST', '/v1/locks/release', advClient, { key: advKey, session: advSession.body.id, token: g1.body.token });
    await la.call('POST', '/v1/locks/acquire', advClient, { key: advKey, session: advSession.body.id, class: adv });
    const stale = await la.call<Json>('POST', `/v1/force-releases/${advReq.body.id}/approve`, op2, { requestHash: advReq.body.requestHash });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error, 'LOCKAUDIT_ERR_FORCE_STALE');
    const gone = await la.call<Json>('POST', `/v1/force-releases/${advReq.body.id}/approve`, op2, { requestHash: advReq.body.requestHash });
    assert.equal(gone.status, 404, 'a refused stale request is gone');
    // Nothing held: nothing to force.
    const none = await la.call<Json>('POST', '/v1/force-releases', op1, { key: `${ns2}/nothing`, reason: 'check' });
    assert.equal(none.status, 404);
  });

  it("force-release with revokeSession revokes the holder's whole session", async () => {
    const { client, session, key, className } = await setup();
    await la.call('POST', '/v1/locks/acquire', client, { key, session, class: className });
    const req = await la.call<Json>('POST', '/v1/force-releases', op1, { key, reason: 'leaked holder', revokeSession: true });
    const ok = await la.call<Json>('POST', `/v1/force-releases/${req.body.id}/approve`, op2, { requestHash: req.body.requestHash });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.revokedSession, true);
    assert.equal((await la.call('POST', `/v1/sessions/${session}/keepalive`, client)).status, 404);
  });

  it('classes: every class rule, each broken rule named', async () => {
    const ns = uniqueId('ns');
    const put = (name: string, body: unknown) => la.call<Json>('PUT', `/v1/classes/${name}`, admin, body);
    assert.equal((await put(`${ns}-ok`, fencedClass(`${ns}-ok`, ns))).status, 200);
    const got = await la.call<Json>('GET', `/v1/classes/${ns}-ok`, op1);
    assert.equal(got.status, 200);
    assert.equal((got.body.class as Json).pauseTest, 'PT-2024-001');
    assert.equal((await la.call<Json>('GET', `/v1/classes/${ns}-none`, op1)).status, 404);
    // Defaults: ttlSeconds 15.
    const { ttlSeconds: _omit, ...noTtl } = fencedClass(`${ns}-def`, ns);
    const def = await put(`${ns}-def`, noTtl);
    assert.equal((def.body.class as Json).ttlSeconds, 15);

    const cases: Array<[string, Json, string[]]> = [
      [
        'advisory without owner or waiver',
        { ...advisoryClass('x', ns), riskOwner: undefined, waiverExpires: undefined },
        ['riskOwner: required when enforcement is advisory', 'waiverExpires: required when enforcement is advisory'],
      ],
      ['advisory below the 30 s floor', advisoryClass('x', ns, { ttlSeconds: 20 }), ['ttlSeconds: advisory classes need at least 30']],
      ['open for a correctness class', advisoryClass('x', ns, { purpose: 'correctness' }), ['onQuorumLoss: open is only for efficiency classes']],
      [
        'open for a fenced class',
        fencedClass('x', ns, { purpose: 'efficiency', onQuorumLoss: 'open' }),
        ['onQuorumLoss: open is not allowed for fenced classes'],
      ],
      ['fenced without a pause test', fencedClass('x', ns, { pauseTest: undefined }), ['pauseTest: fenced classes need a reference to a passed pause test']],
      [
        'everything at once',
        { ...fencedClass('x', ns), enforcement: 'advisory', purpose: 'correctness', onQuorumLoss: 'open', ttlSeconds: 10, pauseTest: undefined },
        [
          'onQuorumLoss: open is only for efficiency classes',
          'riskOwner: required when enforcement is advisory',
          'ttlSeconds: advisory classes need at least 30',
          'waiverExpires: required when enforcement is advisory',
        ],
      ],
    ];
    for (const [what, body, rules] of cases) {
      const res = await put(`${ns}-bad`, JSON.parse(JSON.stringify({ ...body, name: undefined })));
      assert.equal(res.status, 400, what);
      assert.equal(res.body.error, 'LOCKAUDIT_ERR_CLASS_INVALID', what);
      assert.deepEqual([...(res.body.details as string[])].sort(), [...rules].sort(), what);
      for (const rule of rules) assert.ok((res.body.message as string).includes(rule), what);
    }
    // Shape rules: TTL range, enums, date format, unknown fields.
    for (const [field, value] of [
      ['ttlSeconds', 4],
      ['ttlSeconds', 301],
      ['enforcement', 'maybe'],
      ['waiverExpires', 'soon'],
      ['tier', 'global'],
      // Bounded: a class value is read back by reports, from what the store keeps whole (64 KiB).
      ['riskOwner', 'o'.repeat(201)],
      ['pauseTest', 't'.repeat(2001)],
    ] as const) {
      const res = await put(`${ns}-bad`, { ...advisoryClass('x', ns), name: undefined, [field]: value });
      assert.equal(res.status, 400, `${field}=${value}`);
      assert.match(res.body.message as string, new RegExp(`body\\.${field}`), `${field}=${value}: ${res.body.message}`);
    }
    const mismatch = await put(`${ns}-a`, { ...fencedClass(`${ns}-b`, ns) });
    assert.equal(mismatch.status, 400);
    assert.match(mismatch.body.message as string, /body\.name/);
    // Only admins write classes.
    assert.equal((await la.call('PUT', `/v1/classes/${ns}-ok`, op1, fencedClass(`${ns}-ok`, ns))).status, 403);
  });

  it('acquire checks the class: its namespace, and the session TTL equals the class TTL', async () => {
    const { client, session, className, ns } = await setup();
    const wrongNs = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `other${ns}/k`, session, class: className });
    assert.equal(wrongNs.status, 400);
    assert.match(wrongNs.body.message as string, /governs namespace/);
    const adv = `${ns}-adv`;
    await la.call('PUT', `/v1/classes/${adv}`, admin, advisoryClass(adv, ns));
    const ttl = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/k`, session, class: adv });
    assert.equal(ttl.status, 400);
    assert.match(ttl.body.message as string, /ttlSeconds 30/);
    const missing = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/k`, session, class: `${ns}-nope` });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error, 'LOCKAUDIT_ERR_CLASS_NOT_FOUND');
  });

  it('durable fairness: waiters queue under /q/<lock>/<lease> and are granted in arrival order', async () => {
    const { client, session, key, className, ns } = await setup({ extra: 'durable' });
    const first = await la.call<Json>('POST', '/v1/locks/acquire', client, { key, session, class: className });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const waiters = await Promise.all(
      [0, 1, 2].map(async (i) => {
        const token = await la.token(`spiffe://test/${ns}/w${i}`, ['client']);
        const s = await la.call<{ id: string }>('POST', '/v1/sessions', token, { ttlSeconds: 15 });
        return { token, session: s.body.id };
      }),
    );
    const order: number[] = [];
    const pending = waiters.map(async (w, i) => {
      await sleep(i * 150); // arrival order 0, 1, 2
      const got = await la.call<Json>('POST', '/v1/locks/acquire', w.token, { key, session: w.session, class: className, waitMs: 20_000 });
      assert.equal(got.status, 200, JSON.stringify(got.body));
      order.push(i);
      await sleep(20);
      await la.call('POST', '/v1/locks/release', w.token, { key, session: w.session, token: got.body.token });
    });
    await sleep(700);
    const queued = await etcd.getAll().prefix(`/q/${key}/`).exec();
    assert.deepEqual(queued.kvs.map((kv) => kv.key.toString()).sort(), waiters.map((w) => `/q/${key}/${w.session}`).sort());
    await la.call('POST', '/v1/locks/release', client, { key, session, token: first.body.token });
    await Promise.all(pending);
    assert.deepEqual(order, [0, 1, 2]);
    assert.equal((await etcd.getAll().prefix(`/q/${key}/`).keys()).length, 0, 'each waiter left the queue when granted');
  });

  it('metrics: grants, waits, holds, refusals by reason, fenced-out — labelled by namespace and class only', async () => {
    const { client, session, key, className, ns } = await setup();
    const got = await la.call<Json>('POST', '/v1/locks/acquire', client, { key, session, class: className });
    await la.call('POST', '/v1/locks/release', client, { key, session, token: got.body.token });
    await la.call('POST', '/v1/locks/release', client, { key, session, token: got.body.token });
    const res = await la.app.inject({ method: 'GET', url: '/metrics' });
    const text = res.body;
    assert.match(text, new RegExp(`lockaudit_lock_grants_total\\{namespace="${ns}",class="${className}"\\} 1`));
    assert.match(text, new RegExp(`lockaudit_lock_wait_seconds_count\\{namespace="${ns}",class="${className}"\\} 1`));
    assert.match(text, new RegExp(`lockaudit_lock_hold_seconds_count\\{namespace="${ns}",class="${className}"\\} 1`));
    assert.match(text, /lockaudit_lock_fenced_out_total\{/);
    assert.match(text, /lockaudit_lock_refusals_total\{namespace="[^"]+",class="[^"]+",reason="timeout"\}/);
    assert.ok(!text.includes(key), 'no key in any label');
    assert.ok(!text.includes(got.body.token as string), 'no token in metrics');
  });

  it('every route answers bad input with 400 naming the field, never a 500', async () => {
    const { client, session, key, className } = await setup();
    const long = `${key.split('/')[0]}/${'x'.repeat(120)}/${'y'.repeat(120)}/${'z'.repeat(120)}/${'w'.repeat(120)}/${'v'.repeat(120)}`;
    const cases: Array<{ token: string; method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string; body?: unknown; field: string }> = [
      { token: client, method: 'POST', url: '/v1/sessions', body: { ttlSeconds: '15' }, field: 'body.ttlSeconds' },
      { token: client, method: 'POST', url: '/v1/sessions', body: { ttlSeconds: 4 }, field: 'body.ttlSeconds' },
      { token: client, method: 'POST', url: '/v1/sessions', body: { ttl: 15 }, field: 'body.ttl' },
      { token: client, method: 'POST', url: '/v1/sessions/abc/keepalive', field: 'params.id' },
      { token: client, method: 'DELETE', url: '/v1/sessions/-1', field: 'params.id' },
      { token: client, method: 'POST', url: '/v1/locks/acquire', body: { session, class: className }, field: 'body.key' },
      { token: client, method: 'POST', url: '/v1/locks/acquire', body: { key, class: className }, field: 'body.session' },
      { token: client, method: 'POST', url: '/v1/locks/acquire', body: { key, session, class: className, waitMs: '10' }, field: 'body.waitMs' },
      { token: client, method: 'POST', url: '/v1/locks/acquire', body: { key, session: Number(session), class: className }, field: 'body.session' },
      { token: client, method: 'POST', url: '/v1/locks/acquire', body: { key: long, session, class: className }, field: 'body.key' },
      { token: client, method: 'POST', url: '/v1/locks/acquire', body: { key: 'no-namespace', session, class: className }, field: 'body.key' },
      { token: client, method: 'POST', url: '/v1/locks/acquire', body: { key, session, class: className, holder: 'me' }, field: 'body.holder' },
      { token: client, method: 'POST', url: '/v1/locks/release', body: { key, session }, field: 'body.token' },
      { token: client, method: 'POST', url: '/v1/locks/release', body: { key, session, token: 12 }, field: 'body.token' },
      { token: client, method: 'POST', url: '/v1/locks/release', body: { key, session, token: '99999999999999999999999' }, field: 'body.token' },
      { token: client, method: 'GET', url: '/v1/locks', field: 'querystring.key' },
      { token: client, method: 'GET', url: `/v1/locks?key=${encodeURIComponent(key)}&extra=1`, field: 'querystring.extra' },
      { token: client, method: 'GET', url: `/v1/locks?key=${encodeURIComponent(long)}`, field: 'querystring.key' },
      { token: op1, method: 'POST', url: '/v1/force-releases', body: { key }, field: 'body.reason' },
      { token: op1, method: 'POST', url: '/v1/force-releases', body: { key, reason: 'ok reason', revokeSession: 'yes' }, field: 'body.revokeSession' },
      { token: op1, method: 'POST', url: '/v1/force-releases/not-a-uuid/approve', field: 'params.id' },
      { token: admin, method: 'PUT', url: '/v1/classes/Bad_Name', body: fencedClass('x', 'ns'), field: 'params.name' },
      { token: admin, method: 'PUT', url: '/v1/classes/ok', body: { ...fencedClass('ok', 'ns'), colour: 'red' }, field: 'body.colour' },
      { token: admin, method: 'PUT', url: '/v1/classes/ok', body: { name: 'ok' }, field: 'body.namespace' },
      { token: op1, method: 'GET', url: '/v1/classes/UPPER', field: 'params.name' },
      { token: op1, method: 'POST', url: '/v1/epoch/advance', body: {}, field: 'body.reason' },
      { token: op1, method: 'POST', url: '/v1/epoch/advance', body: { reason: 7 }, field: 'body.reason' },
      { token: op1, method: 'POST', url: '/v1/epoch/advance/123/approve', field: 'params.id' },
    ];
    for (const c of cases) {
      const res = await la.call<Json>(c.method, c.url, c.token, c.body);
      const label = `${c.method} ${c.url} ${JSON.stringify(c.body)?.slice(0, 80)}`;
      assert.equal(res.status, 400, `${label}: ${JSON.stringify(res.body)}`);
      assert.ok(String(res.body.message).includes(c.field), `${label}: message "${res.body.message}" does not name ${c.field}`);
    }
    // Malformed JSON is a 400 too, and no token means 401 before any validation.
    const bad = await la.call<Json>('POST', '/v1/locks/acquire', client, '{"key": ');
    assert.equal(bad.status, 400);
    const anon = await la.call<Json>('POST', '/v1/locks/acquire', undefined, { nonsense: true });
    assert.equal(anon.status, 401);
  });
});
