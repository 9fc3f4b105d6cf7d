// Every value the lock API writes into etcd carries its proof (docs/architecture.md, "The keyspace contract"):
// this test drives every write path of the lock API against real etcd (a private keyspace root) — classes,
// sessions, grants (a durable waiter too), release, session close, force-release with revokeSession, epoch
// advance, a rejected request — then reads back every put etcd committed under the root and judges each with
// core/proof.ts. A write path that bypasses the envelope, or writes under a key the contract does not list,
// fails here.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { classifyKey, decodeValue, EpochValueSchema, ForceRecordSchema, HoldValueSchema, MarkValueSchema, StoredClassSchema } from '../../core/keyspace.js';
import { originSecret } from '../../core/originSecret.js';
import { classProofState, hasValidEpochProof, hasValidForceProof, hasValidMarkProof, hasValidRequestProof, holdOrigin } from '../../core/proof.js';
import { EpochRequestSchema, epochRequestFields } from '../../lock/epochAdvance.js';
import { ForceRequestSchema, forceRequestFields } from '../../lock/forceRelease.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { advisoryClass, fencedClass, lockApp, type LockApp } from '../support/lockApp.js';

type Json = Record<string, unknown>;

interface Put {
  key: string;
  value: string;
  lease: string;
  createRevision: string;
  modRevision: string;
  version: string;
  prevModRevision: string | undefined;
}

