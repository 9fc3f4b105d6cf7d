// Bounded trust in the store (issue 39 item 5): the shared high-water a lock API process seeds its mark from is
// the audit store's, and whoever can write the store can write it. One row of 2^64 − 1 in grant_high_water used to
// seal every API process and make the recovery advance run past the last epoch; now a token no captured grant
// carrying the API's proof explains is alarmed and the highest explained one is used. Real chdb and etcd.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import type { AuditEventRow } from '../../core/events.js';
import { originSecret } from '../../core/originSecret.js';
import { holdMac } from '../../core/proof.js';
import { makeToken } from '../../core/token.js';
import { lockCluster } from '../../roles/lockEngine.js';
import { capturedGrantHighWater } from '../../tailer/sink/grantHighWater.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { fencedClass, lockApp } from '../support/lockApp.js';

type Json = Record<string, unknown>;
const config = testConfig();
const secret = originSecret(config);

/** A captured grant put as the tailer writes it: the hold value (proven or not) at `revision`, claiming `token`. */
function grantPut(cluster: string, key: string, revision: number, epoch: number, options: { proven?: boolean; token?: bigint } = {}): AuditEventRow {
  const fields = { holder: 'w', session: '77', class: 'c', epoch, waitMs: 0, at: Date.now() };
  const value = JSON.stringify(options.proven === false ? fields : { ...fields, mac: holdMac(secret, key, fields) });
  return {
    cluster,
    revision: String(revision),
    key,
    event_type: 'grant',
    op: 'put',
    namespace: 'ns',
    lock_path: 'a',
    class: 'c',
    holder: 'w',
    session: '77',
    token: (options.token ?? makeToken(epoch, BigInt(revision))).toString(),
    epoch,
    grant_revision: String(revision),
    wait_ms: 0,
    wall_time: Date.now(),
    time_estimated: 0,
    time_error_ms: 0,
    create_revision: String(revision),
    mod_revision: String(revision),
    version: '1',
    lease: '77',
    value,
    prev_value: '',
    unprotected: 0,
  };
}

describe('the shared high-water is taken only as far as proven grants explain it', { timeout: 120_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
  });
  after(async () => closeStore());

  it('a proven grant explains its token; a forged high-water row, a copied value at another epoch, or an unproven one does not', async () => {
    const cluster = uniqueId('hw');
    const told: Array<{ epoch: number; usedEpoch: number }> = [];
    const source = capturedGrantHighWater(store, { originSecret: secret, onUnexplained: (f) => told.push({ epoch: f.epoch, usedEpoch: f.usedEpoch }) });
    await store.insert('events', [grantPut(cluster, '/l/ns/a', 100, 2)]);
    assert.equal(await source.highestGrantToken(cluster), makeToken(2, 100n));
    assert.deepEqual(told, []);

    await store.insert('grant_high_water', [{ cluster, token: (2n ** 64n - 1n).toString() }]);
    assert.equal(await source.highestGrantToken(cluster), makeToken(2, 100n), 'the forged maximum is not obeyed');
    assert.deepEqual(told, [{ epoch: 65535, usedEpoch: 2 }]);

    // A genuine hold value copied into a row that claims a later epoch, and a hold without proof: neither explains.
    const copied = grantPut(cluster, '/l/ns/a', 100, 2);
    await store.insert('events', [
      { ...copied, revision: '100', token: makeToken(7, 100n).toString() },
      grantPut(cluster, '/l/ns/b', 500, 9, { proven: false }),
    ]);
    await store.insert('grant_high_water', [{ cluster, token: makeToken(9, 500n).toString() }]);
    assert.equal(await source.highestGrantToken(cluster), makeToken(2, 100n));
    // Without the key nothing is judged: the stored maximum as before.
    assert.equal(await capturedGrantHighWater(store).highestGrantToken(cluster), 2n ** 64n - 1n);
  });

  it('a running lock API is not sealed by a forged row and alarms it', async () => {
    const la = await lockApp(config, store);
    try {
      const ns = uniqueId('hw');
      const admin = await la.token(uniqueId('admin-'), ['admin']);
      const client = await la.token(`spiffe://test/${ns}/w`, ['client']);
      assert.equal((await la.call('PUT', `/v1/classes/${ns}-f`, admin, fencedClass(`${ns}-f`, ns))).status, 200);
      const session = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
      await store.insert('grant_high_water', [{ cluster: lockCluster(config).name, token: (2n ** 64n - 1n).toString() }]);
      await la.service.parts.epoch.refreshShared(); // what the periodic read (every 30 s) does
      const granted = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/a`, session, class: `${ns}-f` });
      assert.equal(granted.status, 200, JSON.stringify(granted.body));
      assert.equal((await la.call<Json>('GET', '/v1/epoch', client)).body.sealed, false);
      const alarm = la.ctx.health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_HIGHWATER_UNEXPLAINED');
      assert.ok(alarm, 'alarmed');
      assert.match(alarm.message, /epoch 65535/);
      assert.ok(!alarm.message.includes((2n ** 64n - 1n).toString()), 'no token in the alarm');
    } finally {
      await la.close();
    }
  });
});
