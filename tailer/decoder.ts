// Pure decoding: the changes of one etcd revision → audit events. Every
// change becomes exactly one event row (type 'other' when not understood),
// so the log is complete; what cannot be decoded is also quarantined with a
// reason. A hold delete is classified by what else changed at the same
// revision (DESIGN.md §2): force record → force-release, mark → release /
// session-close / epoch-release, nothing → expiry.
import { END_KIND_BY_EVENT, type AuditEventRow, type EndKind, type EventType } from '../core/events.js';
import {
  ClockValueSchema,
  EpochValueSchema,
  ForceRecordSchema,
  HoldValueSchema,
  LockClassSchema,
  MarkValueSchema,
  PREFIX,
  QueueValueSchema,
  classifyKey,
  decodeValue,
  type ForceRecord,
  type HoldValue,
  type MarkValue,
} from '../core/keyspace.js';
import { makeToken } from '../core/token.js';
import type { Change, GrantRow, GrantSide, QuarantineRow, RevisionChanges, RowBatch } from './types.js';

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
    value: c.type === 'put' ? c.kv.value : '',
    prev_value: c.prev?.value ?? '',
    unprotected: 0,
  };
}

interface RevisionMarks {
  forceByLock: Map<string, ForceRecord>;
  releaseByLock: Map<string, MarkValue>;
  sessionClose: MarkValue[];
  epochAdvance: MarkValue | undefined;
}

