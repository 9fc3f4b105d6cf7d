// Tamper-evident digests (issue 25; docs/digests.md#tamper-evident-digests): per cluster, one signed
// JSON object per sealed period, chained. Pure functions: the canonical
// encoding of events, a digest's hash and signature, and the walk over a
// cluster's chain that names every missing, altered or foreign digest.
//
// - A period is [periodStart, periodEnd) of UTC wall time, aligned to
//   multiples of its length; its events are the `events` rows (under FINAL,
//   every timeline) of the cluster whose wall_time falls in it.
// - The events hash: sha256 over one line per event, in (revision, key,
//   timeline) order, each line the canonical JSON (keys sorted, every value a
//   string) of the fields its encoding hashes (EVENT_FIELDS: v2; EVENT_FIELDS_V1) followed by "\n".
// - A digest's hash: sha256 (hex) over the canonical JSON of the digest
//   without `hash` and `signature`; `signature`: Ed25519 over those same
//   bytes, base64. `prevHash` is the previous digest's hash (seq − 1; the
//   first digest names GENESIS_HASH). A digest of a period that changed after
//   it was sealed is another link of the chain with `supersedes` naming the
//   digest it replaces: nothing is overwritten.
// - Keys (docs/keys.md): the chain's first digest is
//   signed by a key the verifier trusts; a hand-over digest names the next key
//   and carries its signature beside the current key's, after which only the
//   next key signs; a recovery digest (the key was lost) is signed by a new key
//   alone, which only the verifier's own keyring can vouch for.
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { digestKeyId, verifyDigestSignature, type DigestKeyring, type DigestSigner } from '../../core/digestKey.js';
import { canonicalJson, GENESIS_HASH } from '../hashChain.js';

export const DIGEST_VERSION = 1;
export const DIGEST_KIND = 'lockaudit-digest';
/**
 * How a period's events are hashed. v1: the fields of EVENT_FIELDS_V1, `value` and `prevValue` as stored (whole:
 * before sql/290 every value was). v2 (every digest sealed since): those and the four of a value's bound
 * (core/valueBound.ts), so a value kept as its prefix is sealed with its whole size and sha256. A period sealed
 * under v1 is checked under v1 for good.
 */
export const EVENTS_ENCODING_V1 = 'lockaudit-events-v1';
export const EVENTS_ENCODING = 'lockaudit-events-v2';
export type EventsEncoding = typeof EVENTS_ENCODING_V1 | typeof EVENTS_ENCODING;
export const isEventsEncoding = (e: unknown): e is EventsEncoding => e === EVENTS_ENCODING_V1 || e === EVENTS_ENCODING;
export const DIGEST_OBJECT_PREFIX = 'digests/';
export { GENESIS_HASH };

/** The event fields v1 hashes, each as a decimal or plain string (exporters/sql/digest_events.sql selects them so). */
export const EVENT_FIELDS_V1 = [
  'cluster',
  'timeline',
  'revision',
  'key',
  'eventType',
  'op',
  'origin',
  'namespace',
  'lockPath',
  'class',
  'holder',
  'session',
  'token',
  'epoch',
  'grantRevision',
  'waitMs',
  'wallTimeMs',
  'timeEstimated',
  'timeErrorMs',
  'createRevision',
  'modRevision',
  'version',
  'lease',
  'value',
  'prevValue',
  'unprotected',
  'rolledBackBy',
  'supersededBy',
] as const;
/** The event fields v2 hashes: v1's and a value's bound (the whole value's bytes, and its sha256 when only a prefix is kept, else ''). */
export const EVENT_FIELDS = [...EVENT_FIELDS_V1, 'valueBytes', 'valueSha256', 'prevValueBytes', 'prevValueSha256'] as const;
export type DigestEvent = Record<(typeof EVENT_FIELDS)[number], string>;

export interface DigestHistoryObject {
  bucket: string;
  object: string;
  sha256: string;
  bytes: number;
  rows: string;
  dataset: string;
  /** The UTC day the file covers. */
  date: string;
}

export interface DigestGap {
  fromRevision: string;
  toRevision: string;
  kind: string;
  reason: string;
  generation: string;
  detectedAt: string;
}

