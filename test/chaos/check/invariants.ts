// The chaos checker's invariants, one function each, composed by checker.ts.
// Each returns the violations it alone names; none of them excuses anything
// the gaps module did not earn.
import type { RecordedChange } from '../recorder.js';
import type { StoredEvent, StoredGrant } from '../storeDump.js';
import type { Truth } from '../workload.js';
import type { EarnedGap } from './gaps.js';
import { holds, rk, type History, type StoreIndex } from './history.js';
import type { CheckInput, Violation } from './types.js';

type Add = (v: Omit<Violation, 'cluster'>) => void;

const short = (s: string, n = 80): string => (s.length > n ? `${s.slice(0, n)}…` : s);
const describe = (c: RecordedChange): string => `${c.type}${c.type === 'put' ? ` ${short(JSON.stringify(c.value), 60)}` : ''}`;

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

// ---- validity: a run the checker cannot see through proves nothing ---------

/** Every revision of every era is accounted for in the recording, up to where the run needed it. */
export function recordingContiguous(input: CheckInput, h: History): string[] {
  const invalid: string[] = [];
  for (let era = 0; era <= h.lastEra; era++) {
    const start = era === 0 ? 1n : (h.branches[era - 1]?.restoredHead ?? 0n);
    const needed =
      era === h.lastEra
        ? input.finalRevision
        : h.branches[era]?.fault
          ? BigInt(h.branches[era]?.fault?.facts.headBefore ?? 0)
          : (h.lastRecorded.get(era) ?? start);
    const seen = h.revisionsSeen.get(era) ?? new Set<bigint>();
    const last = h.lastRecorded.get(era) ?? start;
    if (last < needed) invalid.push(`checker blind: the recording of era ${era} ends at ${last}, the run needed it to ${needed}`);
    let holeFrom: bigint | undefined;
    let holes = 0;
    for (let r = start + 1n; r <= last; r++) {
      if (seen.has(r)) continue;
      holes++;
      holeFrom ??= r;
    }
    if (holes)
      invalid.push(`checker blind: the recording of era ${era} misses ${holes} revision(s) between ${start + 1n} and ${last}, the first at ${holeFrom}`);
  }
  return invalid;
}

export function runValid(input: CheckInput): string[] {
  const invalid: string[] = [];
  for (const f of input.faults.filter((x) => !x.ok)) invalid.push(`fault not injected as planned: ${f.kind}: ${f.detail}`);
  if (!input.caughtUp) invalid.push(`the tailer did not catch up to ${input.finalRevision}`);
  return invalid;
}

// ---- capture: every change once, in the record, or excused by an earned gap ----

export interface CaptureStats {
  checked: number;
  captured: number;
  capturedRolledBack: number;
  quarantined: number;
  inGaps: number;
  /** Which stored row holds each captured change of the current timeline (for classification). */
  rowOf: Map<RecordedChange, StoredEvent>;
}

