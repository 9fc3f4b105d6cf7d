// The one envelope of every value the platform writes into etcd (docs/architecture.md, "The keyspace
// contract"): a proof of its writer that the lock API and the tailer check before they act on the value or
// read it as the API's. Anyone with write access to etcd can put, copy or edit a value, so each proof is a
// keyed MAC bound to what the value explains, not only to its bytes:
// - a hold: its key and every field (holder, session, class, epoch, waitMs, at). The session *is* the etcd
//   lease the hold must ride on: holdOrigin also requires kv.lease = session. One grant: a copy put back on
//   the same key and lease is caught by the tailer's replay check (tailer/decode/replays.ts).
// - a `release` marker: the lock and the grant revision of the one hold it ends; a `session-close` marker:
//   the session whose holds it ends; an `epoch-advance` marker: the /sys/epoch mod revision it replaced.
// - a force record: every field, among them the lock, the session, the token (whose low 48 bits are the
//   grant revision of the hold it ends) and the hash of the two-person request it carries out.
// - a /sys/clock write (the elected tailer's): its time and the put's create revision and version.
// - /sys/epoch: the epoch, the cluster id and the mod revision of the value it replaced ('0': created), which
//   the writing txn compares. An older proven value put back reads as /sys/epoch rolled back (lock/epoch.ts
//   seals), and the tailer reads any put whose previous mod revision is not the bound one as foreign.
// - /sys/class/<name>: every field, the name of its key, the key's create revision and the version the put
//   makes (lock/classes.ts writes a class in two steps to know its create revision), so an older version
//   put back — after a delete, or any number of puts — proves nothing.
// - a pending two-person request (/lockaudit/…-request/<id>): every field, its id, the lease it rides on and
//   its key's create revision, so an edited request, one written by hand, or a copy put back after it was
//   rejected (even on a re-granted lease of the same id) proves nothing.
// Not an etcd value, the same envelope: a restore gap the tailer records in the audit store (every field of
// it), the one explanation the digest worker takes for rows a restore marked rolled back after sealing; and the
// tailer's resume position — each checkpoint row and each catch-up segment row (every field that says where
// capture stands), so a forged row can make a start replay, never skip (tailer/recovery/provenPosition.ts).
//
// Format: `<algorithm>.<key id>.<mac>`, today `hs256.<8 chars>.<43 chars>` (HMAC-SHA256, base64url). The
// key id is derived from the key, so a value names the key it was proven with and a key can be rotated
// without another format change. HMAC, not a signature: checking one costs about 3 µs beside
// Ed25519's ~67 µs (test/bench/proofs.bench.ts), on a path that pays 55–86 µs per captured event.
// Every message starts with a version tag and its kind, so a proof of one kind of value is never a proof of
// another. Values written before this envelope carry a bare MAC (`legacy` below): accepted for the kinds
// that had one (holds, markers, force records, the clock), which live at most a day, so a rolling upgrade
// reads the values in flight as it did; epochs, classes and requests never had one and are unproven.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { ClockValue, EpochValue, ForceRecord, HoldValue, LockClass, MarkValue, StoredClass } from './keyspace.js';

export const PROOF_ALGORITHM = 'hs256';
/** Longest proof checked (a proof is ~58 characters): a longer one is refused before any MAC is computed. */
export const PROOF_MAX_LENGTH = 128;

type ProofKind =
  | 'hold'
  | 'mark'
  | 'force'
  | 'clock'
  | 'epoch'
  | 'class'
  | 'class-pending'
  | 'force-request'
  | 'epoch-request'
  | 'restore-gap'
  | 'checkpoint'
  | 'durable-segment'
  | 'quarantined-grant'
  | 'quarantined-row';

const keyIds = new WeakMap<Buffer, string>();

/** The id a proof names its key by: a hash of the key, so it names without revealing it. */
export function proofKeyId(secret: Buffer): string {
  let id = keyIds.get(secret);
  if (id === undefined) {
    id = createHash('sha256').update('lockaudit proof key id\0').update(secret).digest('base64url').slice(0, 8);
    keyIds.set(secret, id);
  }
  return id;
}

const hmac = (secret: Buffer, message: string): string => createHmac('sha256', secret).update(message).digest('base64url');

