// Pure decoding: the changes of one etcd revision → audit events. Every
// change becomes exactly one event row (type 'other' when not understood),
// so the log is complete; what cannot be decoded is also quarantined with a
// reason. A hold delete is classified by what else changed at the same
// revision (docs/architecture.md, the lock service's rules): force record → force-release, mark → release /
// session-close / epoch-release, nothing → expiry, or `deleted` when its
// lease was still alive. A hold without the API's proof of origin is marked
// foreign (core/proof.ts), and so is one on another lease than its
// session. Markers and force records count only with the API's proof and
// only for the delete they are bound to (the grant, the session, the epoch
// move); an unproven one is itself recorded foreign and explains nothing.
import { END_KIND_BY_EVENT, type AuditEventRow, type EndKind, type EventType, type Origin } from '../../core/events.js';
import { classProofState, hasValidClockProof, hasValidEpochProof, hasValidForceProof, hasValidMarkProof, holdOrigin } from '../../core/proof.js';
import {
  ClockValueSchema,
  EpochValueSchema,
  ForceRecordSchema,
  HoldValueSchema,
  MarkValueSchema,
  PREFIX,
  QueueValueSchema,
  StoredClassSchema,
  classifyKey,
  decodeChecked,
  decodeValue,
  type EpochValue,
  type ForceRecord,
  type HoldValue,
  type KeyKind,
  type MarkValue,
} from '../../core/keyspace.js';
import { makeToken, parseToken, splitToken } from '../../core/token.js';
import { keptColumns } from '../../core/valueBound.js';
import type { Change, GrantRow, GrantSide, KvSnapshot, QuarantineRow, RevisionChanges, RowBatch } from '../types.js';

export interface DecodedEvent {
  row: AuditEventRow;
  /** true when the change carries no wall time of its own: it gets the clock bracket. */
  timeless: boolean;
  /** A lower bound for the commit time known from the value (an expiry is after its grant). */
  lowerBoundMs?: number;
  grant?: GrantSide;
  endKind?: EndKind;
}

export interface DecodedRevision {
  revision: bigint;
  events: DecodedEvent[];
  quarantine: QuarantineRow[];
  /** The /sys/clock value written at this revision, if any. */
  clockAt?: number;
}

export interface DecodeContext {
  cluster: string;
  /** false when the grant revision lies inside a recorded gap (its start was never seen). */
  startKnown: (grantRevision: bigint) => boolean;
  /**
   * Holds (`<etcd key>|<grant revision>`) whose grant revision lies in a recorded gap but whose put the store holds
   * anyway (gaps.ts capturedStarts: a run killed above its checkpoint captured it before the gap was recorded, or a
   * restore carried it): their start is known.
   */
  capturedStarts?: ReadonlySet<string>;
  /** Key of the lock API's proof of origin; without it no hold is judged foreign. */
  originSecret?: Buffer;
  /** Key of the tailer's own proofs, its clock writes' among them (core/tailerSecret.ts); default `originSecret`. */
  tailerSecret?: Buffer;
  /** Grant revision → grant time of the foreign holds the revision puts or deletes (foreignGrantTimes.ts); absent: their claimed `at`. */
  foreignGrantTimes?: ReadonlyMap<string, number>;
  /**
   * Leases still alive when the revision was decoded, asked of etcd beforehand
   * for the marker-less hold deletes (leaseLiveness.ts; '0' = no lease, never
   * expires): such a delete whose lease is alive was made by hand, not by expiry.
   */
  liveLeases?: ReadonlySet<string>;
}

/** Keys the tailer captures: everything under the watched prefixes, nothing else. */
export function isCaptured(key: string): boolean {
  return key.startsWith(PREFIX.hold) || key.startsWith(PREFIX.queue) || key.startsWith(PREFIX.sys);
}

function baseRow(cluster: string, revision: string, c: Change): AuditEventRow {
  return {
    cluster,
    revision,
    key: c.kv.key,
    event_type: 'other',
    op: c.type,
    namespace: '',
    lock_path: '',
    class: '',
    holder: '',
    session: '',
    token: '0',
    epoch: 0,
    grant_revision: '0',
    wait_ms: 0,
    wall_time: 0,
    time_estimated: 0,
    time_error_ms: 0,
    create_revision: c.kv.createRevision || '0',
    mod_revision: c.kv.modRevision || revision,
    version: c.kv.version || '0',
    lease: c.kv.lease || '0',
    ...keptColumns('value', c.type === 'put' ? c.kv.value : ''),
    ...keptColumns('prev_value', c.prev?.value ?? ''),
    unprotected: 0,
  };
}