export function capture(h: History, s: StoreIndex, gaps: EarnedGap[], add: Add): CaptureStats {
  const stats: CaptureStats = { checked: 0, captured: 0, capturedRolledBack: 0, quarantined: 0, inGaps: 0, rowOf: new Map() };
  const excusedBy = (c: RecordedChange, shared: boolean): EarnedGap | undefined => gaps.find((g) => g.excuses(c.era, BigInt(c.revision), shared));
  const rolledBackHolding = (c: RecordedChange, generation?: number): boolean => {
    for (const [gen, rows] of s.rolledBack) {
      if (generation !== undefined && gen !== generation) continue;
      const r = rows.get(rk(c.revision, c.key));
      if (r && holds(r, c)) return true;
    }
    return false;
  };
  for (const c of h.changes) {
    if (!h.inScope(c) || c.key.startsWith('/chaos')) continue;
    stats.checked++;
    const id = rk(c.revision, c.key);
    const rev = BigInt(c.revision);
    const branch = h.rolledBackBy(c);
    if (branch) {
      // Rolled back: it happened, and a restore made etcd forget it. Captured before, it must still be in the record.
      const gap = excusedBy(c, false); // a compaction gap (never captured), or its restore gap above the checkpoint then
      if (rolledBackHolding(c, branch.era)) stats.capturedRolledBack++;
      else if (s.quarantined.has(id)) stats.quarantined++;
      else if (gap) {
        stats.inGaps++;
        gap.line.excused++;
      } else if (rev <= branch.capturedBefore)
        add({
          kind: 'rolled-back-lost',
          key: c.key,
          revision: c.revision,
          era: c.era,
          expected: `${describe(c)}, captured before restore ${branch.era} (checkpoint ≥ ${branch.capturedBefore}), kept as rolled back`,
          got: 'not in the record',
        });
      else
        add({
          kind: 'lost',
          key: c.key,
          revision: c.revision,
          era: c.era,
          expected: `${describe(c)} (rolled back by restore ${branch.era}) in the record or in its restore gap`,
          got: 'neither',
        });
      continue;
    }
    const row = s.current.get(id);
    if (row && h.eraOf(rev, h.lastEra) === c.era && holds(row, c)) {
      stats.captured++;
      stats.rowOf.set(c, row);
      const token = grantToken(c);
      if (row.event_type === 'grant' && row.token !== '0' && token !== undefined && row.token !== String(token))
        add({
          kind: 'misrecorded',
          key: c.key,
          revision: c.revision,
          era: c.era,
          expected: `token ${token} (epoch × 2^48 + revision)`,
          got: `token ${row.token}`,
        });
    } else if (rolledBackHolding(c))
      stats.capturedRolledBack++; // shared with the next era, yet kept as rolled back: a restore the tailer could only prove later
    else if (s.quarantined.has(id)) stats.quarantined++;
    else {
      const gap = excusedBy(c, true);
      if (gap) {
        stats.inGaps++;
        gap.line.excused++;
      } else if (row)
        add({
          kind: 'misrecorded',
          key: c.key,
          revision: c.revision,
          era: c.era,
          expected: describe(c),
          got: `${row.op} ${row.event_type} ${short(JSON.stringify(row.value), 60)}`,
        });
      else add({ kind: 'lost', key: c.key, revision: c.revision, era: c.era, expected: describe(c), got: 'not in events, quarantine or an earned gap' });
    }
  }
  return stats;
}

/** The fencing token a recorded grant carries: its value's epoch × 2^48 + its revision (undefined when the value has no valid epoch). */
function grantToken(c: RecordedChange): bigint | undefined {
  const epoch = parseJson(c.value)?.epoch;
  return typeof epoch === 'number' && Number.isSafeInteger(epoch) && epoch >= 0 && epoch <= 0xffff ? (BigInt(epoch) << 48n) + BigInt(c.revision) : undefined;
}

// ---- flips and phantoms: what the record holds that it should not ----------

export function flips(s: StoreIndex, add: Add): void {
  for (const f of s.flips) {
    const first = f.rows[0] as StoredEvent;
    add({
      kind: 'flip',
      key: first.key,
      revision: first.revision,
      era: f.timeline,
      expected: 'one content per (timeline, revision, key)',
      got: f.rows
        .map((r) => `${r.event_type}${r.origin ? `/${String(r.origin)}` : ''} @ ${r.ingested_at ?? '?'}${r.term ? ` term ${r.term}` : ''}`)
        .join(' vs '),
    });
  }
}

export function phantoms(h: History, s: StoreIndex, add: Add): { phantoms: number; unverifiableTail: number } {
  let count = 0;
  let unverifiableTail = 0;
  for (const row of s.current.values()) {
    if (row.key.startsWith('/chaos')) continue;
    const rev = BigInt(row.revision);
    const era = h.eraOf(rev, h.lastEra);
    if (era !== undefined && h.byEra.get(era)?.has(rk(row.revision, row.key))) continue;
    count++;
    add({
      kind: 'phantom',
      key: row.key,
      revision: row.revision,
      era: era ?? -1,
      expected: 'a change etcd committed',
      got: `${row.op} ${row.event_type} that no era ${era ?? '(none: a bumped range)'} of the recording holds`,
    });
  }
  for (const [generation, rows] of s.rolledBack) {
    const branch = h.branches[generation - 1];
    for (const row of rows.values()) {
      const rev = BigInt(row.revision);
      const oldEra = generation - 1;
      const era = h.eraOf(rev, oldEra);
      if (era !== undefined && h.byEra.get(era)?.has(rk(row.revision, row.key))) continue;
      // Above what the recorder saw of the old era, yet within its true end: the recorder could not have seen it.
      if (branch && rev > (h.lastRecorded.get(oldEra) ?? 0n) && rev <= branch.oldEraEnd) {
        unverifiableTail++;
        continue;
      }
      count++;
      add({
        kind: 'phantom',
        key: row.key,
        revision: row.revision,
        era: oldEra,
        expected: `a change of era ${oldEra} (rolled back by restore ${generation})`,
        got: `${row.event_type} that era ${oldEra} never committed`,
      });
    }
  }
  return { phantoms: count, unverifiableTail };
}

