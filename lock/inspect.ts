// Inspect a key: who holds it and since when. The token goes only to the
// holder; anyone else learns that the key is held, not how to act as its holder.
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
}

export async function inspect(parts: LockParts, identity: string, key: string): Promise<LockView> {
  const memory = parts.failOpen.holding(key);
  if (parts.etcd.quorum.lost && memory) {
    const mine = memory.holder === identity;
    return { key, held: true, holder: memory.holder, class: memory.class, since: new Date(memory.at).toISOString(), unprotected: true, ...(mine ? { session: memory.session, token: '0' } : {}) };
  }
  const { kv } = await parts.etcd.get(parts.keys.hold(key), { serializable: parts.etcd.quorum.lost });
  const hold = kv ? decodeValue(HoldValueSchema, kv.value) : undefined;
  if (!kv || !hold) return { key, held: false };
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
    ...(mine ? { session: hold.session, token: tokenToString(makeToken(hold.epoch, kv.createRevision)) } : {}),
  };
}