/** The proven markers and force records of one revision, each as what it may explain. */
interface RevisionMarks {
  forceByLock: Map<string, ForceRecord[]>;
  releaseByLock: Map<string, MarkValue[]>;
  sessionClose: MarkValue[];
  epochAdvance: MarkValue | undefined;
  /** The revision carries a put: it is a txn someone wrote, never a lease expiry (etcd's expiry deletes only). */
  anyPut: boolean;
}

function push<V>(map: Map<string, V[]>, key: string, v: V): void {
  const list = map.get(key);
  if (list) list.push(v);
  else map.set(key, [v]);
}

/**
 * A marker's or force record's proof (no secret configured: trusted, as before proofs existed).
 * Values written before proofs existed carry none. What the store already holds was classified when
 * it was captured and is never decoded again, so history keeps its reading; only revisions captured
 * from now on are judged, and an unsigned marker among them reads as what it provably is (the delete
 * beside it `deleted`, alarmed) — accepting unsigned ones "for compatibility" would accept every
 * insider's. Hence upgrade the lock APIs before the tailers, and let the tailer catch up first.
 */
function markProven(ctx: DecodeContext, m: MarkValue): boolean {
  return !ctx.originSecret || hasValidMarkProof(ctx.originSecret, m);
}

function forceProven(ctx: DecodeContext, key: string, f: ForceRecord): boolean {
  if (!ctx.originSecret) return true;
  // Bound to its own key as well: /sys/force/<id> carries the record whose id is <id>.
  return key === `${PREFIX.force}${f.id}` && hasValidForceProof(ctx.originSecret, f);
}

function collectMarks(ctx: DecodeContext, changes: readonly Change[]): RevisionMarks {
  const marks: RevisionMarks = { forceByLock: new Map(), releaseByLock: new Map(), sessionClose: [], epochAdvance: undefined, anyPut: false };
  // The /sys/epoch move of this revision: an epoch-advance marker counts only beside the move it is bound to.
  const epochMove = changes.find((c) => c.type === 'put' && c.kv.key === PREFIX.epoch);
  for (const c of changes) {
    if (c.type !== 'put') continue;
    marks.anyPut = true;
    if (c.kv.key.startsWith(PREFIX.force)) {
      const f = decodeValue(ForceRecordSchema, c.kv.value);
      if (f && forceProven(ctx, c.kv.key, f)) push(marks.forceByLock, lockOf(f.key), f);
    } else if (c.kv.key.startsWith(PREFIX.mark)) {
      const m = decodeValue(MarkValueSchema, c.kv.value);
      if (!m || !markProven(ctx, m)) continue;
      if (m.kind === 'release' && m.key) push(marks.releaseByLock, lockOf(m.key), m);
      else if (m.kind === 'session-close' && (m.session !== undefined || !ctx.originSecret)) marks.sessionClose.push(m);
      else if (m.kind === 'epoch-advance' && (!ctx.originSecret || (epochMove && m.from !== undefined && epochMove.prev?.modRevision === m.from)))
        marks.epochAdvance = m;
    }
  }
  return marks;
}

/** Marks and force records may name the lock or its hold key; both mean the lock. */
function lockOf(keyOrLock: string): string {
  return keyOrLock.startsWith(PREFIX.hold) ? keyOrLock.slice(PREFIX.hold.length) : keyOrLock;
}

export function grantSide(lock: { lock: string; namespace: string; path: string }, hold: HoldValue, grantRevision: string, startKnown: boolean): GrantSide {
  return {
    key: lock.lock,
    namespace: lock.namespace,
    lock_path: lock.path,
    class: hold.class,
    holder: hold.holder,
    session: hold.session,
    token: makeToken(hold.epoch, BigInt(grantRevision)).toString(10),
    epoch: hold.epoch,
    grant_revision: grantRevision,
    granted_at: hold.at,
    wait_ms: hold.waitMs,
    start_known: startKnown ? 1 : 0,
  };
}