// ---- classification: each change reads as what it was ----------------------

/** A row says "not made by the API" when a column of that meaning is set or its event type is not a plain grant. */
export function readsAsForeign(row: StoredEvent): boolean {
  if (row.event_type !== 'grant') return true;
  for (const [name, value] of Object.entries(row)) {
    if (!/foreign|origin|bypass|unverified/i.test(name)) continue;
    if (value === 1 || value === '1' || value === true) return true;
    if (typeof value === 'string' && value !== '' && value !== '0' && !/^api$/i.test(value)) return true;
  }
  return false;
}

const EXACTLY_DELETED = new Set(['manual-delete', 'forged-marker-delete', 'forged-force-delete']);

/** Faults during which no tailer process ran or could hear etcd: the platform killed (compact, tailer-kill) or stopped (tailer-pause). */
const NO_TAILER = new Set(['compact', 'tailer-kill', 'tailer-pause']);

/**
 * A hold put, deleted by hand and its lease revoked, all inside one window in which no tailer process ran: etcd
 * keeps no lease history, so nothing anyone could read afterwards tells that delete from an expiry. Only this is
 * excused, and counted (`unwitnessable`); a put or a delete outside such a window must read `deleted`.
 */
function unwitnessable(input: CheckInput, truth: Truth, truthByKey: Map<string, Truth[]>): boolean {
  if (truth.expect !== 'manual-delete') return false;
  const put = (truthByKey.get(truth.key) ?? []).filter((t) => t.expect === 'foreign-grant' && t.at <= truth.at).at(-1);
  if (!put) return false;
  return input.faults.some((f) => f.ok && NO_TAILER.has(f.kind) && f.startedAt <= put.at && truth.at <= f.endedAt);
}