function same(got: string, want: string): boolean {
  const a = Buffer.from(got, 'utf8');
  const b = Buffer.from(want, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

function message(kind: ProofKind, keyId: string, fields: readonly unknown[]): string {
  return JSON.stringify(['lockaudit/proof/v2', kind, PROOF_ALGORITHM, keyId, ...fields]);
}

/** The proof of a value of `kind` whose binding is `fields`. */
function prove(secret: Buffer, kind: ProofKind, fields: readonly unknown[]): string {
  const keyId = proofKeyId(secret);
  return `${PROOF_ALGORITHM}.${keyId}.${hmac(secret, message(kind, keyId, fields))}`;
}

/** true when `proof` is this key's proof of `fields` as a `kind`; `legacy`: the message a pre-envelope bare MAC covered. */
function proven(secret: Buffer, kind: ProofKind, fields: readonly unknown[], proof: string | undefined, legacy?: () => string): boolean {
  if (proof === undefined || proof.length > PROOF_MAX_LENGTH) return false;
  const parts = proof.split('.');
  if (parts.length === 1) return legacy !== undefined && same(proof, hmac(secret, legacy()));
  const [algorithm, keyId, mac] = parts as [string, string, string];
  if (parts.length !== 3 || algorithm !== PROOF_ALGORITHM || keyId !== proofKeyId(secret)) return false;
  return same(mac, hmac(secret, message(kind, keyId, fields)));
}

// ---- holds ------------------------------------------------------------

type SignedHold = Omit<HoldValue, 'mac'>;
const holdFields = (key: string, h: SignedHold): unknown[] => [key, h.holder, h.session, h.class, h.epoch, h.waitMs, h.at];

export function holdMac(secret: Buffer, key: string, hold: SignedHold): string {
  return prove(secret, 'hold', holdFields(key, hold));
}

/** true when the hold carries the API's proof for this key (the lease binding is the caller's: kv.lease = session). */
export function hasValidProof(secret: Buffer, key: string, hold: HoldValue): boolean {
  return proven(secret, 'hold', holdFields(key, hold), hold.mac, () => JSON.stringify(holdFields(key, hold)));
}

/**
 * A hold's origin from its proof: 'api' only with a valid proof *and* on the etcd lease it names (the hold's
 * session) — a copy on another lease, or on none, is 'foreign'. undefined without a secret (nothing is
 * judged). The one check for every hold: the tailer's watched puts, deletes and gap/restore snapshots, and
 * the lock API's own view of a key (lock/inspect.ts).
 */
export function holdOrigin(secret: Buffer | undefined, key: string, hold: HoldValue, lease: string): 'api' | 'foreign' | undefined {
  if (!secret) return undefined;
  return lease === hold.session && hasValidProof(secret, key, hold) ? 'api' : 'foreign';
}

// ---- markers, force records, the clock --------------------------------

type SignedMark = Omit<MarkValue, 'mac'>;
const markFields = (m: SignedMark): unknown[] => [m.kind, m.by, m.at, m.key ?? null, m.session ?? null, m.grant ?? null, m.from ?? null];

export function markMac(secret: Buffer, mark: SignedMark): string {
  return prove(secret, 'mark', [...markFields(mark), mark.request ?? null]);
}

/** true when the marker carries the API's proof over its fields (what it may explain is the decoder's check). */
export function hasValidMarkProof(secret: Buffer, mark: MarkValue): boolean {
  const legacy = mark.request === undefined ? () => JSON.stringify(['mark/v1', ...markFields(mark)]) : undefined;
  return proven(secret, 'mark', [...markFields(mark), mark.request ?? null], mark.mac, legacy);
}

type SignedForce = Omit<ForceRecord, 'mac'>;
const forceFields = (f: SignedForce): unknown[] => [
  f.id,
  f.key,
  f.holder,
  f.session,
  f.token,
  f.class,
  f.enforcement,
  f.requester,
  f.approver,
  f.reason,
  f.requestedAt,
  f.approvedAt,
  f.revokedSession,
];

export function forceMac(secret: Buffer, record: SignedForce): string {
  return prove(secret, 'force', [...forceFields(record), record.requestHash ?? null]);
}

/** true when the force record carries the API's proof over every field. */
export function hasValidForceProof(secret: Buffer, record: ForceRecord): boolean {
  // A legacy record has no request hash: its bare MAC covered the other fields only.
  const legacy = record.requestHash === undefined ? () => JSON.stringify(['force/v1', ...forceFields(record)]) : undefined;
  return proven(secret, 'force', [...forceFields(record), record.requestHash ?? null], record.mac, legacy);
}

/** The proof of a clock write of `at` that makes /sys/clock's version `version` in the key's life that began at `createRevision`. */
export function clockMac(secret: Buffer, at: number, createRevision: string, version: string): string {
  return prove(secret, 'clock', [at, createRevision, version]);
}

/** true when the clock value carries the proof of its time for this very put (the kv's create revision and version). */
export function hasValidClockProof(secret: Buffer, clock: ClockValue, kv: { createRevision: string; version: string }): boolean {
  return proven(secret, 'clock', [clock.at, kv.createRevision, kv.version], clock.mac, () =>
    JSON.stringify(['clock/v1', clock.at, kv.createRevision, kv.version]),
  );
}

// ---- /sys/epoch and classes -------------------------------------------

type SignedEpoch = Omit<EpochValue, 'mac'>;
const epochFields = (e: SignedEpoch): unknown[] => [e.epoch, e.clusterId, e.from ?? null];

export function epochMac(secret: Buffer, epoch: SignedEpoch): string {
  return prove(secret, 'epoch', epochFields(epoch));
}

/** true when /sys/epoch carries the API's proof over its epoch, cluster id and the mod revision it replaced. */
export function hasValidEpochProof(secret: Buffer, epoch: EpochValue): boolean {
  return epoch.from !== undefined && proven(secret, 'epoch', epochFields(epoch), epoch.mac);
}

const classFields = (c: LockClass, createRevision: string, version: string): unknown[] => [
  c.name,
  c.namespace,
  c.purpose,
  c.enforcement,
  c.riskOwner ?? null,
  c.waiverExpires ?? null,
  c.ttlSeconds,
  c.tier,
  c.onQuorumLoss,
  c.fairness,
  c.pauseTest ?? null,
  createRevision,
  version,
];

/** The proof of a class put that makes its key's version `version` in the key's life that began at `createRevision`. */
export function classMac(secret: Buffer, c: LockClass, createRevision: string, version: string): string {
  return prove(secret, 'class', classFields(c, createRevision, version));
}

/** true when the class at `key`'s name carries the API's proof for this very put (the kv's create revision and version). */
export function hasValidClassProof(secret: Buffer, name: string, c: StoredClass, kv: { createRevision: string; version: string }): boolean {
  return c.name === name && proven(secret, 'class', classFields(c, kv.createRevision, kv.version), c.mac);
}

/**
 * The first put of a new class key (lock/classes.ts): the API's, but bound to no create revision yet (it is its
 * own), so never used to grant — a copy of it put back proves nothing usable. The put after it is proven.
 */
export function classPendingMac(secret: Buffer, c: LockClass): string {
  return prove(secret, 'class-pending', classFields(c, '', '1'));
}

/** How a class value reads: 'proven' (usable), 'pending' (the API's first put of the key, not usable), 'unproven'. */
export function classProofState(
  secret: Buffer,
  name: string,
  c: StoredClass,
  kv: { createRevision: string; version: string },
): 'proven' | 'pending' | 'unproven' {
  if (hasValidClassProof(secret, name, c, kv)) return 'proven';
  if (c.name === name && kv.version === '1' && proven(secret, 'class-pending', classFields(c, '', '1'), c.mac)) return 'pending';
  return 'unproven';
}

// ---- two-person requests ----------------------------------------------

/**
 * Where a pending two-person request lives: the lease it rides on and its key's create revision. The lease
 * alone is not enough — etcd lets a client grant a lease with an id of its choosing once the old one is gone,
 * so a rejected request put back on a re-granted lease of the same id would prove again; a create revision
 * never recurs (lock/twoPerson.ts writes a request in two steps to learn it).
 */
export interface RequestBinding {
  lease: string;
  createRevision: string;
}

/**
 * A pending two-person request: `fields` in a fixed order (the request's own, its id first), bound to where it
 * lives. The hash is what an approver is shown and must name; the proof binds the same message.
 */
export function requestHash(kind: 'force-request' | 'epoch-request', fields: readonly unknown[], at: RequestBinding): string {
  return createHash('sha256')
    .update(JSON.stringify(['lockaudit/request/v1', kind, ...fields, at.lease, at.createRevision]))
    .digest('hex');
}

export function requestMac(secret: Buffer, kind: 'force-request' | 'epoch-request', fields: readonly unknown[], at: RequestBinding): string {
  return prove(secret, kind, [...fields, at.lease, at.createRevision]);
}

export function hasValidRequestProof(
  secret: Buffer,
  kind: 'force-request' | 'epoch-request',
  fields: readonly unknown[],
  at: RequestBinding,
  proof: string | undefined,
): boolean {
  return proven(secret, kind, [...fields, at.lease, at.createRevision], proof);
}

// ---- restore gaps (the audit store's record of an etcd restore) ---------------

/** What a restore gap's proof binds: the tailer's record of one restore, as the gaps table stores it. */
export interface SignedRestoreGap {
  cluster: string;
  generation: number;
  fromRevision: string;
  toRevision: string;
  detectedAtMs: number;
  historyLost: number;
  previousClusterId: string;
  clusterId: string;
}
const restoreGapFields = (g: SignedRestoreGap): unknown[] => [
  g.cluster,
  g.generation,
  g.fromRevision,
  g.toRevision,
  g.detectedAtMs,
  g.historyLost,
  g.previousClusterId,
  g.clusterId,
];

export function restoreGapMac(secret: Buffer, gap: SignedRestoreGap): string {
  return prove(secret, 'restore-gap', restoreGapFields(gap));
}

/** true when a restore gap row carries the tailer's proof over every field of it. */
export function hasValidRestoreGapProof(secret: Buffer, gap: SignedRestoreGap, proof: string | undefined): boolean {
  return proven(secret, 'restore-gap', restoreGapFields(gap), proof);
}

// ---- the tailer's resume position (checkpoints, catch-up segments) -----------

/** What a checkpoint row's proof binds: every change of `cluster`'s timeline up to `revision` is durable, said by `leader` under `term`. */
export interface SignedCheckpoint {
  cluster: string;
  timeline: number;
  term: string;
  revision: string;
  leader: string;
}
const checkpointFields = (c: SignedCheckpoint): unknown[] => [c.cluster, c.timeline, c.term, c.revision, c.leader];

export function checkpointMac(secret: Buffer, c: SignedCheckpoint): string {
  return prove(secret, 'checkpoint', checkpointFields(c));
}

export function hasValidCheckpointProof(secret: Buffer, c: SignedCheckpoint, proof: string | undefined): boolean {
  return proven(secret, 'checkpoint', checkpointFields(c), proof);
}

/** What a catch-up segment row's proof binds: every change of [from, through] of `cluster`'s timeline is durable (sql/160). */
export interface SignedSegment {
  cluster: string;
  timeline: number;
  term: string;
  from: string;
  through: string;
}
const segmentFields = (s: SignedSegment): unknown[] => [s.cluster, s.timeline, s.term, s.from, s.through];

export function segmentMac(secret: Buffer, s: SignedSegment): string {
  return prove(secret, 'durable-segment', segmentFields(s));
}

export function hasValidSegmentProof(secret: Buffer, s: SignedSegment, proof: string | undefined): boolean {
  return proven(secret, 'durable-segment', segmentFields(s), proof);
}

// ---- grant rows the store refused (quarantine, op grants-row) ---------------

/** What a quarantined grant row's proof binds: the tailer put this change's grant row in quarantine, not in `grants`. */
export interface SignedQuarantinedGrant {
  cluster: string;
  timeline: number;
  revision: string;
  key: string;
}
const quarantinedGrantFields = (q: SignedQuarantinedGrant): unknown[] => [q.cluster, q.timeline, q.revision, q.key];

export function quarantinedGrantMac(secret: Buffer, q: SignedQuarantinedGrant): string {
  return prove(secret, 'quarantined-grant', quarantinedGrantFields(q));
}

export function hasValidQuarantinedGrantProof(secret: Buffer, q: SignedQuarantinedGrant, proof: string | undefined): boolean {
  return proven(secret, 'quarantined-grant', quarantinedGrantFields(q), proof);
}

// ---- quarantine rows the tailer or the spool shipper wrote -------------------

/** What a quarantine row's proof binds: its writer quarantined this change (or line) with this value and this reason. */
export interface SignedQuarantineRow {
  cluster: string;
  timeline: number;
  revision: string;
  key: string;
  op: string;
  /** sha256 (hex) of the stored value: the value can be large, the proof is not. */
  valueSha256: string;
  reason: string;
}
const quarantineRowFields = (q: SignedQuarantineRow): unknown[] => [q.cluster, q.timeline, q.revision, q.key, q.op, q.valueSha256, q.reason];

export function quarantineRowMac(secret: Buffer, q: SignedQuarantineRow): string {
  return prove(secret, 'quarantined-row', quarantineRowFields(q));
}

export function hasValidQuarantineRowProof(secret: Buffer, q: SignedQuarantineRow, proof: string | undefined): boolean {
  return proven(secret, 'quarantined-row', quarantineRowFields(q), proof);
}