export interface DigestRestore {
  generation: string;
  clusterId: string;
  previousClusterId: string;
  divergedAfter: string;
  restoredHead: string;
  resumeRevision: string;
  reason: string;
  detectedAt: string;
}

/** A place in a cluster's etcd history: the timeline (sql/065) and the revision within it (decimal strings). */
export interface Position {
  timeline: string;
  revision: string;
}

export interface DigestEvents {
  encoding: EventsEncoding;
  /** The period's changes are those committed after `after` (null: from the start) up to `through`, by (timeline, revision). */
  after: Position | null;
  through: Position;
  count: string;
  sha256: string;
  /** Lowest and highest revision among the period's events; null when it has none. */
  revisionMin: string | null;
  revisionMax: string | null;
  /** Newest ingested_at (ms) among them: a later one means the period changed. Not evidence, a hint for the worker. */
  ingestedThroughMs: string | null;
}

export interface DigestBody {
  v: typeof DIGEST_VERSION;
  kind: typeof DIGEST_KIND;
  cluster: string;
  /** 1, 2, 3… per cluster: the chain's order. */
  seq: number;
  periodStart: string;
  periodEnd: string;
  events: DigestEvents;
  /** History objects (Parquet, history bucket) completed since the previous digest, with their sha256. */
  history: DigestHistoryObject[];
  /** Gaps and restores the tailer recorded within the period. */
  gaps: DigestGap[];
  restores: DigestRestore[];
  /** The digest of the same period this one replaces (the period's events changed after it was sealed). */
  supersedes: { seq: number; hash: string } | null;
  /**
   * Why a superseding digest was signed: what the record explains (explain.ts) — a proven restore's marks, a late
   * spool. `verify` re-derives it from the record rather than trusting it. Absent on regular digests (and on
   * superseding ones written before explanations existed).
   */
  reasons?: Array<{ kind: 'restore'; generation: number; rows: number } | { kind: 'spool'; rows: number }>;
  /** A rotation: from the next digest on, signing moves to this key. This digest carries its signature too (`nextSignature`). */
  handover?: { nextKeyId: string; nextPublicKeyPem: string };
  /** The key that signed the chain so far was lost: this digest, signed by a new key alone, goes on from the one before. */
  recovery?: { lostKeyId: string; reason: string; authorizedAt: string };
  prevHash: string;
  createdAt: string;
  keyId: string;
}

export interface Digest extends DigestBody {
  hash: string;
  signature: string;
  /** A hand-over digest: the next key's Ed25519 signature over the same bytes as `signature`. */
  nextSignature?: string;
}

export const digestObjectName = (cluster: string, seq: number, prefix = DIGEST_OBJECT_PREFIX): string =>
  `${prefix}${cluster}/${String(seq).padStart(12, '0')}.json`;

const sortedKeys = (fields: readonly (typeof EVENT_FIELDS)[number][]) => {
  const sorted = [...fields].sort();
  return { sorted, keys: sorted.map((f) => JSON.stringify(f)) };
};
const LINE_FIELDS: Record<EventsEncoding, ReturnType<typeof sortedKeys>> = {
  [EVENTS_ENCODING_V1]: sortedKeys(EVENT_FIELDS_V1),
  [EVENTS_ENCODING]: sortedKeys(EVENT_FIELDS),
};

/** One event's line of the events hash: its canonical JSON (flat, every value a string, keys sorted) of the encoding's fields, and "\n". */
export function eventLine(event: DigestEvent, encoding: EventsEncoding = EVENTS_ENCODING): string {
  const { sorted, keys } = LINE_FIELDS[encoding];
  let line = '{';
  for (let i = 0; i < sorted.length; i++) {
    const v = event[sorted[i] as (typeof EVENT_FIELDS)[number]];
    if (typeof v !== 'string') throw new TypeError(`event field ${sorted[i]} is not a string`);
    line += `${i ? ',' : ''}${keys[i]}:${JSON.stringify(v)}`;
  }
  return `${line}}\n`;
}