export function classification(input: CheckInput, h: History, rowOf: Map<RecordedChange, StoredEvent>, add: Add): { unwitnessable: number } {
  let unwitnessed = 0;
  const allByKey = new Map<string, Truth[]>();
  for (const t of input.truth) allByKey.set(t.key, [...(allByKey.get(t.key) ?? []), t]);
  const truthAt = new Map<string, Truth>();
  const truthByKey = new Map<string, Truth[]>();
  for (const t of input.truth) {
    if (t.revision) truthAt.set(rk(t.revision, t.key), t);
    else truthByKey.set(t.key, [...(truthByKey.get(t.key) ?? []), t]);
  }
  const forged = new Set(input.truth.filter((t) => t.expect === 'forged-force' || t.expect === 'forged-marker-delete').map((t) => `${t.revision ?? ''}`));
  const markersAt = new Map<string, RecordedChange[]>();
  for (const c of h.changes) {
    if (c.type !== 'put' || !(c.key.startsWith('/sys/mark/') || c.key.startsWith('/sys/force/'))) continue;
    if (forged.has(c.revision)) continue; // the run's own forgeries: their truth says how the delete reads
    const k = `${c.era} ${c.revision}`;
    markersAt.set(k, [...(markersAt.get(k) ?? []), c]);
  }
  const epochPutAt = new Set(h.changes.filter((c) => c.type === 'put' && c.key === '/sys/epoch').map((c) => `${c.era} ${c.revision}`));
  const wrong = (c: RecordedChange, row: StoredEvent, expected: string): void =>
    add({
      kind: 'misclassified',
      key: c.key,
      revision: c.revision,
      era: c.era,
      expected,
      got: `${row.event_type}${row.origin ? ` (origin ${String(row.origin)})` : ''}`,
    });
  // A grant's row is what grant history and exports show: a foreign grant whose event reads foreign must not read api there.
  const grantRows = new Map<string, StoredGrant[]>();
  for (const g of input.store.grants) grantRows.set(`${g.grant_revision} ${g.key}`, [...(grantRows.get(`${g.grant_revision} ${g.key}`) ?? []), g]);
  for (const [c, row] of rowOf) {
    if (c.key.startsWith('/sys/class/')) {
      // A class put by hand must say it is not the API's (the lock API grants under nothing else).
      const t = truthAt.get(rk(c.revision, c.key));
      if (t?.expect === 'foreign-class' && c.type === 'put' && String(row.origin ?? '') !== 'foreign') wrong(c, row, 'a class put by hand: origin foreign');
      continue;
    }
    if (c.key === '/sys/epoch') {
      // An epoch put by hand must say it is not the API's (the truth names the value: another era may reuse the revision).
      const t = truthAt.get(rk(c.revision, c.key));
      if (t?.expect === 'foreign-epoch' && c.type === 'put' && (t.value === undefined || t.value === c.value) && String(row.origin ?? '') !== 'foreign')
        wrong(c, row, 'an epoch put by hand: origin foreign');
      continue;
    }
    if (!c.key.startsWith('/l/')) continue;
    const truth = truthAt.get(rk(c.revision, c.key)) ?? (c.type === 'delete' ? truthByKey.get(c.key)?.find((t) => t.expect !== 'foreign-grant') : undefined);
    if (c.type === 'put') {
      if (truth?.expect === 'foreign-grant' && !readsAsForeign(row)) wrong(c, row, `a grant not made by the API${truth.note ? ` (${truth.note})` : ''}`);
      else if (truth?.expect === 'foreign-grant') {
        // This grant's rows (its own and any carried into a later timeline: the same token); after a restore without a
        // bump another timeline may hold another grant at that (revision, key), under another epoch's token.
        const api = (grantRows.get(`${c.revision} ${c.key.slice(3)}`) ?? []).find(
          (g) => String(g.token) === String(row.token) && g.origin !== undefined && g.origin !== 'foreign',
        );
        if (api)
          add({
            kind: 'misclassified',
            key: c.key,
            revision: c.revision,
            era: c.era,
            expected: 'its grant row foreign, as its grant event reads',
            got: `grant row origin ${api.origin} (end ${api.end_kind || 'open'}, timeline ${api.timeline ?? 0})`,
          });
      }
      continue;
    }
    if (truth && EXACTLY_DELETED.has(truth.expect)) {
      if (row.event_type === 'expiry' && unwitnessable(input, truth, allByKey)) unwitnessed++;
      else if (row.event_type !== 'deleted') wrong(c, row, `deleted (${truth.expect}: a hand delete while its lease lived)`);
      continue;
    }
    if (truth?.expect === 'force') {
      if (row.event_type !== 'force-release') wrong(c, row, 'force-release');
      continue;
    }
    if (truth?.expect === 'revoked') {
      if (row.event_type === 'expiry') wrong(c, row, 'a delete by the force-release that revoked its session, not an expiry');
      continue;
    }
    if (truth?.expect === 'expiry') {
      // A hold left to lapse may first be removed by an epoch advance (it deletes every restored hold in its txn).
      const advanced = row.event_type === 'epoch-release' && epochPutAt.has(`${c.era} ${c.revision}`);
      if (row.event_type !== 'expiry' && !advanced) wrong(c, row, `expiry${truth.note ? ` (${truth.note})` : ''}`);
      continue;
    }
    const markers = markersAt.get(`${c.era} ${c.revision}`) ?? [];
    const force = markers.find((m) => m.key.startsWith('/sys/force/') && parseJson(m.value)?.key === c.key.slice(3));
    const mark = markers.find((m) => m.key.startsWith('/sys/mark/'));
    if (force) {
      if (row.event_type !== 'force-release') wrong(c, row, 'force-release (a force record at the same revision)');
    } else if (mark) {
      const kind = parseJson(mark.value)?.kind;
      if (row.event_type === 'expiry') wrong(c, row, `${String(kind)} (a marker at the same revision)`);
      else if ((kind === 'release' || kind === 'session-close') && row.event_type !== kind) wrong(c, row, String(kind));
    }
  }
  return { unwitnessable: unwitnessed };
}

