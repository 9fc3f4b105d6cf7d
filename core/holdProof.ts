// Proof of origin (DESIGN.md §2, "The insider model"): the lock API writes a
// keyed MAC (HMAC-SHA256 with the origin secret, core/originSecret.ts) into
// every value whose presence changes how the log reads a change — each hold,
// each reason marker, each force record — so the tailer can tell the API's
// writes from values put straight into etcd. Anyone with write access to
// etcd can copy a value, so each proof is bound to what it explains, and the
// tailer checks the binding, not only the MAC:
// - a hold: its key and every field (holder, session, class, epoch, waitMs,
//   at). The session *is* the etcd lease the hold must ride on: the tailer
//   also requires kv.lease = session (a copy on another lease, or on none,
//   reads foreign). One grant: a copy put back on the same key and lease is
//   caught by the tailer's replay check (tailer/replays.ts).
// - a `release` marker: the lock and the grant revision (create revision)
//   of the one hold it ends — a copied marker can only explain the delete of
//   a hold that no longer exists.
// - a `session-close` marker: the session (lease) whose holds it ends.
// - an `epoch-advance` marker: the /sys/epoch mod revision the advance
//   replaced (the same txn must move /sys/epoch from exactly there).
// - a force record: every field, among them the lock, the session and the
//   token (whose low 48 bits are the grant revision of the hold it ends).
// - a /sys/clock write (the elected tailer's, tailer/clockWriter.ts): its time
//   and the key's create revision and version the put makes — one put in
//   etcd's history, so a copy put back later (a version on) or after the key
//   was deleted and made again (another create revision) proves nothing. A
//   restore repeats versions, and another cluster's key may reach the same
//   ones: such a copy carries an older time than the anchors before it, and
//   the tailer takes no anchor that runs backwards (tailer/clockBracket.ts
//   accepts). Not bound to the cluster's name: test suites run several
//   tailers of different names over one etcd, and a copy of another
//   cluster's fresh value carries about the right time anyway.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ClockValue, ForceRecord, HoldValue, MarkValue } from './keyspace.js';

type SignedHold = Omit<HoldValue, 'mac'>;
type SignedMark = Omit<MarkValue, 'mac'>;
type SignedForce = Omit<ForceRecord, 'mac'>;

const mac = (secret: Buffer, message: string): string => createHmac('sha256', secret).update(message).digest('base64url');

function same(got: string | undefined, want: string): boolean {
  if (got === undefined) return false;
  const a = Buffer.from(got, 'utf8');
  const b = Buffer.from(want, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

// Each message starts with its own tag, so a MAC of one kind of value is never a MAC of another.
function holdMessage(key: string, h: SignedHold): string {
  return JSON.stringify([key, h.holder, h.session, h.class, h.epoch, h.waitMs, h.at]);
}

function markMessage(m: SignedMark): string {
  return JSON.stringify(['mark/v1', m.kind, m.by, m.at, m.key ?? null, m.session ?? null, m.grant ?? null, m.from ?? null]);
}

function forceMessage(f: SignedForce): string {
  return JSON.stringify(['force/v1', f.id, f.key, f.holder, f.session, f.token, f.class, f.enforcement, f.requester, f.approver, f.reason, f.requestedAt, f.approvedAt, f.revokedSession]);
}

export function holdMac(secret: Buffer, key: string, hold: SignedHold): string {
  return mac(secret, holdMessage(key, hold));
}

/** true when the hold carries the API's MAC for this key (the lease binding is the caller's: kv.lease = session). */
export function hasValidProof(secret: Buffer, key: string, hold: HoldValue): boolean {
  return same(hold.mac, holdMac(secret, key, hold));
}

/**
 * A hold's origin from its proof: 'api' only with a valid MAC *and* on the etcd lease the MAC names (the
 * hold's session) — a copy on another lease, or on none, is 'foreign'. undefined without a secret (nothing
 * is judged). The one check for every hold: the tailer's watched puts, deletes and gap/restore snapshots,
 * and the lock API's own view of a key (lock/inspect.ts). One grant (a copy put back on the same key and
 * lease) is the tailer's replay check on top (tailer/replays.ts): it needs the captured history.
 */
export function holdOrigin(secret: Buffer | undefined, key: string, hold: HoldValue, lease: string): 'api' | 'foreign' | undefined {
  if (!secret) return undefined;
  return lease === hold.session && hasValidProof(secret, key, hold) ? 'api' : 'foreign';
}

export function markMac(secret: Buffer, mark: SignedMark): string {
  return mac(secret, markMessage(mark));
}

/** true when the marker carries the API's MAC over its fields (what it may explain is the decoder's check). */
export function hasValidMarkProof(secret: Buffer, mark: MarkValue): boolean {
  return same(mark.mac, markMac(secret, mark));
}

export function forceMac(secret: Buffer, record: SignedForce): string {
  return mac(secret, forceMessage(record));
}

/** true when the force record carries the API's MAC over every field. */
export function hasValidForceProof(secret: Buffer, record: ForceRecord): boolean {
  return same(record.mac, forceMac(secret, record));
}

function clockMessage(at: number, createRevision: string, version: string): string {
  return JSON.stringify(['clock/v1', at, createRevision, version]);
}

/** The MAC of a clock write of `at` that makes /sys/clock's version `version` in the key's life that began at `createRevision`. */
export function clockMac(secret: Buffer, at: number, createRevision: string, version: string): string {
  return mac(secret, clockMessage(at, createRevision, version));
}

/** true when the clock value carries the MAC of its time for this very put (the kv's create revision and version). */
export function hasValidClockProof(secret: Buffer, clock: ClockValue, kv: { createRevision: string; version: string }): boolean {
  return same(clock.mac, clockMac(secret, clock.at, kv.createRevision, kv.version));
}
