// Pure: the keyspace at revision R from the last captured change of each key
// and the recorded gaps. A key whose state at R the log cannot tell is marked
// unknown, naming the gap — never a confident wrong answer:
// - R inside a gap (from ≤ R < to; the snapshot is taken at `to`): a hold last seen before the gap is known held
//   only when the snapshot after the gap shows the same grant; a hold in that
//   snapshot granted inside the gap is held at R when granted at or before R
//   (a hold key is created once, so it was alive from its grant on), and its
//   key is unknown when granted after R (another hold may have been there).
// - a gap wholly at or before R: the snapshot at its end is complete for
//   holds, so a hold last seen before the gap and absent from the snapshot
//   ended inside it (absent at R). Queue entries and classes are not
//   snapshotted: one last seen before such a gap is unknown.
import { PREFIX } from '../../core/keyspace.js';
import { sharedRevision, type TimelineBranch } from '../../core/timelineLineage.js';

export interface EntryRow {
  key: string;
  revision: string;
  event_type: string;
  holder: string;
  session: string;
  token: string;
  class: string;
  epoch: number | string;
  grant_revision: string;
  wall_ms: string | number;
  time_estimated: number | string;
}

export interface ClassRow {
  key: string;
  revision: string;
  event_type: string;
  epoch: number | string;
  value: string;
  /** 'foreign': the change was not the lock API's (no proof). */
  origin: string;
}

export interface GapRow {
  from_revision: string;
  to_revision: string;
  reason: string;
  /** The timeline (generation) whose revisions the gap lost; absent: the first. */
  generation?: number | string;
}

/** A timeline of the cluster's etcd and where it branched off the one before it. */
export type TimelineRow = TimelineBranch;

/**
 * The gaps that hide history of timeline `timeline`: its own, and an earlier timeline's at or below where every
 * timeline since branched off (revisions the timelines share). An earlier timeline's gap above that point lost
 * revisions the restored etcd reused or skipped: they say nothing of this timeline (a gap never straddles a branch
 * point — the point is a captured revision). Another timeline's gap read as this one's marked a fully captured
 * state incomplete after a restore without a revision bump.
 */
export function gapsOfTimeline(gaps: readonly GapRow[], timelines: readonly TimelineRow[], timeline: number): GapRow[] {
  return gaps.filter((g) => {
    const gen = Number(g.generation ?? 0);
    if (gen === timeline) return true;
    return gen < timeline && BigInt(g.from_revision) <= sharedRevision(timelines, gen, timeline);
  });
}

export interface GapRef {
  fromRevision: string;
  toRevision: string;
  reason: string;
}

export interface HoldItem {
  key: string;
  holder: string;
  session: string;
  token: string;
  class: string;
  epoch: number;
  grantRevision: string;
  since: string;
  /** false when the grant was seen only in a post-gap snapshot: it began inside the gap, `since` is the holder's own claim. */
  startKnown: boolean;
}

export interface QueueItem {
  key: string;
  leaseId: string;
  holder: string;
  session: string;
  class: string;
  since: string;
  sinceRevision: string;
}

export interface ClassItem {
  name: string;
  revision: string;
  definition: Record<string, unknown>;
  /** 'foreign': etcd holds a definition the lock API did not write; nothing is granted under it. */
  origin: 'api' | 'foreign';
}

export interface UnknownItem {
  key: string;
  kind: 'hold' | 'queue' | 'class';
  reason: string;
  /** The gap that hides the key's state; null when the cause is not a gap (an undecodable value). */
  gap: GapRef | null;
  /** The last state the log knows (before the gap), if any. */
  lastKnownRevision: string | null;
  lastKnownHolder: string | null;
}

export interface KeyspaceState {
  holds: HoldItem[];
  queue: QueueItem[];
  classes: ClassItem[];
  epoch: { epoch: number; revision: string; origin: 'api' | 'foreign' } | null;
  unknown: UnknownItem[];
  gaps: GapRef[];
  /** false when R lies inside a gap: holds granted and ended inside it are invisible to the log. */
  complete: boolean;
}

const HOLD = PREFIX.hold;
const QUEUE = PREFIX.queue;
const CLASS = PREFIX.class;

const gapRef = (g: GapRow): GapRef => ({ fromRevision: String(g.from_revision), toRevision: String(g.to_revision), reason: g.reason });
const iso = (ms: string | number): string => new Date(Number(ms)).toISOString();

function holdItem(r: EntryRow): HoldItem {
  return {
    key: r.key.slice(HOLD.length),
    holder: r.holder,
    session: r.session,
    token: String(r.token),
    class: r.class,
    epoch: Number(r.epoch),
    grantRevision: String(r.grant_revision),
    since: iso(r.wall_ms),
    startKnown: r.event_type === 'grant',
  };
}

function queueItem(r: EntryRow): QueueItem {
  const rest = r.key.slice(QUEUE.length);
  const slash = rest.lastIndexOf('/');
  return {
    key: rest.slice(0, slash),
    leaseId: rest.slice(slash + 1),
    holder: r.holder,
    session: r.session,
    class: r.class,
    since: iso(r.wall_ms),
    sinceRevision: String(r.revision),
  };
}