function applyGrant(row: AuditEventRow, g: GrantSide): void {
  row.namespace = g.namespace;
  row.lock_path = g.lock_path;
  row.class = g.class;
  row.holder = g.holder;
  row.session = g.session;
  row.token = g.token;
  row.epoch = g.epoch;
  row.grant_revision = g.grant_revision;
  row.wait_ms = g.wait_ms;
  if (g.origin) row.origin = g.origin;
}

/** One change being decoded: its row (filled in place) and what the revision says about it. */
interface Step {
  ctx: DecodeContext;
  revision: string;
  c: Change;
  ev: DecodedEvent;
  marks: RevisionMarks;
  out: DecodedRevision;
}

/** A decoder's verdict: undefined when the change was understood, else the quarantine reason. */
type Reason = string | undefined;

function timed(ev: DecodedEvent, type: EventType, at: number): void {
  ev.row.event_type = type;
  ev.row.wall_time = at;
  ev.timeless = false;
}

/** Why a value does not fit, naming the field: "hold value /epoch must be <= 65535". */
function misfit(what: string, reason: string): string {
  return `${what} ${reason}`;
}

type HoldKind = Extract<KeyKind, { kind: 'hold' }>;
type QueueKind = Extract<KeyKind, { kind: 'queue' }>;
type ClassKind = Extract<KeyKind, { kind: 'class' }>;

function decodeHold(s: Step, kind: HoldKind): Reason {
  const { c, ev } = s;
  const row = ev.row;
  row.namespace = kind.namespace;
  row.lock_path = kind.path;
  if (c.type === 'put') {
    const hold = decodeChecked(HoldValueSchema, c.kv.value);
    if (!hold.ok) return misfit('hold value', hold.reason);
    const g = grantSide(kind, hold.value, s.revision, true);
    g.origin = originOf(s.ctx, c.kv.key, hold.value, c.kv.lease);
    const foreignAt = g.origin === 'foreign' ? s.ctx.foreignGrantTimes?.get(s.revision) : undefined;
    if (foreignAt !== undefined) g.granted_at = foreignAt; // not the time its writer claimed
    applyGrant(row, g);
    timed(ev, 'grant', g.granted_at);
    if (foreignAt !== undefined) row.time_estimated = 1;
    ev.grant = g;
    return undefined;
  }
  if (!c.prev) return 'hold deleted without a previous value: cannot name the grant it ends';
  const hold = decodeChecked(HoldValueSchema, c.prev.value);
  if (!hold.ok) return misfit('previous hold value', hold.reason);
  const grantRevision = c.prev.modRevision;
  const g = grantSide(
    kind,
    hold.value,
    grantRevision,
    s.ctx.startKnown(BigInt(grantRevision)) || s.ctx.capturedStarts?.has(`${c.kv.key}|${grantRevision}`) === true,
  );
  g.origin = originOf(s.ctx, c.kv.key, hold.value, c.prev.lease);
  // A foreign hold names the grant time its put was given (the same one, or the grant would read twice by key):
  // a watched put's; a hold whose start fell in a gap was captured from a snapshot with its claimed time, kept.
  const foreignAt = g.origin === 'foreign' && g.start_known === 1 ? s.ctx.foreignGrantTimes?.get(grantRevision) : undefined;
  if (foreignAt !== undefined) g.granted_at = foreignAt;
  applyGrant(row, g);
  ev.grant = g;
  classifyHoldEnd(s, kind.lock, hold.value, c.prev, g.origin === 'foreign' ? foreignAt : hold.value.at);
  ev.endKind = END_KIND_BY_EVENT[row.event_type];
  return undefined;
}

/** The one check for every hold the tailer sees (core/proof.ts holdOrigin): a watched put, a deleted hold's previous value, a snapshot hold (gaps.ts). */
function originOf(ctx: DecodeContext, key: string, hold: HoldValue, lease: string): Origin | undefined {
  return holdOrigin(ctx.originSecret, key, hold, lease);
}

