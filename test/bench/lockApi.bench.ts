// Lock API acquire+release: latency p50/p99 and throughput at 1, 16 and 64
// concurrent clients (through the real fastify app, in-process), beside a
// bare etcd txn pair of the same shape measured in the same run. Seeds'
// target: acquire p99 ≤ 50 ms. Runs on a private keyspace root, so the
// tailer sees none of it.
import { Etcd3, type Lease } from 'etcd3';
import { cmp, LockKeys, op } from '../../lock/kv.js';
import { makeToken } from '../../core/token.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { fencedClass, lockApp } from '../support/lockApp.js';
import { heading, percentile, report } from './report.js';

const SECONDS = Number(process.env.BENCH_LOCK_SECONDS ?? 5);
const LEVELS = [1, 16, 64];

interface Run {
  acquireMs: number[];
  cycles: number;
  seconds: number;
}

async function drive(concurrency: number, cycle: (client: number) => Promise<number>): Promise<Run> {
  const acquireMs: number[] = [];
  let cycles = 0;
  const started = performance.now();
  const until = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      while (performance.now() < until) {
        acquireMs.push(await cycle(client));
        cycles++;
      }
    }),
  );
  return { acquireMs: acquireMs.sort((a, b) => a - b), cycles, seconds: (performance.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const config = testConfig();
  const cluster = config.etcd.clusters[0]!;
  const root = `/${uniqueId('bench')}`;
  const ns = uniqueId('ns');
  const className = `${ns}-fenced`;
  const temp = await tempStore();
  const la = await lockApp(config, temp.store, { root });
  const etcd = new Etcd3({ hosts: cluster.endpoints });
  let keepalive: NodeJS.Timeout | undefined;
  const leases: Lease[] = [];
  try {
    const admin = await la.token('bench-admin', ['admin']);
    const client = await la.token(`spiffe://bench/${ns}`, ['client']);
    await la.call('PUT', `/v1/classes/${className}`, admin, fencedClass(className, ns));
    const session = (await la.call<{ id: string }>('POST', '/v1/sessions', client, { ttlSeconds: 15 })).body.id;
    keepalive = setInterval(() => void la.call('POST', `/v1/sessions/${session}/keepalive`, client), 5_000);
    keepalive.unref();

    // Baseline: the same two txns, straight to etcd (no HTTP, auth, validation, class or session logic).
    const keys = new LockKeys(`${root}-bare`);
    await etcd.put(keys.epoch()).value(JSON.stringify({ epoch: 1, clusterId: '1' }));
    await etcd.put(keys.class(className)).value('{}');
    // Kept to revoke in `finally`: a lease with autoKeepAlive keeps its timer (and the process) alive.
    const sessionLease = etcd.lease(15, { autoKeepAlive: true });
    leases.push(sessionLease);
    const lease = await sessionLease.grant();
    await etcd.put(keys.session(lease)).value('{}').lease(lease);
    const markLeaseHandle = etcd.lease(60, { autoKeepAlive: true });
    leases.push(markLeaseHandle);
    const markLease = await markLeaseHandle.grant();
    const epochRev = String((await etcd.get(keys.epoch()).exec()).kvs[0]!.mod_revision);
    const classRev = String((await etcd.get(keys.class(className)).exec()).kvs[0]!.mod_revision);
    const bare = async (clientNo: number): Promise<number> => {
      const hold = keys.hold(`${ns}/k-${clientNo}`);
      const t0 = performance.now();
      const res = await etcd.kv.txn({
        compare: [cmp.absent(hold), cmp.mod(keys.epoch(), epochRev), cmp.mod(keys.class(className), classRev), cmp.exists(keys.session(lease))],
        success: [op.put(hold, { holder: 'x', session: lease, class: className, epoch: 1, waitMs: 0, at: Date.now() }, lease), op.put(keys.session(lease), {}, lease)],
        failure: [op.get(hold), op.get(keys.epoch()), op.get(keys.class(className)), op.get(keys.session(lease))],
      });
      const acquired = performance.now() - t0;
      makeToken(1, res.header.revision);
      await etcd.kv.txn({
        compare: [cmp.created(hold, String(res.header.revision)), cmp.lease(hold, lease)],
        success: [op.get(hold), op.del(hold), op.put(keys.mark(`${clientNo}-${res.header.revision}`), { kind: 'release' }, markLease)],
        failure: [op.get(hold)],
      });
      return acquired;
    };

    const api = async (clientNo: number): Promise<number> => {
      const key = `${ns}/k-${clientNo}`;
      const t0 = performance.now();
      const got = await la.call<{ token: string }>('POST', '/v1/locks/acquire', client, { key, session, class: className });
      const acquired = performance.now() - t0;
      if (got.status !== 200) throw new Error(`acquire answered ${got.status}: ${JSON.stringify(got.body)}`);
      const rel = await la.call('POST', '/v1/locks/release', client, { key, session, token: got.body.token });
      if (rel.status !== 200) throw new Error(`release answered ${rel.status}`);
      return acquired;
    };

    heading(`lock API acquire+release vs a bare etcd txn pair of the same shape (${SECONDS} s per level, etcd ${cluster.endpoints.join(',')})`);
    await drive(4, api); // warm-up: JIT, connections, caches
    await drive(4, bare);
    for (const c of LEVELS) {
      const b = await drive(c, bare);
      const a = await drive(c, api);
      report({ name: `acquire p50, ${c} client(s)`, value: percentile(a.acquireMs, 50), baselineName: 'bare etcd txn p50', baseline: percentile(b.acquireMs, 50), unit: 'ms', higherIsBetter: false });
      report({ name: `acquire p99, ${c} client(s)`, value: percentile(a.acquireMs, 99), baselineName: 'bare etcd txn p99', baseline: percentile(b.acquireMs, 99), unit: 'ms', higherIsBetter: false });
      report({ name: `acquire+release cycles/s, ${c} client(s)`, value: a.cycles / a.seconds, baselineName: 'bare txn pairs/s', baseline: b.cycles / b.seconds, unit: 'ops/s', higherIsBetter: true });
      const p99 = percentile(a.acquireMs, 99);
      process.stdout.write(`   seeds' target acquire p99 ≤ 50 ms at ${c} client(s): ${p99 <= 50 ? 'met' : 'NOT met'} (${p99.toFixed(1)} ms)\n`);
    }
  } finally {
    clearInterval(keepalive);
    for (const l of leases) await l.revoke().catch(() => undefined);
    await la.close();
    await etcd.delete().prefix(`${root}`);
    etcd.close();
    await temp.close();
  }
}

await main();