const isHoldEvent = (r: EntryRow): boolean => r.event_type === 'grant' || r.event_type === 'snapshot-hold';

export interface AssembleInput {
  revision: bigint;
  latest: readonly EntryRow[];
  classes: readonly ClassRow[];
  gaps: readonly GapRow[];
  /** The snapshot at the end of the gap containing `revision`, when there is one. */
  snapshotAfter: readonly EntryRow[];
}

/**
 * The gap whose lost history hides `revision`, if any: from ≤ revision < to.
 * At `to` itself the snapshot (taken at that revision) tells every hold.
 */
export function containingGap(gaps: readonly GapRow[], revision: bigint): GapRow | undefined {
  return gaps.find((g) => BigInt(g.from_revision) <= revision && revision < BigInt(g.to_revision));
}

export function assembleState(input: AssembleInput): KeyspaceState {
  const R = input.revision;
  const inside = containingGap(input.gaps, R);
  const before = input.gaps.filter((g) => BigInt(g.to_revision) <= R && g !== inside);
  /** The last gap wholly at or before R that lies after `rev` (the change may be stale because of it). */
  const gapAfter = (rev: bigint): GapRow | undefined => [...before].reverse().find((g) => BigInt(g.from_revision) > rev);
  const state: KeyspaceState = { holds: [], queue: [], classes: [], epoch: null, unknown: [], gaps: input.gaps.map(gapRef), complete: inside === undefined };
  const snapshotByKey = new Map(input.snapshotAfter.map((r) => [r.key, r]));

  for (const r of input.latest) {
    const rev = BigInt(r.revision);
    if (r.key.startsWith(HOLD)) {
      if (!isHoldEvent(r)) {
        // Put but not decodable (quarantined): something is there, the log cannot say what.
        state.unknown.push({
          key: r.key.slice(HOLD.length),
          kind: 'hold',
          reason: 'the value written at this key could not be decoded (quarantined)',
          gap: null,
          lastKnownRevision: String(r.revision),
          lastKnownHolder: null,
        });
        continue;
      }
      if (gapAfter(rev)) continue; // ended inside a later gap: the snapshot at its end did not see it
      if (inside && rev < BigInt(inside.from_revision)) {
        const seen = snapshotByKey.get(r.key);
        if (seen && String(seen.grant_revision) === String(r.grant_revision)) state.holds.push(holdItem(r));
        else
          state.unknown.push({
            key: r.key.slice(HOLD.length),
            kind: 'hold',
            reason: 'held before the gap and gone after it: ended at an unknown revision inside the gap',
            gap: gapRef(inside),
            lastKnownRevision: String(r.grant_revision),
            lastKnownHolder: r.holder,
          });
        continue;
      }
      state.holds.push(holdItem(r));
    } else if (r.key.startsWith(QUEUE)) {
      const stale = (inside && rev < BigInt(inside.from_revision) ? inside : undefined) ?? gapAfter(rev);
      if (stale)
        state.unknown.push({
          key: r.key.slice(QUEUE.length),
          kind: 'queue',
          reason: 'queued before a gap; queue entries are not snapshotted, so whether it left inside the gap is unknown',
          gap: gapRef(stale),
          lastKnownRevision: String(r.revision),
          lastKnownHolder: r.holder,
        });
      else state.queue.push(queueItem(r));
    }
  }

  if (inside) {
    // Holds first seen in the snapshot after the gap, granted inside it.
    const known = new Set(input.latest.map((r) => r.key));
    for (const s of input.snapshotAfter) {
      if (known.has(s.key)) continue;
      const granted = BigInt(s.grant_revision);
      if (granted <= R && granted >= BigInt(inside.from_revision)) state.holds.push(holdItem(s));
      else if (granted > R)
        state.unknown.push({
          key: s.key.slice(HOLD.length),
          kind: 'hold',
          reason: 'granted inside the gap after this revision; who held it at this revision is unknown',
          gap: gapRef(inside),
          lastKnownRevision: null,
          lastKnownHolder: null,
        });
    }
    state.holds.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  for (const c of input.classes) {
    if (c.key === PREFIX.epoch) {
      state.epoch = { epoch: Number(c.epoch), revision: String(c.revision), origin: originOf(c) };
      continue;
    }
    const rev = BigInt(c.revision);
    const stale = (inside && rev < BigInt(inside.from_revision) ? inside : undefined) ?? gapAfter(rev);
    const name = c.key.slice(CLASS.length);
    if (stale) {
      state.unknown.push({
        key: name,
        kind: 'class',
        reason: 'defined before a gap; a change inside the gap would be invisible',
        gap: gapRef(stale),
        lastKnownRevision: String(c.revision),
        lastKnownHolder: null,
      });
      continue;
    }
    state.classes.push({ name, revision: String(c.revision), definition: parseDefinition(c.value), origin: originOf(c) });
  }
  return state;
}

const originOf = (c: ClassRow): 'api' | 'foreign' => (c.origin === 'foreign' ? 'foreign' : 'api');

/** The class's fields as written; its proof (`mac`) is no field of the class. */
function parseDefinition(value: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(value);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return {};
    const { mac: _mac, ...fields } = v as Record<string, unknown>;
    return fields;
  } catch {
    return {};
  }
}