/** The grant revision a force record's token names (its low 48 bits). */
function tokenRevision(token: string): string | undefined {
  const t = parseToken(token);
  return t === undefined ? undefined : splitToken(t).revision.toString(10);
}

/**
 * Why a hold ended: by the proven marker or force record at its revision that is bound to it; none →
 * lease expiry, or `deleted` when its lease lived or the revision is a txn someone wrote (it carries a put:
 * etcd's own expiry only deletes) — a forged marker beside a hand delete explains nothing.
 */
function classifyHoldEnd(s: Step, lock: string, hold: HoldValue, prev: KvSnapshot, grantedAt: number | undefined): void {
  const { marks, ev } = s;
  const strict = s.ctx.originSecret !== undefined;
  const grant = prev.createRevision;
  const force = marks.forceByLock.get(lock)?.find((f) => !strict || (f.session === hold.session && tokenRevision(f.token) === grant));
  const release = marks.releaseByLock.get(lock)?.find((m) => !strict || m.grant === grant);
  const close = marks.sessionClose.find((m) =>
    strict ? m.session === hold.session && prev.lease === m.session : m.session === undefined || m.session === hold.session,
  );
  if (force) timed(ev, 'force-release', force.approvedAt);
  else if (release) timed(ev, 'release', release.at);
  else if (close) timed(ev, 'session-close', close.at);
  else if (marks.epochAdvance) timed(ev, 'epoch-release', marks.epochAdvance.at);
  else {
    ev.row.event_type = marks.anyPut || s.ctx.liveLeases?.has(prev.lease || '0') ? 'deleted' : 'expiry';
    // The grant's time bounds its end from below: a foreign hold's claimed `at` bounds nothing (it would push the end anywhere).
    if (grantedAt !== undefined) ev.lowerBoundMs = grantedAt;
  }
}

function decodeQueue(s: Step, kind: QueueKind): Reason {
  const { c, ev } = s;
  const row = ev.row;
  row.namespace = kind.namespace;
  row.lock_path = kind.path;
  const text = c.type === 'put' ? c.kv.value : c.prev?.value;
  if (text === undefined) {
    row.event_type = 'queue-leave'; // a delete without its previous value still is a leave
    return undefined;
  }
  const q = decodeChecked(QueueValueSchema, text);
  if (!q.ok) return misfit('queue value', q.reason);
  row.holder = q.value.holder;
  row.session = q.value.session;
  row.class = q.value.class;
  if (c.type === 'put') timed(ev, 'queue-enter', q.value.at);
  else row.event_type = 'queue-leave';
  return undefined;
}

function decodeEpoch(s: Step): Reason {
  if (s.c.type === 'delete') return '/sys/epoch deleted';
  const e = decodeChecked(EpochValueSchema, s.c.kv.value);
  if (!e.ok) return misfit('epoch value', e.reason);
  s.ev.row.event_type = 'epoch-advance';
  s.ev.row.epoch = e.value.epoch;
  if (s.ctx.originSecret && !epochProven(s.ctx.originSecret, e.value, s.c)) s.ev.row.origin = 'foreign'; // the lock API never obeys it (alarmed by the window)
  return undefined;
}

/**
 * /sys/epoch as the lock API writes it: its proof, and bound to the value it replaced — the previous value's
 * mod revision, or '0' where the put created the key. A proven value put back later replaced something else.
 */
function epochProven(secret: Buffer, e: EpochValue, c: Change): boolean {
  if (!hasValidEpochProof(secret, e)) return false;
  if (c.prev) return c.prev.modRevision === e.from;
  return c.kv.version === '1' ? e.from === '0' : true; // no previous value to judge by (compacted): the proof alone
}

function decodeClock(s: Step): Reason {
  const key = s.ctx.tailerSecret ?? s.ctx.originSecret;
  if (s.c.type === 'delete') {
    // The tailer never deletes its clock: whoever did wrote around it (with a secret to judge by).
    s.ev.row.event_type = 'clock';
    if (key) s.ev.row.origin = 'foreign';
    return undefined;
  }
  const v = decodeChecked(ClockValueSchema, s.c.kv.value);
  if (!v.ok) return misfit('clock value', v.reason);
  if (key && !hasValidClockProof(key, v.value, s.c.kv)) {
    // No anchor: its time is bracketed like an expiry's. The writer's own unsigned first put of the key
    // (version 1, no MAC: clockWriter.ts) is no anchor either, but nobody forged it; anything else is.
    s.ev.row.event_type = 'clock';
    if (s.c.kv.version !== '1' || v.value.mac !== undefined) s.ev.row.origin = 'foreign';
    return undefined;
  }
  timed(s.ev, 'clock', v.value.at);
  s.out.clockAt = v.value.at;
  return undefined;
}

