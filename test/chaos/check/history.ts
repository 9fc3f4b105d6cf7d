// The run's history as the checker indexes it once: eras and how they branch
// (from the recorder's restore lines and the restore faults' facts), the
// recorded changes by (era, revision, key), and the store split into the
// current timeline's rows (FINAL derived here: the highest term, then the newest write, wins), the
// rolled-back rows, and every (timeline, revision, key) written with more than
// one content.
import { isKeptValueOf } from '../../../core/valueBound.js';
import type { FaultFacts, FaultRecord } from '../faults.js';
import type { RecordedChange, RecorderLine } from '../recorder.js';
import type { RolledBackRow, StoredEvent } from '../storeDump.js';
import type { CheckInput } from './types.js';

export const rk = (revision: string, key: string): string => `${revision} ${key}`;

export type RestoreFacts = Extract<FaultFacts, { kind: 'restore' }>;

/** A restore that ended era `era - 1` and began era `era`. */
export interface Branch {
  era: number;
  /** The snapshot's revision: the new era shares every revision up to it with the old one. */
  snapshot: bigint;
  /** The new era's first revision is restoredHead + 1 (snapshot + bump). */
  restoredHead: bigint;
  bump: bigint;
  fault?: FaultRecord & { facts: RestoreFacts };
  /** Keys alive at the snapshot, with the revision of their last put: what the restored cluster starts with. */
  liveAtSnapshot: Map<string, bigint>;
  /** The old era's true end (the stopped members' head), or the recorder's last revision of it. */
  oldEraEnd: bigint;
  /** The tailer's checkpoint just before the restore: every old-era change up to it had been captured. */
  capturedBefore: bigint;
}

export interface History {
  cluster: string;
  changes: RecordedChange[];
  lastEra: number;
  branches: Branch[]; // branches[i] began era i + 1
  /** (era, revision, key) → the recorded change. */
  byEra: Map<number, Map<string, RecordedChange>>;
  /** Every revision the recording accounts for, per era. */
  revisionsSeen: Map<number, Set<bigint>>;
  /** The highest revision recorded per era. */
  lastRecorded: Map<number, bigint>;
  /** The era whose change owns `revision` in the timeline of era `era` (undefined: a bump's hole). */
  eraOf(revision: bigint, era: number): number | undefined;
  /** Did a later restore roll this change back? (its era ended below it) */
  rolledBackBy(c: RecordedChange): Branch | undefined;
  inScope(c: RecordedChange): boolean;
}

export function indexHistory(input: CheckInput): History {
  const changes = input.recording.filter((l): l is RecordedChange => l.kind === 'change');
  const restores = input.recording.filter((l): l is Extract<RecorderLine, { kind: 'restore' }> => l.kind === 'restore');
  const restoreFaults = input.faults.filter((f): f is FaultRecord & { facts: RestoreFacts } => f.kind === 'restore' && f.facts?.kind === 'restore');
  const byEra = new Map<number, Map<string, RecordedChange>>();
  const revisionsSeen = new Map<number, Set<bigint>>();
  const lastRecorded = new Map<number, bigint>();
  for (const l of input.recording) {
    if (l.kind === 'restore') continue;
    const rev = BigInt(l.revision);
    if (!revisionsSeen.has(l.era)) revisionsSeen.set(l.era, new Set());
    revisionsSeen.get(l.era)?.add(rev);
    if (rev > (lastRecorded.get(l.era) ?? 0n)) lastRecorded.set(l.era, rev);
    if (l.kind === 'change') {
      if (!byEra.has(l.era)) byEra.set(l.era, new Map());
      byEra.get(l.era)?.set(rk(l.revision, l.key), l);
    }
  }
  const lastEra = restores.length;
  const eraOf = (revision: bigint, era: number): number | undefined => {
    for (let e = era; e > 0; e--) {
      const b = branches[e - 1] as Branch;
      if (revision > b.restoredHead) return e;
      if (revision > b.snapshot) return undefined; // a bumped restore's revisions that never existed
    }
    return 0;
  };
  const branches: Branch[] = [];
  restores.forEach((line, i) => {
    const fault = restoreFaults[i];
    const restoredHead = BigInt(line.restoredHead);
    const bump = fault ? BigInt(fault.facts.bump) : 0n;
    const snapshot = fault ? BigInt(fault.facts.snapshotRevision) : restoredHead;
    const oldEra = line.era - 1;
    branches.push({
      era: line.era,
      snapshot,
      restoredHead,
      bump,
      fault,
      liveAtSnapshot: liveAt(changes, snapshot, oldEra, (r) => eraOf(r, oldEra)),
      oldEraEnd: fault ? BigInt(fault.facts.oldEraEnd) : (lastRecorded.get(oldEra) ?? BigInt(line.lastRevision)),
      capturedBefore: fault ? BigInt(fault.facts.checkpointBefore) : 0n,
    });
  });
  return {
    cluster: input.cluster ?? 'local',
    changes,
    lastEra,
    branches,
    byEra,
    revisionsSeen,
    lastRecorded,
    eraOf,
    rolledBackBy: (c) => {
      const b = branches[c.era];
      return b && BigInt(c.revision) > b.snapshot ? b : undefined;
    },
    inScope: (c) => c.era < lastEra || BigInt(c.revision) <= input.finalRevision,
  };
}

