// History written around the lock API: holds put and deleted by hand
// (etcdctl-style), no lease, no proof of origin, no /sys/clock write. Every
// delete is timeless (no marker, no wall time) and the holds are foreign, so
// nothing in the stream tells a commit time: the case where a tailer's time
// brackets have nothing to close them but what it looks up or reads.
import type { Etcd3 } from 'etcd3';
import { holdKey } from '../../core/keyspace.js';
import { ETCD_DEFAULT_MAX_TXN_OPS } from './workload.js';

/** A hold as a hand writer puts it: the right shape, no lease, no proof of origin. */
export function handHold(i: number): string {
  return JSON.stringify({ holder: `spiffe://hand/${i}`, session: '0', class: 'payments', epoch: 0, waitMs: 0, at: Date.now() });
}

/**
 * At least `revisions` revisions under `ns`, `writers` at once: mostly one put and one delete (two revisions),
 * every 40th time 128 puts in one txn and their 128 deletes in another (etcd's default txn limit: one revision
 * carrying 128 timeless deletes). Returns the number of events (changes) written.
 */
export async function handHistory(client: Etcd3, ns: string, revisions: number, writers = 64): Promise<number> {
  let unit = 0;
  let events = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const k = unit;
      if (2 * k >= revisions) return;
      unit += 1;
      if (k % 40 === 39) {
        const keys = Array.from({ length: ETCD_DEFAULT_MAX_TXN_OPS }, (_, j) => holdKey(`${ns}/m${k}/${j}`));
        await client
          .if(keys[0] as string, 'Create', '==', 0)
          .then(...keys.map((key, j) => client.put(key).value(handHold(k * 1_000 + j))))
          .commit();
        await client
          .if(keys[0] as string, 'Create', '>', 0)
          .then(...keys.map((key) => client.delete().key(key)))
          .commit();
        events += 2 * keys.length;
      } else {
        const key = holdKey(`${ns}/s${k}`);
        await client.put(key).value(handHold(k)).exec();
        await client.delete().key(key).exec();
        events += 2;
      }
    }
  };
  await Promise.all(Array.from({ length: writers }, worker));
  return events;
}