/** The running hash of a period's events (feed them in order), under one encoding (default: the current one). */
export class EventsHasher {
  readonly #hash = createHash('sha256');
  count = 0n;
  revisionMin: bigint | undefined;
  revisionMax: bigint | undefined;
  ingestedThroughMs: bigint | undefined;

  constructor(readonly encoding: EventsEncoding = EVENTS_ENCODING) {
    if (!isEventsEncoding(encoding)) throw new RangeError(`unknown events encoding ${JSON.stringify(encoding)}`);
  }

  add(event: DigestEvent, ingestedAtMs?: string): void {
    this.#hash.update(eventLine(event, this.encoding));
    this.count++;
    const r = BigInt(event.revision);
    if (this.revisionMin === undefined || r < this.revisionMin) this.revisionMin = r;
    if (this.revisionMax === undefined || r > this.revisionMax) this.revisionMax = r;
    if (ingestedAtMs !== undefined) {
      const i = BigInt(ingestedAtMs);
      if (this.ingestedThroughMs === undefined || i > this.ingestedThroughMs) this.ingestedThroughMs = i;
    }
  }

  digest(range: { after: Position | null; through: Position }): DigestEvents {
    return {
      encoding: this.encoding,
      after: range.after,
      through: range.through,
      count: this.count.toString(),
      sha256: this.#hash.digest('hex'),
      revisionMin: this.revisionMin?.toString() ?? null,
      revisionMax: this.revisionMax?.toString() ?? null,
      ingestedThroughMs: this.ingestedThroughMs?.toString() ?? null,
    };
  }
}

/** Compares two positions: timeline first, then revision. */
export function comparePositions(a: Position, b: Position): number {
  const ta = BigInt(a.timeline),
    tb = BigInt(b.timeline);
  if (ta !== tb) return ta < tb ? -1 : 1;
  const ra = BigInt(a.revision),
    rb = BigInt(b.revision);
  return ra === rb ? 0 : ra < rb ? -1 : 1;
}

export function bodyOf(d: DigestBody | Digest): DigestBody {
  const { hash: _h, signature: _s, nextSignature: _n, ...body } = d as Digest;
  return body;
}

export const digestBytes = (d: DigestBody | Digest): Buffer => Buffer.from(canonicalJson(bodyOf(d)), 'utf8');
export const digestHash = (d: DigestBody | Digest): string => createHash('sha256').update(digestBytes(d)).digest('hex');

/** Signs a digest; a hand-over digest (`body.handover`) is signed by the next key too. */
export function signDigest(body: DigestBody, signer: DigestSigner, next?: DigestSigner): Digest {
  if (body.keyId !== signer.keyId) throw new Error(`digest names key ${body.keyId}, signer is ${signer.keyId}`);
  if (body.handover && body.handover.nextKeyId !== next?.keyId) throw new Error(`a hand-over to ${body.handover.nextKeyId} needs that key to sign it too`);
  const bytes = digestBytes(body);
  const signed: Digest = { ...body, hash: createHash('sha256').update(bytes).digest('hex'), signature: signer.sign(bytes) };
  return body.handover && next ? { ...signed, nextSignature: next.sign(bytes) } : signed;
}

function isDigestShape(x: unknown): x is Digest {
  const d = x as Partial<Digest>;
  return (
    typeof d === 'object' &&
    d !== null &&
    d.v === DIGEST_VERSION &&
    d.kind === DIGEST_KIND &&
    typeof d.cluster === 'string' &&
    Number.isInteger(d.seq) &&
    typeof d.periodStart === 'string' &&
    typeof d.periodEnd === 'string' &&
    typeof d.events === 'object' &&
    d.events !== null &&
    Array.isArray(d.history) &&
    Array.isArray(d.gaps) &&
    Array.isArray(d.restores) &&
    typeof d.prevHash === 'string' &&
    typeof d.hash === 'string' &&
    typeof d.signature === 'string' &&
    typeof d.keyId === 'string'
  );
}

/** A stored digest's bytes parsed; an error string when it is not a digest. */
export function parseDigest(text: string): Digest | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  return isDigestShape(parsed) ? parsed : 'not a lockaudit digest';
}