/** Keys alive at `snapshot` in the timeline of `era`, each with its last put's revision. */
function liveAt(changes: RecordedChange[], snapshot: bigint, era: number, owner: (r: bigint) => number | undefined): Map<string, bigint> {
  const live = new Map<string, bigint>();
  for (const c of changes) {
    const rev = BigInt(c.revision);
    if (rev > snapshot || c.era > era || owner(rev) !== c.era) continue;
    if (c.type === 'put') live.set(c.key, rev);
    else live.delete(c.key);
  }
  return live;
}

// ---- the store, as the checker sees it ------------------------------------

/** The columns that make two writes of one (revision, key) the same change read the same way. */
const CONTENT = ['event_type', 'op', 'value', 'prev_value', 'token', 'epoch', 'grant_revision', 'holder', 'session', 'class', 'lease', 'origin', 'unprotected'];

export interface StoreIndex {
  /** The current timeline: (revision, key) → the row FINAL keeps. */
  current: Map<string, StoredEvent>;
  /** (timeline, revision, key) written with more than one content: every content. */
  flips: Array<{ timeline: number; rows: StoredEvent[] }>;
  /** Rolled-back rows by generation, (revision, key) → row. */
  rolledBack: Map<number, Map<string, RolledBackRow>>;
  quarantined: Set<string>;
}

const SNAPSHOT_TYPES = new Set(['snapshot-hold', 'unprotected-grant']);

/** FINAL's order (sql/110): the higher leadership term, then the newer write. */
const newer = (a: StoredEvent, b: StoredEvent): boolean => {
  const ta = BigInt(a.term ?? '0');
  const tb = BigInt(b.term ?? '0');
  return ta !== tb ? ta > tb : (a.ingested_at ?? '') > (b.ingested_at ?? '');
};

export function indexStore(input: CheckInput): StoreIndex {
  const groups = new Map<string, StoredEvent[]>();
  const rolledBack = new Map<number, Map<string, RolledBackRow>>();
  const addRolledBack = (r: RolledBackRow): void => {
    if (!rolledBack.has(r.generation)) rolledBack.set(r.generation, new Map());
    rolledBack.get(r.generation)?.set(rk(r.revision, r.key), r);
  };
  // A snapshot's rows are no change of etcd's (a store that kept no op says so by their type).
  for (const r of input.store.rolledBack ?? []) if (r.op !== '' || !SNAPSHOT_TYPES.has(r.event_type)) addRolledBack(r);
  for (const e of input.store.events) {
    const id = `${Number(e.timeline ?? 0)} ${rk(e.revision, e.key)}`;
    groups.set(id, [...(groups.get(id) ?? []), e]);
  }
  const current = new Map<string, StoredEvent>();
  const flips: StoreIndex['flips'] = [];
  for (const rows of groups.values()) {
    const first = rows[0] as StoredEvent;
    // A restore marks rows in place (sql/065: the same row written again with rolled_back_by / superseded_by set):
    // different marks are one content; different readings are a flip.
    const distinct = new Map(rows.map((r) => [CONTENT.map((c) => String(r[c] ?? '')).join('\u0000'), r]));
    if (distinct.size > 1) flips.push({ timeline: Number(first.timeline ?? 0), rows: [...distinct.values()] });
    const final = rows.reduce((a, b) => (newer(b, a) ? b : a));
    const rolledBackBy = Number(final.rolled_back_by ?? 0);
    if (rolledBackBy > 0)
      addRolledBack({ generation: rolledBackBy, revision: final.revision, key: final.key, event_type: final.event_type, op: final.op, value: final.value });
    else if (Number(final.superseded_by ?? 0) === 0) current.set(rk(final.revision, final.key), final);
    // superseded, never rolled back (a history that shares nothing with the new one): in neither account
  }
  return { current, flips, rolledBack, quarantined: new Set(input.store.quarantine.map((q) => rk(q.revision, q.key))) };
}

/** Does a stored row hold this recorded change (same op, and for a put the same value: a kept prefix by size and sha256, sql/290)? */
export function holds(row: { op: string; value: string; value_bytes?: unknown; value_sha256?: unknown }, c: RecordedChange): boolean {
  const sha256 = typeof row.value_sha256 === 'string' ? row.value_sha256 : '';
  const same = (): boolean => isKeptValueOf({ value: row.value, bytes: Number(row.value_bytes ?? 0), sha256 }, c.value);
  if (row.op === '') return c.type === 'delete' ? row.value === '' : same(); // a store that kept no op
  return row.op === c.type && (c.type === 'delete' || same());
}
