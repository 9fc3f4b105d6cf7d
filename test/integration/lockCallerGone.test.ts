// Issue 12.3, what a caller leaves behind: an acquire whose HTTP client
// disconnected stops waiting and is never granted, and sessions that expired
// leave the session cache. Against the suite's real etcd, over a real socket
// (app.inject has no connection to close).
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Etcd3 } from 'etcd3';
import { LockKeys } from '../../lock/kv.js';
import { LockEtcd } from '../../lock/lockEtcd.js';
import { MarkerLease } from '../../lock/markers.js';
import { SESSION_CACHE_GRACE_MS, Sessions } from '../../lock/sessions.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { fencedClass, lockApp, type LockApp } from '../support/lockApp.js';

type Json = Record<string, unknown>;

async function waitUntil(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(50);
  }
}

describe('a caller that is gone', { timeout: 120_000 }, () => {
  const config = testConfig();
  let la: LockApp;
  let closeStore: () => Promise<void>;
  let admin: string;
  let base: string;

  before(async () => {
    const temp = await tempStore();
    closeStore = temp.close;
    la = await lockApp(config, temp.store);
    admin = await la.token(uniqueId('admin-'), ['admin']);
    await la.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(la.app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await la.close();
    await closeStore();
  });

  async function client(ns: string, className: string): Promise<{ token: string; session: string }> {
    const token = await la.token(`spiffe://test/${ns}/${uniqueId('w')}`, ['client']);
    const session = await la.call<{ id: string }>('POST', '/v1/sessions', token, { ttlSeconds: 15 });
    assert.equal(session.status, 201, JSON.stringify(session.body));
    return { token, session: session.body.id };
  }

  it('an acquire whose HTTP client disconnected stops waiting at once and is never granted', async () => {
    const ns = uniqueId('ns');
    const className = `${ns}-fenced`;
    assert.equal((await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns))).status, 200);
    const key = `${ns}/acct-1`;
    const holder = await client(ns, className);
    const leaver = await client(ns, className);
    const got = await la.call<Json>('POST', '/v1/locks/acquire', holder.token, { key, session: holder.session, class: className });
    assert.equal(got.status, 200, JSON.stringify(got.body));

    // The leaver waits up to a minute over a real connection, then hangs up.
    const body = JSON.stringify({ key, session: leaver.session, class: className, waitMs: 60_000 });
    const req = request(`${base}/v1/locks/acquire`, {
      method: 'POST',
      headers: { authorization: `Bearer ${leaver.token}`, 'content-type': 'application/json' },
    });
    req.on('error', () => undefined);
    req.end(body);
    const waiters = la.service.parts.waiters;
    await waitUntil('the acquire waits', () => waiters.waiting(key) === 1);
    req.destroy();
    await waitUntil('the abandoned acquire stops waiting', () => waiters.waiting(key) === 0);

    // The key is released: nobody is waiting for it, so it stays free and a newcomer gets it at once.
    assert.equal((await la.call('POST', '/v1/locks/release', holder.token, { key, session: holder.session, token: got.body.token })).status, 200);
    const view = await la.call<Json>('GET', `/v1/locks?key=${encodeURIComponent(key)}`, holder.token);
    assert.equal(view.body.held, false, JSON.stringify(view.body));
    const newcomer = await client(ns, className);
    assert.equal((await la.call('POST', '/v1/locks/acquire', newcomer.token, { key, session: newcomer.session, class: className })).status, 200);
  });

  it('expired sessions leave the session cache', async () => {
    const etcdClient = new Etcd3({ hosts: config.etcd.clusters[0]!.endpoints });
    const keys = new LockKeys(`/${uniqueId('root')}`);
    const etcd = new LockEtcd(etcdClient, { probeKey: keys.epoch() });
    let now = Date.now();
    const sessions = new Sessions(etcd, keys, new MarkerLease(etcd, keys, Buffer.from('test-origin-secret')), { now: () => now });
    const leases: string[] = [];
    try {
      const created = await Promise.all(Array.from({ length: 20 }, (_, i) => sessions.create(`spiffe://test/gone-${i}`, 5)));
      const kept = await sessions.create('spiffe://test/stays', 30);
      leases.push(kept.id);
      assert.equal(sessions.cachedCount, 21);
      // The short sessions' callers vanish: their leases go (revoked here rather than waited for).
      for (const s of created) await etcd.leaseRevoke(s.id);
      now += 5_000 + SESSION_CACHE_GRACE_MS + 1;
      assert.equal(sessions.cached(created[0]!.id), undefined);
      assert.equal(sessions.cachedCount, 1, 'only the session still within its TTL is cached');
      assert.ok(sessions.cached(kept.id));
      // A session another process keeps alive is only read again, not lost.
      now += 30_000;
      assert.equal(sessions.cached(kept.id), undefined);
      assert.equal((await sessions.get('spiffe://test/stays', kept.id)).ttlSeconds, 30);
      assert.equal(sessions.cachedCount, 1);
    } finally {
      for (const id of leases) await etcd.leaseRevoke(id).catch(() => undefined);
      etcd.close();
      etcdClient.close();
    }
  });
});
