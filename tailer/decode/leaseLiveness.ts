// Which leases of a revision's marker-less hold deletes are still alive,
// asked of etcd before the (pure) decoder runs. A hold deleted with no
// marker while its lease lives was deleted by hand (etcdctl del), not by an
// expiry: etcd deletes a lease's keys only once the lease is gone.
// The answer is about *now*: a lease revoked or lapsed right after a hand
// delete looks gone. The lease witness (leaseWitness.ts) fills that in for
// holds put while the tailer followed live: a lease whose reported TTL had
// not run out yet cannot have expired. Without it (catch-up, or a tailer
// lagging behind a delete and a revoke a few ms apart), etcd's own history
// can still tell: an expiry deletes every key of the lease in one revision,
// so the lock API's owner record of the session (on the same lease) still
// there as of the delete's revision proves the lease outlived it. Only a
// lease with no such witness, gone since, reads as an expiry.
import { EtcdLeaseInvalidError, type Etcd3 } from 'etcd3';
import { PREFIX, sessionRecordKey } from '../../core/keyspace.js';
import { isCompactedError } from '../watch/etcdReads.js';
import type { RevisionChanges } from '../types.js';

/** '0' stands for "no lease": a key without one never expires, so its delete is always by hand. */
export const NO_LEASE = '0';

/**
 * The leases to ask about: those of hold deletes in a revision that carries no marker or force record.
 * A revision that carries one is a txn someone wrote, never etcd's expiry: its unexplained deletes read
 * `deleted` whatever their lease (decoder.ts), so nothing needs asking.
 */
export function leasesToCheck(rev: RevisionChanges): string[] {
  const explained = rev.changes.some((c) => c.type === 'put' && (c.kv.key.startsWith(PREFIX.mark) || c.kv.key.startsWith(PREFIX.force)));
  if (explained) return [];
  const leases = new Set<string>();
  for (const c of rev.changes) if (c.type === 'delete' && c.kv.key.startsWith(PREFIX.hold) && c.prev) leases.add(c.prev.lease || NO_LEASE);
  return [...leases];
}

/** The live subset of those leases ('0' always counts as live); undefined when there is nothing to ask. `outlived`: the witness's evidence for a lease etcd no longer has. */
export async function liveLeases(client: Etcd3, rev: RevisionChanges, outlived?: (lease: string) => Promise<boolean>): Promise<Set<string> | undefined> {
  const leases = leasesToCheck(rev);
  if (leases.length === 0) return undefined;
  const live = new Set<string>();
  await Promise.all(
    leases.map(async (id) => {
      if (id === NO_LEASE) return void live.add(id);
      try {
        const res = await client.leaseClient.leaseTimeToLive({ ID: id, keys: false });
        if (Number(res.TTL) > 0) return void live.add(id);
      } catch (err) {
        if (!(err instanceof EtcdLeaseInvalidError)) throw err; // not found: gone
      }
      if (await outlived?.(id))
        live.add(id); // gone now, but it cannot have expired yet: revoked after the delete
      else if (await ownerRecordOutlived(client, id, rev.revision)) live.add(id);
    }),
  );
  return live;
}

/**
 * Did the session's owner record, on lease `lease`, exist as of `revision` (after its changes)? Then the lease
 * outlived that revision: etcd's expiry would have deleted it in the same one. Nobody can forge this: etcd refuses a
 * put on a lease that is gone. false when the revision is compacted (nothing to tell).
 */
async function ownerRecordOutlived(client: Etcd3, lease: string, revision: bigint): Promise<boolean> {
  try {
    const res = await client.kv.range({ key: Buffer.from(sessionRecordKey(lease)), revision: revision.toString() });
    return res.kvs.some((kv) => String(kv.lease) === lease);
  } catch (err) {
    if (isCompactedError(err)) return false;
    throw err;
  }
}