/**
 * What is wrong with one digest on its own (hash, object name, a signature under a key of `keyring`); undefined when
 * nothing. Which key may sign which digest is the chain's to say (keyTrail).
 */
export function digestProblem(d: Digest, keyring: DigestKeyring, object?: string, prefix = DIGEST_OBJECT_PREFIX): string | undefined {
  if (digestHash(d) !== d.hash) return 'altered: its content does not match its hash';
  const key = keyring.get(d.keyId);
  if (!key) return `signed by another key (key id ${d.keyId}, expected ${[...keyring.keys()].join(' or ') || 'none'})`;
  if (!verifyDigestSignature(key, digestBytes(d), d.signature)) return 'signature invalid under the public key (altered, or signed by another key)';
  if (object !== undefined && object !== digestObjectName(d.cluster, d.seq, prefix)) return `stored as ${object}, but it is seq ${d.seq} of ${d.cluster}`;
  return undefined;
}

/** A change of the chain's signing key, as the chain records it. */
export interface KeyChange {
  seq: number;
  kind: 'handover' | 'recovery';
  fromKeyId: string;
  toKeyId: string;
  /** A recovery's stated reason and when it was authorized. */
  reason?: string;
  authorizedAt?: string;
}

/** The chain's keys, digest by digest: what each one's signature is checked against, and where signing moved. */
export interface KeyTrail {
  /** Per seq, what is wrong with its signature or key (absent when nothing). */
  problems: Map<number, string>;
  changes: KeyChange[];
  /** The key the chain's next digest must be signed by (undefined: no digest yet). */
  currentKeyId: string | undefined;
  /** The keys the chain itself introduced (hand-overs), beside the keyring's. */
  learned: Map<string, KeyObject>;
}

/**
 * Follows the signing key along a chain (digests in seq order, each intact — digestHash checked by the caller): the
 * first is signed by a key of `keyring`; a hand-over digest signed by the current key and by the next key it names
 * moves signing to that key (trusted because the current key vouched for it); a recovery digest moves signing to a
 * new key only when `keyring` holds it (no key of the chain can vouch for it) and it names the current key as lost.
 * Any other digest must be signed by the current key: an older key signing after its hand-over is named.
 */
