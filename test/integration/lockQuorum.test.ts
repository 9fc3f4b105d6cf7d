// Quorum loss on a three-member etcd of this file's own (port block 25100,
// throw-away data dir): with two members stopped, closed classes are refused
// with a 503 that says why, open classes are granted from memory with token 0
// and spooled (fsync) before the answer; with the members back, grants resume.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { readSpool, spoolPath } from '../../core/spool.js';
import { servicesDown, servicesUp, startInstance, stopInstance } from '../../services/localServices.js';
import { listSpool } from '../../cli/spool.js';
import { tempDir, tempStore, testConfig, uniqueId } from '../support/env.js';
import { advisoryClass, fencedClass, lockApp, type LockApp } from '../support/lockApp.js';

type Json = Record<string, unknown>;

describe('lock API: quorum loss (three-member etcd)', { timeout: 180_000 }, () => {
  const tmp = tempDir('lockaudit-quorum-');
  const config = testConfig({ LOCKAUDIT_DATA_DIR: tmp.dir, LOCKAUDIT_LOCAL_PORT_BASE: '25100', LOCKAUDIT_LOCAL_ETCD_MEMBERS: '3' });
  const ns = uniqueId('ns');
  const closedClass = `${ns}-ledger`;
  const openClass = `${ns}-cache`;
  let la: LockApp;
  let closeStore: () => Promise<void>;
  let client: string;
  let other: string;
  let s15: string;
  let s30: string;
  let other30: string;

  before(async () => {
    await servicesUp(config, { only: ['etcd'] });
    const temp = await tempStore();
    closeStore = temp.close;
    la = await lockApp(config, temp.store, { callTimeoutMs: 1_000, probeIntervalMs: 300 });
    const admin = await la.token('admin', ['admin']);
    client = await la.token(`spiffe://test/${ns}/a`, ['client']);
    other = await la.token(`spiffe://test/${ns}/b`, ['client']);
    assert.equal((await la.call('PUT', `/v1/classes/${closedClass}`, admin, fencedClass(closedClass, ns))).status, 200);
    assert.equal((await la.call('PUT', `/v1/classes/${openClass}`, admin, advisoryClass(openClass, ns))).status, 200);
    s15 = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
    s30 = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 30 })).body.id;
    other30 = (await la.call<{ id: string }>('POST', '/v1/sessions', other, { ttlSeconds: 30 })).body.id;
    // Warm: both classes granted once with quorum.
    for (const [cls, session] of [[closedClass, s15], [openClass, s30]] as const) {
      const got = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/warm`, session, class: cls });
      assert.equal(got.status, 200, JSON.stringify(got.body));
      assert.equal((await la.call('POST', '/v1/locks/release', client, { key: `${ns}/warm`, session, token: got.body.token })).status, 200);
    }
  });
  after(async () => {
    await la?.close();
    await closeStore?.();
    await servicesDown(config, { only: ['etcd'] });
    tmp.remove();
  });

  it('without quorum: closed refused (503, says why), open granted with token 0 and spooled; with quorum back, grants resume', async () => {
    assert.equal(await stopInstance(config, 'etcd-2'), true);
    assert.equal(await stopInstance(config, 'etcd-3'), true);

    const refused = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/ledger-1`, session: s15, class: closedClass });
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.error, 'LOCKAUDIT_ERR_QUORUM_LOST');
    assert.match(refused.body.message as string, /no quorum/);
    assert.match(refused.body.message as string, /onQuorumLoss: closed/);
    // Once known lost, a closed class is refused at once, not after a deadline.
    const t0 = Date.now();
    assert.equal((await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/ledger-2`, session: s15, class: closedClass })).status, 503);
    assert.ok(Date.now() - t0 < 500, `refusal took ${Date.now() - t0} ms`);

    const granted = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/cache-1`, session: s30, class: openClass });
    assert.equal(granted.status, 200, JSON.stringify(granted.body));
    assert.equal(granted.body.token, '0');
    assert.equal(granted.body.unprotected, true);
    assert.equal(granted.body.enforcement, 'advisory');
    // Spooled before the answer: the record is on disk now.
    const spool = readSpool(spoolPath(config.dataDir, 'local'));
    const record = spool.records.find((r) => r.key === `${ns}/cache-1`);
    assert.ok(record, 'the unprotected grant is in the spool');
    assert.equal(record.token, '0');
    assert.equal(record.holder, `spiffe://test/${ns}/a`);
    assert.equal(record.class, openClass);
    assert.equal(record.session, s30);
    assert.deepEqual(spool.badLines, []);
    assert.ok(listSpool(config).some((line) => line.includes(`${ns}/cache-1`)), 'lockaudit spool lists it');

    // Still mutually exclusive within this API, and releasable with token 0.
    const busy = await la.call<Json>('POST', '/v1/locks/acquire', other, { key: `${ns}/cache-1`, session: other30, class: openClass, waitMs: 100 });
    assert.equal(busy.status, 409);
    assert.equal((await la.call<Json>('POST', '/v1/locks/release', client, { key: `${ns}/cache-1`, session: s30, token: '0' })).status, 200);
    const next = await la.call<Json>('POST', '/v1/locks/acquire', other, { key: `${ns}/cache-1`, session: other30, class: openClass });
    assert.equal(next.status, 200);
    assert.equal(readSpool(spoolPath(config.dataDir, 'local')).records.filter((r) => r.key === `${ns}/cache-1`).length, 2);

    const metrics = (await la.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(metrics, new RegExp(`lockaudit_lock_unprotected_grants_total\\{namespace="${ns}",class="${openClass}"\\} 2`));
    assert.match(metrics, new RegExp(`lockaudit_lock_refusals_total\\{namespace="${ns}",class="${closedClass}",reason="quorum-lost"\\} 2`));
    assert.match(metrics, /lockaudit_lock_quorum_lost 1/);

    await startInstance(config, 'etcd-2');
    await startInstance(config, 'etcd-3');
    let status = 0;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const res = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/ledger-3`, session: s15, class: closedClass });
      status = res.status;
      if (status === 200) {
        assert.notEqual(res.body.token, '0');
        break;
      }
      await sleep(500);
    }
    assert.equal(status, 200, 'closed classes are granted again once the quorum is back');
  });
});
