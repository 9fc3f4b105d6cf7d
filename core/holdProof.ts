// Proof of origin for holds (DESIGN.md §2): the lock API writes a keyed MAC
// into each hold value it grants, over the hold key and every field of the
// hold (holder, session, class, epoch, waitMs, at), so the tailer can tell
// an API grant from a value put straight into etcd (etcdctl, a misbehaving
// client). Without the key nobody can forge one; a copied value stays valid
// only for the same key and session (a replay of a real grant's value).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { HoldValue } from './keyspace.js';

type Signed = Omit<HoldValue, 'mac'>;

function message(key: string, h: Signed): string {
  return JSON.stringify([key, h.holder, h.session, h.class, h.epoch, h.waitMs, h.at]);
}

export function holdMac(secret: Buffer, key: string, hold: Signed): string {
  return createHmac('sha256', secret).update(message(key, hold)).digest('base64url');
}

/** true when the hold carries the API's MAC for this key. */
export function hasValidProof(secret: Buffer, key: string, hold: HoldValue): boolean {
  if (hold.mac === undefined) return false;
  const want = Buffer.from(holdMac(secret, key, hold), 'utf8');
  const got = Buffer.from(hold.mac, 'utf8');
  return got.length === want.length && timingSafeEqual(got, want);
}