function collectMarks(changes: readonly Change[]): RevisionMarks {
  const marks: RevisionMarks = { forceByLock: new Map(), releaseByLock: new Map(), sessionClose: [], epochAdvance: undefined };
  for (const c of changes) {
    if (c.type !== 'put') continue;
    if (c.kv.key.startsWith(PREFIX.force)) {
      const f = decodeValue(ForceRecordSchema, c.kv.value);
      if (f) marks.forceByLock.set(lockOf(f.key), f);
    } else if (c.kv.key.startsWith(PREFIX.mark)) {
      const m = decodeValue(MarkValueSchema, c.kv.value);
      if (!m) continue;
      if (m.kind === 'release' && m.key) marks.releaseByLock.set(lockOf(m.key), m);
      else if (m.kind === 'session-close') marks.sessionClose.push(m);
      else if (m.kind === 'epoch-advance') marks.epochAdvance = m;
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
}

/** Decodes the changes of one revision. Pure: the same input always gives the same rows. */
export function decodeRevision(ctx: DecodeContext, input: RevisionChanges): DecodedRevision {
  const revision = input.revision.toString(10);
  const marks = collectMarks(input.changes);
  const out: DecodedRevision = { revision: input.revision, events: [], quarantine: [] };
  const quarantine = (c: Change, reason: string): void => {
    out.quarantine.push({ cluster: ctx.cluster, revision, key: c.kv.key, op: c.type, value: c.type === 'put' ? c.kv.value : (c.prev?.value ?? ''), reason });
  };

  for (const c of input.changes) {
    const row = baseRow(ctx.cluster, revision, c);
    const ev: DecodedEvent = { row, timeless: true };
    const kind = classifyKey(c.kv.key);
    const timed = (type: EventType, at: number): void => {
      row.event_type = type;
      row.wall_time = at;
      ev.timeless = false;
    };

    switch (kind.kind) {
      case 'hold': {
        row.namespace = kind.namespace;
        row.lock_path = kind.path;
        if (c.type === 'put') {
          const hold = decodeValue(HoldValueSchema, c.kv.value);
          if (!hold) {
            quarantine(c, 'hold value does not match HoldValueSchema');
            break;
          }
          const g = grantSide(kind, hold, revision, true);
          applyGrant(row, g);
          timed('grant', hold.at);
          ev.grant = g;
          break;
        }
        if (!c.prev) {
          quarantine(c, 'hold deleted without a previous value: cannot name the grant it ends');
          break;
        }
        const hold = decodeValue(HoldValueSchema, c.prev.value);
        if (!hold) {
          quarantine(c, 'previous hold value does not match HoldValueSchema');
          break;
        }
        const grantRevision = c.prev.modRevision;
        const g = grantSide(kind, hold, grantRevision, ctx.startKnown(BigInt(grantRevision)));
        applyGrant(row, g);
        ev.grant = g;
        const force = marks.forceByLock.get(kind.lock);
        const release = marks.releaseByLock.get(kind.lock);
        const close = marks.sessionClose.find((m) => m.session === undefined || m.session === hold.session);
        if (force) timed('force-release', force.approvedAt);
        else if (release) timed('release', release.at);
        else if (close) timed('session-close', close.at);
        else if (marks.epochAdvance) timed('epoch-release', marks.epochAdvance.at);
        else {
          row.event_type = 'expiry';
          ev.lowerBoundMs = hold.at;
        }
        ev.endKind = END_KIND_BY_EVENT[row.event_type];
        break;
      }
      case 'queue': {
        row.namespace = kind.namespace;
        row.lock_path = kind.path;
        const text = c.type === 'put' ? c.kv.value : c.prev?.value;
        const q = text === undefined ? undefined : decodeValue(QueueValueSchema, text);
        if (!q) {
          if (c.type === 'put' || text !== undefined) {
            quarantine(c, 'queue value does not match QueueValueSchema');
            break;
          }
          row.event_type = 'queue-leave'; // a delete without its previous value still is a leave
          break;
        }
        row.holder = q.holder;
        row.session = q.session;
        row.class = q.class;
        if (c.type === 'put') timed('queue-enter', q.at);
        else row.event_type = 'queue-leave';
        break;
      }
      case 'epoch': {
        if (c.type === 'delete') {
          quarantine(c, '/sys/epoch deleted');
          break;
        }
        const e = decodeValue(EpochValueSchema, c.kv.value);
        if (!e) {
          quarantine(c, 'epoch value does not match EpochValueSchema');
          break;
        }
        row.event_type = 'epoch-advance';
        row.epoch = e.epoch;
        break;
      }
      case 'clock': {
        if (c.type === 'delete') {
          row.event_type = 'clock';
          break;
        }
        const v = decodeValue(ClockValueSchema, c.kv.value);
        if (!v) {
          quarantine(c, 'clock value does not match ClockValueSchema');
          break;
        }
        timed('clock', v.at);
        out.clockAt = v.at;
        break;
      }
      case 'class': {
        row.class = kind.name;
        if (c.type === 'put' && !decodeValue(LockClassSchema, c.kv.value)) {
          quarantine(c, 'class value does not match LockClassSchema');
          break;
        }
        row.event_type = 'class-change';
        break;
      }
      case 'mark': {
        if (c.type === 'delete') {
          row.event_type = 'marker'; // the marker's own lease ran out
          break;
        }
        const m = decodeValue(MarkValueSchema, c.kv.value);
        if (!m) {
          quarantine(c, 'mark value does not match MarkValueSchema');
          break;
        }
        row.holder = m.by;
        row.session = m.session ?? '';
        timed('marker', m.at);
        break;
      }
      case 'force': {
        if (c.type === 'delete') {
          row.event_type = 'force-record';
          break;
        }
        const f = decodeValue(ForceRecordSchema, c.kv.value);
        if (!f) {
          quarantine(c, 'force record does not match ForceRecordSchema');
          break;
        }
        row.holder = f.holder;
        row.session = f.session;
        row.class = f.class;
        row.token = f.token;
        timed('force-record', f.approvedAt);
        break;
      }
      case 'election':
        break; // the tailers' own election: kept as 'other', not quarantined
      case 'other':
        quarantine(c, isCaptured(c.kv.key) ? 'key does not fit the lock keyspace layout' : 'key outside the watched prefixes');
        break;
    }
    out.events.push(ev);
  }
  return out;
}

/** The time given to timeless events of a revision: an estimate and its error bound (ms). */
export interface TimeEstimate {
  lowerMs: number | undefined;
  upperMs: number;
}

export const UNKNOWN_ERROR_MS = 4_294_967_295; // UInt32 max: the lower bound is unknown

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