export function keyTrail(digests: readonly Digest[], keyring: DigestKeyring): KeyTrail {
  const problems = new Map<number, string>();
  const changes: KeyChange[] = [];
  const learned = new Map<string, KeyObject>();
  const keyOf = (id: string): KeyObject | undefined => keyring.get(id) ?? learned.get(id);
  let current: string | undefined;
  const retired = new Map<string, number>();
  // Every key the chain has been signed by or handed to: a recovery moves to a new key, never back to one of these
  // (a retired or lost key that leaked would otherwise take the chain back).
  const used = new Set<string>();
  for (const d of digests) {
    const bytes = digestBytes(d);
    const key = keyOf(d.keyId);
    let problem: string | undefined;
    if (d.recovery) {
      if (!keyring.has(d.keyId))
        problem = `a recovery signed by key ${d.keyId}, which your keyring does not hold (a recovery is vouched for only by the verifier's own keyring)`;
      else if (used.has(d.keyId) || d.keyId === d.recovery.lostKeyId)
        problem = `a recovery to key ${d.keyId}, which the chain has already used (a recovery moves to a new key, never back)`;
      else if (current !== undefined && d.recovery.lostKeyId !== current)
        problem = `a recovery from key ${d.recovery.lostKeyId}, but the chain was signed by key ${current}`;
    } else if (!key) problem = `signed by another key (key id ${d.keyId}${current ? `, expected ${current}` : ', which your keyring does not hold'})`;
    else if (current !== undefined && d.keyId !== current)
      problem = retired.has(d.keyId)
        ? `signed by key ${d.keyId} after the chain handed signing over from it (seq ${retired.get(d.keyId)})`
        : `signed by key ${d.keyId}, but the chain is signed by key ${current}`;
    if (!problem && !verifyDigestSignature(key as KeyObject, bytes, d.signature))
      problem = 'signature invalid under the public key (altered, or signed by another key)';
    let next: { id: string; key: KeyObject } | undefined;
    if (!problem && d.handover) {
      let nextKey: KeyObject | undefined;
      try {
        nextKey = createPublicKey(d.handover.nextPublicKeyPem);
      } catch {
        problem = 'a hand-over to a key that is not a public key';
      }
      if (nextKey && (nextKey.asymmetricKeyType !== 'ed25519' || digestKeyId(nextKey) !== d.handover.nextKeyId))
        problem = `a hand-over to key ${d.handover.nextKeyId} whose public key is another (or not Ed25519)`;
      else if (nextKey && (d.nextSignature === undefined || !verifyDigestSignature(nextKey, bytes, d.nextSignature)))
        problem = `a hand-over to key ${d.handover.nextKeyId} that key did not sign (a hand-over is signed by both keys)`;
      else if (nextKey) next = { id: d.handover.nextKeyId, key: nextKey };
    }
    if (problem) {
      problems.set(d.seq, problem);
      // A bad link moves nothing: the chain's key stays the one before, or, at its start, is taken from the digest.
      current ??= keyring.has(d.keyId) ? d.keyId : undefined;
      continue;
    }
    // A recovery is said wherever it sits, the first digest read included (an export's stretch can start at it).
    if (d.recovery) {
      const from = current ?? d.recovery.lostKeyId;
      changes.push({ seq: d.seq, kind: 'recovery', fromKeyId: from, toKeyId: d.keyId, reason: d.recovery.reason, authorizedAt: d.recovery.authorizedAt });
      retired.set(from, d.seq);
      used.add(from);
    }
    current = d.keyId;
    used.add(d.keyId);
    if (next) {
      learned.set(next.id, next.key);
      used.add(next.id);
      changes.push({ seq: d.seq, kind: 'handover', fromKeyId: d.keyId, toKeyId: next.id });
      retired.set(d.keyId, d.seq);
      current = next.id;
    }
  }
  return { problems, changes, currentKeyId: current, learned };
}

/** One line per key change, for every verification after it. */
export function describeKeyChange(c: KeyChange): string {
  return c.kind === 'handover'
    ? `seq ${c.seq} handed signing over from key ${c.fromKeyId} to key ${c.toKeyId} (signed by both)`
    : `seq ${c.seq} recovered the chain after key ${c.fromKeyId} was lost: signed from then on by key ${c.toKeyId}, which only your keyring vouches for (authorized ${c.authorizedAt ?? '?'}: ${c.reason ?? ''})`;
}

/** The most periods a jump in the chain is told as one by one (beyond it: one stretch). */
const MAX_FILLED_PERIODS = 10_000;

export interface ChainEntry {
  object: string;
  digest?: Digest;
  error?: string;
}

export interface PeriodVerdict {
  cluster: string;
  periodStart: string;
  periodEnd: string;
  /** The digest in force for the period (the last link naming it); undefined when none. */
  digest?: Digest;
  /** Seqs of the digests of this period replaced by later ones (changes after sealing). */
  superseded: number[];
  /**
   * Every history object a digest of this period named, superseded ones
   * included: a superseding digest restates the events, not the files, so a
   * late row must not take the files out of what is checked.
   */
  history: DigestHistoryObject[];
  problems: string[];
}

export interface ChainWalk {
  cluster: string;
  /** Every period the chain's regular digests cover, in order, each with its problems. */
  periods: PeriodVerdict[];
  /** Problems that belong to no one period (a link missing before the first period, …). */
  problems: string[];
  lastSeq: number;
  /** Where the chain's signing key changed (hand-overs, recoveries), and the key its next digest must be signed by. */
  keyChanges: KeyChange[];
  currentKeyId: string | undefined;
}

/**
 * Walks one cluster's chain: each digest intact and signed by the key, seqs
 * 1..last without a hole, each prevHash the hash of the digest before, the
 * regular digests' periods contiguous. A missing or broken link is charged to
 * the period it sits in (the one the missing digest covered, when it can be
 * told; else the next period the chain names).
 */
