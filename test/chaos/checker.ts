// The invariants a chaos run checks at the end, from the recorder's file (what
// etcd committed), the truth file (what the run itself did and how it must
// read), what lockaudit stored (read from ClickHouse after it stopped), the
// etcd keyspace at the final revision, and the force archive.
import type { RecordedChange, RecorderLine } from './recorder.js';
import type { StoreDump, StoredEvent } from './storeDump.js';
import type { Truth } from './workload.js';

export type ViolationKind = 'restore-unrecorded' | 'lost' | 'duplicated' | 'misrecorded' | 'misclassified' | 'overlap' | 'token-order' | 'ghost-open-grant' | 'not-archived' | 'archive-verify' | 'phantom';

export interface Violation {
  kind: ViolationKind;
  detail: string;
}

export interface CheckInput {
  recording: RecorderLine[];
  truth: Truth[];
  store: StoreDump;
  /** The final revision everything was caught up to (the last era's). */
  finalRevision: bigint;
  /** Holds in etcd at finalRevision: key → create revision. */
  finalHolds: Map<string, string>;
  /** Texts of every object in the force archive. */
  archiveTexts: string[];
  archiveVerify: { ok: boolean; output: string };
}

export interface CheckResult {
  changesChecked: number;
  captured: number;
  quarantined: number;
  inGaps: number;
  lost: number;
  duplicated: number;
  misrecorded: number;
  misclassified: number;
  phantoms: number;
  grantsChecked: number;
  forceRecords: number;
  /** Holds created by the API (not by the run's direct writes): how much the simulator really did. */
  apiGrants: number;
  eras: number;
  violations: Violation[];
  byKind: Map<ViolationKind, number>;
}

const rk = (revision: string, key: string): string => `${revision} ${key}`;

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A row says "not made by the API" when a column of that meaning is set (whatever the fix names it) or its event type is not a plain grant. */
function readsAsForeign(row: StoredEvent): boolean {
  if (row.event_type !== 'grant') return true;
  for (const [name, value] of Object.entries(row)) {
    if (!/foreign|origin|bypass|unverified/i.test(name)) continue;
    if (value === 1 || value === '1' || value === true) return true;
    if (typeof value === 'string' && value !== '' && value !== '0' && !/^api$/i.test(value)) return true;
  }
  return false;
}

