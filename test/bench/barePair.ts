// The lock API benches' baseline: the two etcd txns an acquire and a release make, of the same shape (the
// compares on epoch, class and session, the hold and session puts, the release's delete and mark), straight to
// etcd — no HTTP, auth, validation, class or session logic. On keys of its own under `root`.
import type { Etcd3, Lease } from 'etcd3';
import { cmp, LockKeys, op } from '../../lock/kv.js';
import { makeToken } from '../../core/token.js';
import { percentile, report } from './report.js';

export interface BarePair {
  /** One acquire+release on key k-<clientNo>; returns the acquire's milliseconds. */
  cycle(clientNo: number): Promise<number>;
  /** Revokes its leases (a lease with autoKeepAlive keeps its timer, and the process, alive) and deletes its keys. */
  close(): Promise<void>;
}

export async function barePair(etcd: Etcd3, root: string, ns: string, className: string): Promise<BarePair> {
  const keys = new LockKeys(`${root}-bare`);
  const leases: Lease[] = [];
  await etcd.put(keys.epoch()).value(JSON.stringify({ epoch: 1, clusterId: '1' }));
  await etcd.put(keys.class(className)).value('{}');
  const sessionLease = etcd.lease(15, { autoKeepAlive: true });
  leases.push(sessionLease);
  const lease = await sessionLease.grant();
  await etcd.put(keys.session(lease)).value('{}').lease(lease);
  const markLeaseHandle = etcd.lease(60, { autoKeepAlive: true });
  leases.push(markLeaseHandle);
  const markLease = await markLeaseHandle.grant();
  const epochRev = String((await etcd.get(keys.epoch()).exec()).kvs[0]!.mod_revision);
  const classRev = String((await etcd.get(keys.class(className)).exec()).kvs[0]!.mod_revision);
  return {
    cycle: async (clientNo) => {
      const hold = keys.hold(`${ns}/k-${clientNo}`);
      const t0 = performance.now();
      const res = await etcd.kv.txn({
        compare: [cmp.absent(hold), cmp.mod(keys.epoch(), epochRev), cmp.mod(keys.class(className), classRev), cmp.exists(keys.session(lease))],
        success: [
          op.put(hold, { holder: 'x', session: lease, class: className, epoch: 1, waitMs: 0, at: Date.now() }, lease),
          op.put(keys.session(lease), {}, lease),
        ],
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
    },
    close: async () => {
      for (const l of leases) await l.revoke().catch(() => undefined);
      await etcd.delete().prefix(`${root}-bare`);
    },
  };
}

/** Acquire latencies (sorted) and cycles of a run of API or bare cycles. */
export interface CycleRun {
  acquireMs: number[];
  cycles: number;
  seconds: number;
}

/** The three figures both lock API benches report at each level: acquire p50 and p99, cycles/s — each beside the bare pair's. */
export function reportAgainstBare(prefix: string, clients: number, api: CycleRun, bare: CycleRun): void {
  for (const p of [50, 99])
    report({
      name: `${prefix}acquire p${p}, ${clients} client(s)`,
      value: percentile(api.acquireMs, p),
      baselineName: `bare etcd txn p${p}`,
      baseline: percentile(bare.acquireMs, p),
      unit: 'ms',
      higherIsBetter: false,
    });
  report({
    name: `${prefix}acquire+release cycles/s, ${clients} client(s)`,
    value: api.cycles / api.seconds,
    baselineName: 'bare txn pairs/s',
    baseline: bare.cycles / bare.seconds,
    unit: 'ops/s',
    higherIsBetter: true,
  });
}