export function walkChain(cluster: string, entries: readonly ChainEntry[], keyring: DigestKeyring, prefix = DIGEST_OBJECT_PREFIX): ChainWalk {
  const loose: string[] = [];
  const bySeq = new Map<number, { digest: Digest; object: string; problem?: string }>();
  for (const e of entries) {
    if (!e.digest) {
      loose.push(`${e.object}: unreadable (${e.error ?? 'unknown'})`);
      continue;
    }
    const problem = integrityProblem(e.digest, e.object, prefix);
    if (e.digest.cluster !== cluster) {
      loose.push(`${e.object}: names cluster ${e.digest.cluster}`);
      continue;
    }
    if (bySeq.has(e.digest.seq)) {
      loose.push(`${e.object}: a second digest claims seq ${e.digest.seq}`);
      continue;
    }
    bySeq.set(e.digest.seq, { digest: e.digest, object: e.object, problem });
  }
  // Signatures along the chain, over the intact digests (an altered one is named as such, and moves no key).
  const keys = keyTrail(
    [...bySeq.values()]
      .filter((c) => !c.problem)
      .map((c) => c.digest)
      .sort((a, b) => a.seq - b.seq),
    keyring,
  );
  for (const [seq, problem] of keys.problems) {
    const c = bySeq.get(seq);
    if (c) c.problem = problem;
  }
  const lastSeq = Math.max(0, ...bySeq.keys());
  const periods = new Map<string, PeriodVerdict>();
  const order: string[] = [];
  const periodOf = (start: string, end: string): PeriodVerdict => {
    let p = periods.get(start);
    if (!p) {
      p = { cluster, periodStart: start, periodEnd: end, superseded: [], history: [], problems: [] };
      periods.set(start, p);
      order.push(start);
    }
    return p;
  };
  let previous: { digest: Digest; object: string; problem?: string } | undefined;
  let regularEnd: string | undefined;
  let pendingMissing: string[] = [];
  for (let seq = 1; seq <= lastSeq; seq++) {
    const cur = bySeq.get(seq);
    if (!cur) {
      let end = seq;
      while (end + 1 <= lastSeq && !bySeq.has(end + 1)) end++;
      pendingMissing.push(`${end === seq ? `digest seq ${seq} is` : `digests seq ${seq}–${end} are`} missing from the chain`);
      seq = end;
      previous = undefined;
      continue;
    }
    const d = cur.digest;
    const problems: string[] = [];
    if (cur.problem) problems.push(`${cur.object}: ${cur.problem}`);
    if (previous && d.prevHash !== previous.digest.hash)
      problems.push(`${cur.object}: names a previous hash that seq ${previous.digest.seq} does not have (seq ${previous.digest.seq} altered or replaced)`);
    if (seq === 1 && d.prevHash !== GENESIS_HASH) problems.push(`${cur.object}: the first digest does not start from the genesis hash`);
    if (d.supersedes) {
      const p = periods.get(d.periodStart);
      if (!p) problems.push(`${cur.object}: supersedes seq ${d.supersedes.seq}, which covers no period of the chain`);
      const target = p ?? periodOf(d.periodStart, d.periodEnd);
      if (target.digest && target.digest.seq === d.supersedes.seq && target.digest.hash !== d.supersedes.hash)
        problems.push(`${cur.object}: supersedes seq ${d.supersedes.seq} by a hash it does not have`);
      if (target.digest) target.superseded.push(target.digest.seq);
      target.digest = d;
      target.history.push(...d.history);
      target.problems.push(...pendingMissing.map((m) => `${m} (before seq ${seq}, which supersedes this period's digest)`), ...problems);
    } else {
      // The chain's own periods: the first where it starts, then each where the last ended.
      if (regularEnd !== undefined && d.periodStart !== regularEnd) {
        // Periods between the last one and this one had digests that are gone.
        const why = pendingMissing.length ? pendingMissing : ['no digest covers it (the chain jumps over it)'];
        const stop = Date.parse(d.periodStart);
        const from = Date.parse(regularEnd);
        // One verdict per missing period, but never more than MAX_FILLED_PERIODS: a digest added by hand with a period
        // far in the future (or a tiny one) must not make the walk build millions of them.
        let length = Date.parse(d.periodEnd) - stop;
        if (!(length > 0) || (stop - from) / length > MAX_FILLED_PERIODS) length = stop - from;
        if (Number.isFinite(from) && Number.isFinite(stop))
          for (let ms = from; ms < stop; ms += length)
            periodOf(new Date(ms).toISOString(), new Date(Math.min(stop, ms + length)).toISOString()).problems.push(...why);
        pendingMissing = [];
      }
      const p = periodOf(d.periodStart, d.periodEnd);
      p.digest = d;
      p.history.push(...d.history);
      p.problems.push(...pendingMissing, ...problems);
      regularEnd = d.periodEnd;
    }
    pendingMissing = [];
    previous = cur;
  }
  loose.push(...pendingMissing);
  const sorted = order.map((s) => periods.get(s) as PeriodVerdict).sort((a, b) => Date.parse(a.periodStart) - Date.parse(b.periodStart));
  return { cluster, periods: sorted, problems: loose, lastSeq, keyChanges: keys.changes, currentKeyId: keys.currentKeyId };
}

