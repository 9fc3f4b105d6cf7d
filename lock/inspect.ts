// Inspect a key: who holds it and since when. The token goes only to the
// holder; anyone else learns that the key is held, not how to act as its holder.
// Who wrote the hold (origin) is judged by the tailer's own proof check
// (core/proof.ts holdOrigin: the API's MAC and the lease it names): a hold
// put straight into etcd reads `foreign`, as it does in the audit record.
import { holdOrigin } from '../core/proof.js';
import { decodeValue, HoldValueSchema } from '../core/keyspace.js';
import { makeToken, tokenToString } from '../core/token.js';
import type { LockParts } from './context.js';

export interface LockView {
  key: string;
  held: boolean;
  holder?: string;
  class?: string;
  since?: string;
  epoch?: number;
  waitMs?: number;
  /** Only to the holder. */
  session?: string;
  /** Only to the holder, as a decimal string. */
  token?: string;
  revision?: string;
  unprotected?: boolean;
  /**
   * Who wrote the hold: 'api' (it carries the lock API's proof, on the lease the proof names) or 'foreign'
   * (written around the API: etcdctl, a copy on another lease, a value no hold decoder takes). Absent when not held.
   */
  origin?: 'api' | 'foreign';
}

export async function inspect(parts: LockParts, identity: string, key: string): Promise<LockView> {
  const memory = parts.failOpen.holding(key);
  if (parts.etcd.quorum.lost && memory) {
    const mine = memory.holder === identity;
    return {
      key,
      held: true,
      holder: memory.holder,
      class: memory.class,
      since: new Date(memory.at).toISOString(),
      unprotected: true,
      origin: 'api',
      ...(mine ? { session: memory.session, token: '0' } : {}),
    };
  }
  const holdKey = parts.keys.hold(key);
  const { kv } = await parts.etcd.get(holdKey, { serializable: parts.etcd.quorum.lost });
  if (!kv) return { key, held: false };
  const hold = decodeValue(HoldValueSchema, kv.value);
  // Something is at the key (no acquire can succeed while it is there), but it is no hold the API wrote.
  if (!hold) return { key, held: true, revision: kv.createRevision, unprotected: false, origin: 'foreign' };
  const origin = holdOrigin(parts.originSecret, holdKey, hold, kv.lease) ?? 'api';
  const mine = hold.holder === identity;
  return {
    key,
    held: true,
    holder: hold.holder,
    class: hold.class,
    since: new Date(hold.at).toISOString(),
    epoch: hold.epoch,
    waitMs: hold.waitMs,
    revision: kv.createRevision,
    unprotected: false,
    origin,
    ...(mine ? { session: hold.session, token: tokenToString(makeToken(hold.epoch, kv.createRevision)) } : {}),
  };
}