// ---- grants: no overlap, no ghost, tokens only grow ------------------------

export function grants(input: CheckInput, add: Add): number {
  // Every timeline's grants, each once (sql/065): a grant carried into a later timeline counts as that timeline's.
  const protectedGrants = input.store.grants.filter(
    (g) => g.unprotected === 0 && g.token !== '0' && (Number(g.superseded_by ?? 0) === 0 || Number(g.rolled_back_by ?? 0) > 0),
  );
  const timelineOf = (g: (typeof protectedGrants)[number]): number => Number(g.timeline ?? 0);
  const byKey = new Map<string, typeof protectedGrants>();
  for (const g of protectedGrants) byKey.set(`${timelineOf(g)} ${g.key}`, [...(byKey.get(`${timelineOf(g)} ${g.key}`) ?? []), g]);
  for (const list of byKey.values()) {
    list.sort((a, b) => (BigInt(a.grant_revision) < BigInt(b.grant_revision) ? -1 : 1));
    for (let i = 0; i + 1 < list.length; i++) {
      const a = list[i] as (typeof list)[number];
      const b = list[i + 1] as (typeof list)[number];
      const base = { key: a.key, revision: a.grant_revision, era: timelineOf(a) };
      if (a.end_kind === '')
        add({
          ...base,
          kind: 'overlap',
          expected: `grant @ ${a.grant_revision} ended before grant @ ${b.grant_revision} (token ${b.token})`,
          got: 'never ended in the log',
        });
      else if (BigInt(a.end_revision) > BigInt(b.grant_revision))
        add({ ...base, kind: 'overlap', expected: `grant @ ${a.grant_revision} ended before grant @ ${b.grant_revision}`, got: `ended @ ${a.end_revision}` });
    }
    const last = list[list.length - 1];
    if (last && Number(last.superseded_by ?? 0) === 0 && last.end_kind === '' && BigInt(last.grant_revision) <= input.finalRevision) {
      const held = input.finalHolds.get(`/l/${last.key}`);
      if (held !== last.grant_revision)
        add({
          kind: 'ghost-open-grant',
          key: last.key,
          revision: last.grant_revision,
          era: timelineOf(last),
          expected: `etcd at ${input.finalRevision} holds the grant of ${last.grant_revision} (token ${last.token})`,
          got: held ? `a grant of ${held}` : 'nothing',
        });
    }
  }
  return protectedGrants.length;
}

/** Fencing tokens strictly increase per key within an epoch, in the recorder's real-time order across restores. */
export function tokenOrder(input: CheckInput, h: History, add: Add): number {
  const direct = new Set(input.truth.filter((t) => t.expect !== 'force' && t.expect !== 'revoked').map((t) => t.key));
  const lastToken = new Map<string, { epoch: number; token: bigint; revision: string; era: number }>();
  let apiGrants = 0;
  for (const c of h.changes) {
    if (c.type !== 'put' || !c.key.startsWith('/l/') || c.version !== '1' || direct.has(c.key) || c.key.startsWith('/l/chaos/')) continue;
    apiGrants++;
    const v = parseJson(c.value);
    if (!v || typeof v.epoch !== 'number' || !Number.isSafeInteger(v.epoch)) continue;
    const token = (BigInt(v.epoch) << 48n) + BigInt(c.revision);
    const prev = lastToken.get(c.key);
    // Across epochs too: a fencing token never goes backwards on a key, whatever the epoch (an epoch that went back —
    // a restored /sys/epoch the advance did not fence — is that very failure; within one epoch, a rewound revision).
    if (prev && token <= prev.token)
      add({
        kind: 'token-order',
        key: c.key,
        revision: c.revision,
        era: c.era,
        expected: `a token above ${prev.token} (rev ${prev.revision}, era ${prev.era}, epoch ${prev.epoch})`,
        got: `${token} (epoch ${v.epoch})`,
      });
    lastToken.set(c.key, { epoch: v.epoch, token, revision: c.revision, era: c.era });
  }
  return apiGrants;
}