function decodeClass(s: Step, kind: ClassKind): Reason {
  s.ev.row.class = kind.name;
  if (s.c.type === 'put') {
    const cls = decodeChecked(StoredClassSchema, s.c.kv.value);
    if (!cls.ok) return misfit('class value', cls.reason);
    // Only the API's puts are its (proven for this very put, or its pending first put of a new key): the lock
    // API grants under nothing else, and the risk register lists it as unproven.
    if (s.ctx.originSecret && classProofState(s.ctx.originSecret, kind.name, cls.value, s.c.kv) === 'unproven') s.ev.row.origin = 'foreign';
  } else if (s.ctx.originSecret) {
    s.ev.row.origin = 'foreign'; // the lock API never deletes a class
  }
  s.ev.row.event_type = 'class-change';
  return undefined;
}

function decodeMark(s: Step): Reason {
  if (s.c.type === 'delete') {
    s.ev.row.event_type = 'marker'; // the marker's own lease ran out
    return undefined;
  }
  const m = decodeChecked(MarkValueSchema, s.c.kv.value);
  if (!m.ok) return misfit('mark value', m.reason);
  if (!markProven(s.ctx, m.value)) s.ev.row.origin = 'foreign'; // forged: it explains nothing (alarmed by the window)
  s.ev.row.holder = m.value.by;
  s.ev.row.session = m.value.session ?? '';
  timed(s.ev, 'marker', m.value.at);
  return undefined;
}

function decodeForce(s: Step): Reason {
  if (s.c.type === 'delete') {
    s.ev.row.event_type = 'force-record';
    return undefined;
  }
  const f = decodeChecked(ForceRecordSchema, s.c.kv.value);
  if (!f.ok) return misfit('force record', f.reason);
  if (parseToken(f.value.token) === undefined) return 'force record /token does not fit 64 bits';
  const row = s.ev.row;
  if (!forceProven(s.ctx, s.c.kv.key, f.value)) row.origin = 'foreign'; // forged: no force-release, never archived
  row.holder = f.value.holder;
  row.session = f.value.session;
  row.class = f.value.class;
  row.token = f.value.token;
  timed(s.ev, 'force-record', f.value.approvedAt);
  return undefined;
}

function decodeChange(s: Step, kind: KeyKind): Reason {
  switch (kind.kind) {
    case 'hold':
      return decodeHold(s, kind);
    case 'queue':
      return decodeQueue(s, kind);
    case 'epoch':
      return decodeEpoch(s);
    case 'clock':
      return decodeClock(s);
    case 'class':
      return decodeClass(s, kind);
    case 'mark':
      return decodeMark(s);
    case 'force':
      return decodeForce(s);
    case 'election':
      return undefined; // the tailers' own election: kept as 'other', not quarantined
    case 'other':
      return isCaptured(s.c.kv.key) ? 'key does not fit the lock keyspace layout' : 'key outside the watched prefixes';
  }
}

/**
 * Decodes the changes of one revision. Pure: the same input always gives the
 * same rows. Never throws: a change no decoder can take keeps its raw row
 * (type 'other') and is quarantined with the reason, and capture goes on.
 */