export function check(input: CheckInput): CheckResult {
  const violations: Violation[] = [];
  const add = (kind: ViolationKind, detail: string): void => {
    violations.push({ kind, detail });
  };
  const changes = input.recording.filter((l): l is RecordedChange => l.kind === 'change');
  const eras = 1 + input.recording.filter((l) => l.kind === 'restore').length;
  const lastEra = eras - 1;
  const inScope = changes.filter((c) => c.era < lastEra || BigInt(c.revision) <= input.finalRevision);

  const rows = new Map<string, StoredEvent[]>();
  for (const e of input.store.events) rows.set(rk(e.revision, e.key), [...(rows.get(rk(e.revision, e.key)) ?? []), e]);
  const quarantined = new Set(input.store.quarantine.map((q) => rk(q.revision, q.key)));
  const gaps = input.store.gaps.map((g) => ({ from: BigInt(g.from_revision), to: BigInt(g.to_revision), reason: g.reason }));
  const inGap = (revision: string): boolean => gaps.some((g) => g.from <= BigInt(revision) && BigInt(revision) <= g.to);

  // ---- every committed change is in the log once, or quarantined, or inside a gap ----
  let captured = 0;
  let quarantinedCount = 0;
  let inGaps = 0;
  const capturedRow = new Map<RecordedChange, StoredEvent>();
  const matched = new Set<StoredEvent>();
  for (const c of inScope) {
    const at = rows.get(rk(c.revision, c.key)) ?? [];
    const same = at.filter((r) => r.op === c.type && (c.type === 'delete' || r.value === c.value));
    if (same.length >= 1) {
      captured++;
      capturedRow.set(c, same[0] as StoredEvent);
      for (const r of same) matched.add(r);
      if (same.length > 1) add('duplicated', `${c.key} @ ${c.revision}: ${same.length} rows under FINAL`);
    } else if (quarantined.has(rk(c.revision, c.key))) {
      quarantinedCount++;
    } else if (inGap(c.revision)) {
      inGaps++;
    } else if (at.length > 0) {
      add('misrecorded', `${c.key} @ ${c.revision} (era ${c.era}, ${c.type}): the log's row there holds ${at[0]?.op} ${JSON.stringify(at[0]?.value).slice(0, 80)} instead`);
    } else {
      add('lost', `${c.key} @ ${c.revision} (era ${c.era}, ${c.type}${c.type === 'put' ? ` ${JSON.stringify(c.value).slice(0, 60)}` : ''}): not in events, quarantine or any gap`);
    }
  }
  // Rows of the log that match no committed change (a restore's reused revisions make these ambiguous: counted, named only without restores).
  let phantoms = 0;
  const recordedKeys = new Set(changes.map((c) => rk(c.revision, c.key)));
  for (const e of input.store.events) {
    if (BigInt(e.revision) > input.finalRevision && eras === 1) continue;
    if (!recordedKeys.has(rk(e.revision, e.key)) && !e.key.startsWith('/chaos')) {
      phantoms++;
      if (eras === 1) add('phantom', `${e.key} @ ${e.revision}: ${e.event_type} in the log, never committed`);
    }
  }

  // ---- how each change reads ----
  const truthAt = new Map<string, Truth>();
  const truthByKey = new Map<string, Truth[]>();
  for (const t of input.truth) {
    if (t.revision) truthAt.set(rk(t.revision, t.key), t);
    else truthByKey.set(t.key, [...(truthByKey.get(t.key) ?? []), t]);
  }
  const markersAt = new Map<string, RecordedChange[]>(); // era+revision → marker puts
  for (const c of changes) {
    if (c.type === 'put' && (c.key.startsWith('/sys/mark/') || c.key.startsWith('/sys/force/'))) {
      const k = `${c.era} ${c.revision}`;
      markersAt.set(k, [...(markersAt.get(k) ?? []), c]);
    }
  }
  let misclassified = 0;
  const wrong = (c: RecordedChange, row: StoredEvent, expected: string): void => {
    misclassified++;
    add('misclassified', `${c.key} @ ${c.revision}: recorded as ${row.event_type}, expected ${expected}`);
  };
  // A change of an era a restore rolled back, inside the gap that names the restore: the log's row at its
  // (revision, key), if any, is the later era's change at the same revision number, so there is nothing of
  // this change to classify (its presence is the restore gap's to account for).
  const restoreGaps = gaps.filter((g) => /restor/i.test(g.reason));
  const rolledBack = (c: RecordedChange): boolean => c.era < lastEra && restoreGaps.some((g) => g.from <= BigInt(c.revision) && BigInt(c.revision) <= g.to);
  for (const c of inScope) {
    const row = capturedRow.get(c);
    if (!row || !c.key.startsWith('/l/') || rolledBack(c)) continue;
    const truth = truthAt.get(rk(c.revision, c.key)) ?? (c.type === 'delete' ? truthByKey.get(c.key)?.find((t) => t.expect !== 'foreign-grant') : undefined);
    if (c.type === 'put') {
      if (truth?.expect === 'foreign-grant' && !readsAsForeign(row)) wrong(c, row, 'a grant not made by the API');
      continue;
    }
    const markers = markersAt.get(`${c.era} ${c.revision}`) ?? [];
    const force = markers.find((m) => m.key.startsWith('/sys/force/') && parseJson(m.value)?.key === c.key.slice(3));
    const mark = markers.find((m) => m.key.startsWith('/sys/mark/'));
    if (force) {
      if (row.event_type !== 'force-release') wrong(c, row, 'force-release (a force record at the same revision)');
    } else if (truth?.expect === 'force') {
      if (row.event_type !== 'force-release') wrong(c, row, 'force-release');
    } else if (mark) {
      const kind = parseJson(mark.value)?.kind;
      if (row.event_type === 'expiry') wrong(c, row, `${String(kind)} (a marker at the same revision)`);
      else if ((kind === 'release' || kind === 'session-close') && row.event_type !== kind) wrong(c, row, String(kind));
    } else if (truth?.expect === 'manual-delete' || truth?.expect === 'revoked') {
      if (row.event_type === 'expiry') wrong(c, row, truth.expect === 'revoked' ? 'a delete by the force-release that revoked its session' : 'a delete that was no expiry (its lease was alive)');
    } else if (truth?.expect === 'expiry') {
      if (row.event_type !== 'expiry') wrong(c, row, 'expiry');
    }
  }

  // ---- no two protected grants on one key overlap; every open grant is held at the end ----
  const protectedGrants = input.store.grants.filter((g) => g.unprotected === 0 && g.token !== '0');
  const byKey = new Map<string, typeof protectedGrants>();
  for (const g of protectedGrants) byKey.set(g.key, [...(byKey.get(g.key) ?? []), g]);
  for (const [key, list] of byKey) {
    list.sort((a, b) => (BigInt(a.grant_revision) < BigInt(b.grant_revision) ? -1 : 1));
    for (let i = 0; i + 1 < list.length; i++) {
      const a = list[i] as (typeof list)[number];
      const b = list[i + 1] as (typeof list)[number];
      if (a.end_kind === '') add('overlap', `${key}: grant @ ${a.grant_revision} (token ${a.token}) never ended in the log, yet grant @ ${b.grant_revision} (token ${b.token}) followed`);
      else if (BigInt(a.end_revision) > BigInt(b.grant_revision)) add('overlap', `${key}: grant @ ${a.grant_revision} ended @ ${a.end_revision}, after grant @ ${b.grant_revision}`);
    }
    const last = list[list.length - 1];
    if (last && last.end_kind === '' && BigInt(last.grant_revision) <= input.finalRevision) {
      const held = input.finalHolds.get(`/l/${key}`);
      if (held !== last.grant_revision) add('ghost-open-grant', `${key}: open in the log since ${last.grant_revision} (token ${last.token}); etcd at ${input.finalRevision} ${held ? `holds a grant of ${held}` : 'holds nothing'}`);
    }
  }

  // ---- fencing tokens strictly increase per key within an epoch (real-time order, across restores) ----
  const foreignKeys = new Set(input.truth.filter((t) => t.expect !== 'force' && t.expect !== 'revoked').map((t) => t.key));
  const lastToken = new Map<string, { epoch: number; token: bigint; revision: string; era: number }>();
  let apiGrants = 0;
  for (const c of changes) {
    if (c.type !== 'put' || !c.key.startsWith('/l/') || c.version !== '1' || foreignKeys.has(c.key) || c.key.startsWith('/l/chaos/')) continue;
    apiGrants++;
    const v = parseJson(c.value);
    if (!v || typeof v.epoch !== 'number' || !Number.isSafeInteger(v.epoch)) continue;
    const token = (BigInt(v.epoch) << 48n) + BigInt(c.revision);
    const prev = lastToken.get(c.key);
    if (prev && prev.epoch === v.epoch && token <= prev.token) add('token-order', `${c.key}: token ${token} (rev ${c.revision}, era ${c.era}) after token ${prev.token} (rev ${prev.revision}, era ${prev.era}) in epoch ${v.epoch}`);
    lastToken.set(c.key, { epoch: v.epoch, token, revision: c.revision, era: c.era });
  }

  // ---- every force record is archived, and the archive verifies ----
  const forceIds = new Set(changes.filter((c) => c.type === 'put' && c.key.startsWith('/sys/force/')).map((c) => c.key.slice('/sys/force/'.length)));
  for (const id of forceIds) if (!input.archiveTexts.some((t) => t.includes(id))) add('not-archived', `force record ${id} is in no archive object`);
  if (!input.archiveVerify.ok) add('archive-verify', `lockaudit archive verify failed: ${input.archiveVerify.output.trim().split('\n').slice(0, 4).join(' | ')}`);

  // ---- a restore is a discontinuity the log names as such (not as compaction, not as nothing) ----
  for (const l of input.recording) {
    if (l.kind !== 'restore') continue;
    if (!input.store.gaps.some((g) => /restor/i.test(g.reason))) add('restore-unrecorded', `etcd was restored (head ${l.lastRevision} → ${l.restoredHead}); no gap in the log names a restore (gaps: ${input.store.gaps.map((g) => g.reason).join('; ') || 'none'})`);
  }

  const byKind = new Map<ViolationKind, number>();
  for (const v of violations) byKind.set(v.kind, (byKind.get(v.kind) ?? 0) + 1);
  return {
    changesChecked: inScope.length,
    captured,
    quarantined: quarantinedCount,
    inGaps,
    lost: byKind.get('lost') ?? 0,
    duplicated: (byKind.get('duplicated') ?? 0) + (byKind.get('phantom') ?? 0),
    misrecorded: byKind.get('misrecorded') ?? 0,
    misclassified,
    phantoms,
    grantsChecked: protectedGrants.length,
    forceRecords: forceIds.size,
    apiGrants,
    eras,
    violations,
    byKind,
  };
}