/**
 * No grant while /sys/epoch is one the API did not write: from a hand-put epoch (a `foreign-epoch` truth) to the next
 * /sys/epoch put of its era (the two-person advance), every hold put must read as not the API's — the lock API seals,
 * and its acquire txn compares /sys/epoch, so a grant there is the API obeying the forgery (or the tailer misreading).
 */
export function sealedByHandEpoch(input: CheckInput, h: History, rowOf: Map<RecordedChange, StoredEvent>, add: Add): number {
  const hand = new Set(input.truth.filter((t) => t.expect === 'foreign-epoch').map((t) => `${t.revision ?? ''} ${t.value ?? ''}`));
  const open = new Map<number, RecordedChange>(); // era → the hand-put epoch in force
  let windows = 0;
  for (const c of h.changes) {
    if (c.key === '/sys/epoch') {
      if (c.type === 'put' && (hand.has(`${c.revision} ${c.value}`) || hand.has(`${c.revision} `))) {
        open.set(c.era, c);
        windows++;
      } else open.delete(c.era);
      continue;
    }
    const since = open.get(c.era);
    if (!since || c.type !== 'put' || !c.key.startsWith('/l/')) continue;
    const row = rowOf.get(c);
    if (row && !readsAsForeign(row)) {
      add({
        kind: 'granted-while-sealed',
        key: c.key,
        revision: c.revision,
        era: c.era,
        expected: `no API grant while /sys/epoch is the one put by hand at revision ${since.revision}`,
        got: `a grant reading ${String(row.origin ?? 'api')}`,
      });
    }
  }
  return windows;
}

// ---- the force archive ------------------------------------------------------

export function archive(input: CheckInput, h: History, add: Add): number {
  const forgedIds = new Set(input.truth.filter((t) => t.expect === 'forged-force').map((t) => t.key.slice('/sys/force/'.length)));
  const ids = new Set(h.changes.filter((c) => c.type === 'put' && c.key.startsWith('/sys/force/')).map((c) => c.key.slice('/sys/force/'.length)));
  for (const t of input.truth) {
    if (t.expect === 'request-refused' && ids.has(t.key.slice('/sys/force/'.length))) {
      add({
        kind: 'forged-approved',
        key: t.key,
        revision: '',
        era: -1,
        expected: 'a two-person request edited by hand is never carried out',
        got: 'a force record under its id',
      });
    }
  }
  const refusedIds = new Set(input.truth.filter((t) => t.expect === 'request-refused').map((t) => t.key.slice('/sys/force/'.length)));
  let genuine = 0;
  for (const id of ids) {
    if (refusedIds.has(id)) continue; // named above
    const archived = input.archiveTexts.some((t) => t.includes(id));
    if (forgedIds.has(id)) {
      if (archived)
        add({
          kind: 'forged-archived',
          key: `/sys/force/${id}`,
          revision: '',
          era: -1,
          expected: 'a force record nobody approved is never archived as genuine',
          got: 'in the archive',
        });
      continue;
    }
    genuine++;
    if (!archived) add({ kind: 'not-archived', key: `/sys/force/${id}`, revision: '', era: -1, expected: 'in an archive object', got: 'in none' });
  }
  if (input.grantsExport && !input.grantsExport.ok)
    add({
      kind: 'grants-export',
      key: '',
      revision: '',
      era: -1,
      expected: 'lockaudit export grants: written (every grant agrees with its events)',
      got: short(input.grantsExport.output.trim().split('\n').slice(0, 4).join(' | '), 300),
    });
  if (!input.archiveVerify.ok)
    add({
      kind: 'archive-verify',
      key: '',
      revision: '',
      era: -1,
      expected: 'lockaudit archive verify: ok',
      got: short(input.archiveVerify.output.trim().split('\n').slice(0, 4).join(' | '), 300),
    });
  return genuine;
}