export function decodeRevision(ctx: DecodeContext, input: RevisionChanges): DecodedRevision {
  const revision = input.revision.toString(10);
  const marks = collectMarks(ctx, input.changes);
  const out: DecodedRevision = { revision: input.revision, events: [], quarantine: [] };
  for (const c of input.changes) {
    const ev: DecodedEvent = { row: baseRow(ctx.cluster, revision, c), timeless: true };
    let reason: Reason;
    let decoded = ev;
    try {
      reason = decodeChange({ ctx, revision, c, ev, marks, out }, classifyKey(c.kv.key));
    } catch (err) {
      // A value no check foresaw: its raw row, nothing half-decoded.
      decoded = { row: baseRow(ctx.cluster, revision, c), timeless: true };
      reason = `decoder failed: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (reason !== undefined) {
      decoded.row.event_type = 'other';
      delete decoded.grant;
      delete decoded.endKind;
      decoded.timeless = true;
      out.quarantine.push({
        cluster: ctx.cluster,
        revision,
        key: c.kv.key,
        op: c.type,
        ...keptColumns('value', c.type === 'put' ? c.kv.value : (c.prev?.value ?? '')),
        reason,
      });
    }
    out.events.push(decoded);
  }
  return out;
}

/** The time given to timeless events of a revision: an estimate and its error bound (ms). */
export interface TimeEstimate {
  lowerMs: number | undefined;
  upperMs: number;
}

export const UNKNOWN_ERROR_MS = 4_294_967_295; // UInt32 max: the lower bound is unknown

/**
 * The commit time a revision's own values tell (the latest wall time among its
 * timed events: each was taken before the commit), or undefined when none is
 * plausible. Clock writes are handled apart.
 */
export function knownTime(decoded: DecodedRevision, notAfter: number): number | undefined {
  let at: number | undefined;
  for (const e of decoded.events) {
    // A hold written around the API carries whatever time its writer chose: it bounds nothing. Nor does a time
    // the API's proof does not bind to this revision's change: a queue value carries no proof, and a marker or
    // force record can be a copy of a genuine one (it then explains nothing; one that explains a delete times
    // that delete, which counts).
    if (!PROVEN_TIME.has(e.row.event_type)) continue;
    if (e.timeless || e.row.origin === 'foreign' || e.row.wall_time <= 0 || e.row.wall_time > notAfter) continue;
    if (at === undefined || e.row.wall_time > at) at = e.row.wall_time;
  }
  return at;
}

/** Events whose time is the API's proven time of this very change: a proven hold's put, a delete its proven marker or record explains. */
const PROVEN_TIME: ReadonlySet<string> = new Set(['grant', 'release', 'session-close', 'force-release', 'epoch-release']);

/** Fills in the time of timeless events and derives the grant rows. */
export function finishRevision(decoded: DecodedRevision, time: TimeEstimate | undefined): RowBatch {
  const batch: RowBatch = { events: [], grants: [], quarantine: decoded.quarantine };
  for (const ev of decoded.events) {
    const row = ev.row;
    if (ev.timeless) {
      if (decoded.clockAt !== undefined) {
        row.wall_time = decoded.clockAt;
        row.time_estimated = 1;
      } else if (time) {
        const b = bracketFor(time, ev.lowerBoundMs);
        row.wall_time = b.estimate;
        row.time_estimated = 1;
        row.time_error_ms = b.errorMs;
      }
    }
    batch.events.push(row);
    if (ev.grant) batch.grants.push(grantRow(row, ev.grant, ev.endKind));
  }
  return batch;
}

/** Estimate = middle of [lower, upper]; error = half its width. An expiry is never before its grant. */
export function bracketFor(time: TimeEstimate, lowerHint?: number): { estimate: number; errorMs: number } {
  let lower = time.lowerMs;
  if (lowerHint !== undefined && (lower === undefined || lowerHint > lower)) lower = lowerHint;
  if (lower === undefined) return { estimate: time.upperMs, errorMs: UNKNOWN_ERROR_MS };
  const upper = Math.max(lower, time.upperMs);
  const errorMs = Math.ceil((upper - lower) / 2);
  return { estimate: lower + errorMs, errorMs };
}

export function grantRow(row: AuditEventRow, g: GrantSide, endKind: EndKind | undefined): GrantRow {
  const ended = endKind !== undefined;
  return {
    cluster: row.cluster,
    ...g,
    spool_id: '',
    end_kind: endKind ?? '',
    end_revision: ended ? row.revision : '0',
    ended_at: ended ? row.wall_time : null,
    ended_at_error_ms: ended ? row.time_error_ms : 0,
    duration_ms: ended ? Math.max(0, row.wall_time - g.granted_at) : null,
    unprotected: row.unprotected,
    row_version: ended ? row.revision : '0',
  };
}