/** What is wrong with a digest whatever key signed it: its content against its hash, its object name. */
function integrityProblem(d: Digest, object: string, prefix: string): string | undefined {
  if (digestHash(d) !== d.hash) return 'altered: its content does not match its hash';
  if (object !== digestObjectName(d.cluster, d.seq, prefix)) return `stored as ${object}, but it is seq ${d.seq} of ${d.cluster}`;
  return undefined;
}

/** Signs a manifest (or any JSON object): Ed25519 over its canonical JSON without `signature`. */
export function signManifest<T extends object>(manifest: T, signer: DigestSigner): T & { signature: { algorithm: 'Ed25519'; keyId: string; value: string } } {
  const { signature: _old, ...rest } = manifest as T & { signature?: unknown };
  return { ...(rest as T), signature: { algorithm: 'Ed25519', keyId: signer.keyId, value: signer.sign(Buffer.from(canonicalJson(rest), 'utf8')) } };
}

/**
 * What is wrong with a manifest's signature under the digest keys (`keyring`: a manifest outlives a rotation), or
 * undefined when it is such a key's signature over every other field: a history manifest the worker did not sign is never taken
 * as a day written, nor named by a digest.
 */
export function manifestSignatureProblem(manifest: object, keyring: DigestKeyring): string | undefined {
  const { signature, ...rest } = manifest as { signature?: { algorithm?: unknown; keyId?: unknown; value?: unknown } };
  if (!signature || typeof signature !== 'object') return 'the manifest is not signed';
  if (signature.algorithm !== 'Ed25519' || typeof signature.value !== 'string') return "the manifest's signature is not an Ed25519 one";
  const key = typeof signature.keyId === 'string' ? keyring.get(signature.keyId) : undefined;
  if (!key) return `the manifest is signed by key ${String(signature.keyId)}, not a digest key (${[...keyring.keys()].join(', ')})`;
  if (!verifyDigestSignature(key, Buffer.from(canonicalJson(rest), 'utf8'), signature.value))
    return "the manifest's signature does not hold (edited after signing, or not the digest key's)";
  return undefined;
}

/**
 * The stretch of a cluster's chain an export over [fromMs, toMs) carries:
 * every digest from the lowest to the highest seq among those whose period
 * overlaps the range or is the one right after it (a change belongs to the
 * period of the first clock write after it, so one committed just before
 * `to` can sit in the next period) — superseding ones in between included,
 * so the links can be checked.
 */
export function chainSegment(digests: readonly Digest[], fromMs: number, toMs: number): Digest[] {
  const sorted = [...digests].sort((a, b) => a.seq - b.seq);
  const overlapping = sorted.filter((d) => {
    const start = Date.parse(d.periodStart);
    const end = Date.parse(d.periodEnd);
    return end > fromMs && start < toMs + (end - start);
  });
  if (overlapping.length === 0) return [];
  const lo = (overlapping[0] as Digest).seq;
  const hi = (overlapping[overlapping.length - 1] as Digest).seq;
  return sorted.filter((d) => d.seq >= lo && d.seq <= hi);
}