/** Keys the lock API writes without a proof, on purpose (the contract's table says why). */
const UNPROVEN_BY_DESIGN = [/^\/q\//, /^\/lockaudit\/session\/\d+$/, /^\/lockaudit\/session-by\//, /^\/lockaudit\/grant-guard$/];

describe('every value the lock API writes into etcd carries its proof', { timeout: 120_000 }, () => {
  const config = testConfig();
  const cluster = config.etcd.clusters[0]!;
  const root = `/${uniqueId('root')}`;
  const ns = uniqueId('pc');
  let la: LockApp;
  let closeStore: () => Promise<void>;
  let etcd: Etcd3;
  let from: string;

  before(async () => {
    etcd = new Etcd3({ hosts: cluster.endpoints });
    from = String(BigInt((await etcd.maintenance.status()).header.revision) + 1n);
    const temp = await tempStore();
    closeStore = temp.close;
    la = await lockApp(config, temp.store, { root });
  });
  after(async () => {
    await la.close();
    await etcd.delete().prefix(`${root}/`);
    etcd.close();
    await closeStore();
  });

  it('drives every write path, then judges every put under the keyspace', async () => {
    const admin = await la.token(uniqueId('admin-'), ['admin']);
    const op1 = await la.token(uniqueId('op-a-'), ['lock-operator']);
    const op2 = await la.token(uniqueId('op-b-'), ['lock-operator']);
    const client = await la.token(`spiffe://test/${ns}/w`, ['client']);
    const ok = (r: { status: number; body: unknown }, status = 200) => assert.equal(r.status, status, JSON.stringify(r.body));
    const fenced = `${ns}-fenced`;
    const durable = `${ns}-durable`;
    ok(await la.call('PUT', `/v1/classes/${fenced}`, admin, fencedClass(fenced, ns)));
    ok(await la.call('PUT', `/v1/classes/${fenced}`, admin, fencedClass(fenced, ns, { pauseTest: 'PT-2' }))); // an update too
    ok(await la.call('PUT', `/v1/classes/${durable}`, admin, advisoryClass(durable, ns, { fairness: 'durable' })));
    const s1 = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
    const s2 = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 30 })).body.id;
    const g = await la.call<Json>('POST', '/v1/locks/acquire', client, { key: `${ns}/a`, session: s1, class: fenced });
    ok(g);
    ok(await la.call('POST', '/v1/locks/release', client, { key: `${ns}/a`, session: s1, token: g.body.token }));
    const other = await la.token(`spiffe://test/${ns}/w2`, ['client']);
    const s4 = (await la.call<{ id: string }>('POST', '/v1/sessions', other, { ttlSeconds: 30 })).body.id;
    ok(await la.call('POST', '/v1/locks/acquire', client, { key: `${ns}/q`, session: s2, class: durable }));
    // A durable waiter (a queue entry) that times out.
    const waited = await la.call<Json>('POST', '/v1/locks/acquire', other, { key: `${ns}/q`, session: s4, class: durable, waitMs: 500 });
    assert.equal(waited.body.error, 'LOCKAUDIT_ERR_LOCK_NOT_GRANTED', JSON.stringify(waited.body));
    ok(await la.call('POST', '/v1/locks/acquire', client, { key: `${ns}/b`, session: s1, class: fenced }));
    ok(await la.call('DELETE', `/v1/sessions/${s1}`, client));
    const s5 = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
    ok(await la.call('POST', '/v1/locks/acquire', client, { key: `${ns}/c`, session: s5, class: fenced }));
    const fr = await la.call<Json>('POST', '/v1/force-releases', op1, { key: `${ns}/c`, reason: 'coverage', revokeSession: true });
    ok(fr, 202);
    ok(await la.call('POST', `/v1/force-releases/${fr.body.id as string}/approve`, op2, { requestHash: fr.body.requestHash }));
    const s3 = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
    ok(await la.call('POST', '/v1/locks/acquire', client, { key: `${ns}/d`, session: s3, class: fenced }));
    const rejected = await la.call<Json>('POST', '/v1/force-releases', op1, { key: `${ns}/d`, reason: 'to be rejected' });
    ok(await la.call('POST', `/v1/force-releases/${rejected.body.id as string}/reject`, op2, { reason: 'not needed' }));
    const adv = await la.call<Json>('POST', '/v1/epoch/advance', op1, { reason: 'coverage' });
    ok(adv, 202);
    ok(await la.call('POST', `/v1/epoch/advance/${adv.body.id as string}/approve`, op2, { requestHash: adv.body.requestHash }));

    const puts = await putsUnder(etcd, root, from);
    const secret = originSecret(config);
    const seen = new Map<string, number>();
    const problems: string[] = [];
    for (const p of puts) {
      const key = p.key.slice(root.length);
      const kind = key.startsWith('/lockaudit/force-request/')
        ? 'force-request'
        : key.startsWith('/lockaudit/epoch-request/')
          ? 'epoch-request'
          : classifyKey(key).kind;
      seen.set(kind, (seen.get(kind) ?? 0) + 1);
      const bad = (why: string) => problems.push(`${key} (${kind}, revision ${p.modRevision}): ${why}`);
      switch (kind) {
        case 'hold': {
          const h = decodeValue(HoldValueSchema, p.value);
          if (!h || holdOrigin(secret, p.key, h, p.lease) !== 'api') bad('hold without its proof');
          break;
        }
        case 'mark': {
          const m = decodeValue(MarkValueSchema, p.value);
          if (!m || !hasValidMarkProof(secret, m)) bad('marker without its proof');
          break;
        }
        case 'force': {
          const f = decodeValue(ForceRecordSchema, p.value);
          if (!f || !hasValidForceProof(secret, f) || !key.endsWith(`/${f.id}`)) bad('force record without its proof');
          break;
        }
        case 'epoch': {
          const e = decodeValue(EpochValueSchema, p.value);
          if (!e || !hasValidEpochProof(secret, e) || e.from !== (p.prevModRevision ?? '0')) bad('/sys/epoch without its proof bound to the value it replaced');
          break;
        }
        case 'class': {
          const c = decodeValue(StoredClassSchema, p.value);
          const state = c ? classProofState(secret, key.slice('/sys/class/'.length), c, p) : 'unproven';
          if (state === 'unproven' || (state === 'pending' && p.version !== '1')) bad(`class ${state}`);
          break;
        }
        case 'force-request': {
          if (p.version === '1') break; // the first of its two puts: it tells the create revision the second proves
          const r = decodeValue(ForceRequestSchema, p.value);
          if (!r || !hasValidRequestProof(secret, 'force-request', forceRequestFields(r), p, r.mac)) bad('request without its proof');
          break;
        }
        case 'epoch-request': {
          if (p.version === '1') break; // the first of its two puts (above)
          const r = decodeValue(EpochRequestSchema, p.value);
          if (!r || !hasValidRequestProof(secret, 'epoch-request', epochRequestFields(r), p, r.mac)) bad('request without its proof');
          break;
        }
        default:
          if (!UNPROVEN_BY_DESIGN.some((re) => re.test(key))) bad('a key the keyspace contract does not list');
      }
    }
    // Every request key was proven by its second put (the first only creates the key).
    const requestKeys = new Set(puts.filter((p) => p.key.includes('/lockaudit/') && p.key.includes('-request/')).map((p) => p.key));
    for (const k of requestKeys) if (!puts.some((p) => p.key === k && p.version === '2')) problems.push(`${k}: a request never proven (no second put)`);
    assert.deepEqual(problems, []);
    // The workload reached every proven kind (else this test proves nothing of it).
    for (const kind of ['hold', 'mark', 'force', 'epoch', 'class', 'force-request', 'epoch-request', 'queue'])
      assert.ok((seen.get(kind) ?? 0) > 0, `no ${kind} was written: ${JSON.stringify([...seen])}`);
  });
});

/** Every put committed under `root` from revision `from` on (read until the watch has been quiet for a second). */
async function putsUnder(etcd: Etcd3, root: string, from: string): Promise<Put[]> {
  const watcher = await etcd.watch().prefix(`${root}/`).startRevision(from).withPreviousKV().create();
  const puts: Put[] = [];
  try {
    await new Promise<void>((resolve) => {
      let quiet = setTimeout(resolve, 3_000);
      watcher.on('data', (res) => {
        for (const e of res.events) {
          if (e.type !== 'Put') continue;
          puts.push({
            key: e.kv.key.toString(),
            value: e.kv.value.toString(),
            lease: String(e.kv.lease),
            createRevision: String(e.kv.create_revision),
            modRevision: String(e.kv.mod_revision),
            version: String(e.kv.version),
            prevModRevision: e.prev_kv ? String(e.prev_kv.mod_revision) : undefined,
          });
        }
        clearTimeout(quiet);
        quiet = setTimeout(resolve, 1_000);
      });
    });
  } finally {
    await watcher.cancel();
  }
  return puts;
}
