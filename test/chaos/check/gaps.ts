// Gaps must be earned. A gap the tailer wrote excuses a change only when a
// fault this run injected explains it and the gap is no wider than that fault
// allows:
//   compaction: within (checkpoint when the platform was killed, compaction
//     revision], detected while that fault ran — it excuses the changes of the
//     fault's era in that range (from the era's branch point when that
//     checkpoint was still the previous timeline's: compactionBound);
//   restore: its own gap (one per restore, by generation), from no earlier
//     than the last revision still visible at the snapshot + 1 and no later
//     than the snapshot + 1, up to the old era's end (or snapshot + bump) — it
//     excuses only old-era changes the tailer had not captured before the
//     restore (above its checkpoint then), and, for a bumped restore (history
//     compacted), shared changes it could not read again.
// An unexplained gap, a gap wider than its fault, two faults in one gap, and a
// restore without a gap of its own are violations.
import type { StoredGap } from '../storeDump.js';
import type { Branch, History } from './history.js';
import type { CheckInput, GapLine, Violation } from './types.js';

/** How long after a fault ended its gap may still be detected (the platform restarts, elects, reads). */
const DETECTION_SLACK_MS = 120_000;

export interface EarnedGap {
  from: bigint;
  to: bigint;
  line: GapLine;
  /** May this gap excuse that change (era, revision)? */
  excuses(era: number, revision: bigint, capturedRolledBackRange: boolean): boolean;
}

const isRestoreGap = (g: StoredGap): boolean => (g.kind ? g.kind === 'restore' : /restor/i.test(g.reason));
const ms = (t: string): number => Date.parse(`${t.replace(' ', 'T')}Z`);

export function earnGaps(input: CheckInput, h: History): { earned: EarnedGap[]; lines: GapLine[]; violations: Violation[] } {
  const violations: Violation[] = [];
  const lines: GapLine[] = [];
  const earned: EarnedGap[] = [];
  const v = (kind: Violation['kind'], g: StoredGap | undefined, era: number, expected: string, got: string): void => {
    violations.push({ kind, cluster: h.cluster, key: '', revision: g ? `${g.from_revision}..${g.to_revision}` : '', era, expected, got });
  };
  const restoreGaps = input.store.gaps.filter(isRestoreGap);
  const used = new Set<StoredGap>();

  // ---- restores: each its own gap, by generation (or, in stores without one, by order) ----
  h.branches.forEach((b, i) => {
    const gap = restoreGaps.find((g) => g.generation === b.era) ?? (restoreGaps.every((g) => g.generation === undefined) ? restoreGaps[i] : undefined);
    if (!gap || used.has(gap)) {
      v(
        'restore-unrecorded',
        undefined,
        b.era,
        `a restore gap of its own (restore ${b.era}: snapshot ${b.snapshot}, old era to ${b.oldEraEnd})`,
        gap
          ? 'its gap stands for another restore'
          : `none (gaps: ${input.store.gaps.map((x) => `${x.from_revision}..${x.to_revision} ${x.kind ?? x.reason}`).join('; ') || 'none'})`,
      );
      return;
    }
    used.add(gap);
    const from = BigInt(gap.from_revision);
    const to = BigInt(gap.to_revision);
    const restoredTop = b.oldEraEnd > b.snapshot + b.bump ? b.oldEraEnd : b.snapshot + b.bump;
    // A compaction of the restored etcd before the tailer found the restore (seed 45: compacted 10 s after a bumped
    // restore, while the platform was down) took the new era's first changes with it: nobody can read where the bump
    // ended and they began, so the restore's gap reaches that compaction — and stands for those changes.
    const compactedFirst = newEraCompaction(input, b, ms(gap.detected_at));
    const top = compactedFirst !== undefined && compactedFirst > restoredTop ? compactedFirst : restoredTop;
    const provable = provableDivergence(input, h, b, ms(gap.detected_at));
    const bound = `from ${provable + 1n}..${b.snapshot + 1n}, to ≤ ${top}${top !== restoredTop ? ` (compacted before the restore was found; restored etcd to ${restoredTop})` : ''}`;
    const ok = from >= provable + 1n && from <= b.snapshot + 1n && to <= top;
    const line: GapLine = {
      from: gap.from_revision,
      to: gap.to_revision,
      kind: 'restore',
      width: String(to - from + 1n),
      fault: `restore ${b.era}${b.fault ? ` at ${new Date(b.fault.startedAt).toISOString()}` : ''}`,
      bound,
      excused: 0,
      verdict: ok ? 'earned' : 'gap-too-wide',
    };
    lines.push(line);
    if (!ok) {
      v('gap-too-wide', gap, b.era - 1, `a restore gap within ${bound}`, `${from}..${to}`);
      return;
    }
    earned.push({
      from,
      to,
      line,
      excuses: (era, revision, shared) =>
        restoreExcuses(b, from, to, era, revision, shared) ||
        (era === b.era && compactedFirst !== undefined && revision > restoredTop && revision <= to && revision <= compactedFirst),
    });
  });
  for (const g of restoreGaps) {
    if (used.has(g)) continue;
    lines.push({
      from: g.from_revision,
      to: g.to_revision,
      kind: 'restore',
      width: String(BigInt(g.to_revision) - BigInt(g.from_revision) + 1n),
      fault: 'none',
      bound: '—',
      excused: 0,
      verdict: 'gap-unexplained',
    });
    v(
      'gap-unexplained',
      g,
      -1,
      'a restore the run injected',
      `a restore gap (generation ${g.generation ?? '?'}) with no restore of its own: ${g.reason.slice(0, 160)}`,
    );
  }

  // ---- compactions: by the time they were detected, held to the fault's revisions ----
  const compacts = input.faults.filter((f) => f.kind === 'compact' && f.facts?.kind === 'compact');
  for (const g of input.store.gaps.filter((x) => !isRestoreGap(x))) {
    const from = BigInt(g.from_revision);
    const to = BigInt(g.to_revision);
    const at = ms(g.detected_at);
    const candidates = compacts.filter((f) => at >= f.startedAt && at <= f.endedAt + DETECTION_SLACK_MS);
    // The restore that began the fault's era: a restore fault of the era before.
    const restoreEnded = (era: number): number | undefined => input.faults.find((x) => x.kind === 'restore' && x.era === era - 1)?.endedAt;
    const bounds = candidates.map((f) => ({ f, ...compactionBound(f, restoreGaps, restoreEnded(f.era)) }));
    const fits = bounds.filter((b) => from >= b.lo && to <= b.hi);
    const line: GapLine = {
      from: g.from_revision,
      to: g.to_revision,
      kind: 'compaction',
      width: String(to - from + 1n),
      fault: 'none',
      bound: bounds.map((b) => `${b.lo}..${b.hi}`).join(' | ') || '—',
      excused: 0,
      verdict: 'earned',
    };
    lines.push(line);
    const fit = fits[0];
    if (fit && fits.length === 1) {
      line.fault = `compact at ${new Date(fit.f.startedAt).toISOString()} (era ${fit.f.era})`;
      line.bound = `${fit.lo}..${fit.hi}`;
      const era = fit.f.era;
      earned.push({ from, to, line, excuses: (e, revision) => revision >= from && revision <= to && h.eraOf(revision, era) === e });
    } else if (fits.length > 1 || (bounds.length > 1 && bounds.some((b) => from >= b.lo) && bounds.some((b) => to <= b.hi))) {
      line.verdict = 'gap-shared';
      v('gap-shared', g, -1, 'one gap per compaction', `one gap for ${bounds.length} compactions (${line.bound})`);
    } else if (bounds.length) {
      line.verdict = 'gap-too-wide';
      v('gap-too-wide', g, bounds[0]?.f.era ?? -1, `a compaction gap within ${line.bound}`, `${from}..${to}`);
    } else {
      line.verdict = 'gap-unexplained';
      v('gap-unexplained', g, -1, 'a compaction the run injected, detected while it ran', `a gap at ${g.detected_at}: ${g.reason.slice(0, 160)}`);
    }
  }
  return { earned, lines, violations };
}

/**
 * The range a compact fault may leave a gap in: (checkpoint the API reported at the kill, compaction revision].
 * That checkpoint is the previous timeline's when the tailer had not yet recorded the restore that began the fault's
 * era (its gap detected after the fault began: the timeline is written after it) — then nothing of this era was
 * captured above its branch point, and the range starts at the restore gap's own start (30-minute chaos run, seed 7:
 * a restore recorded 78 s after its fault, a compaction 16 s before that, the old timeline's checkpoint 153068 above
 * the new era's compaction at 94530 — an empty bound, and every change of the gap read as lost). Only while the
 * restore was recorded within the detection slack of its fault's end: a restore found later is no excuse for what
 * a compaction then took (the range stays the reported checkpoint's, and the gap reads too wide).
 */
export function compactionBound(
  f: { era: number; startedAt: number; facts?: unknown },
  restoreGaps: readonly StoredGap[],
  restoreEndedAt?: number,
): { lo: bigint; hi: bigint } {
  const facts = f.facts as { checkpointAtStop: string; compactRevision: string };
  const hi = BigInt(facts.compactRevision);
  const branch = f.era >= 1 ? restoreGaps.find((g) => g.generation === f.era) : undefined;
  const detected = branch ? ms(branch.detected_at) : undefined;
  const inTime = detected !== undefined && restoreEndedAt !== undefined && detected <= restoreEndedAt + DETECTION_SLACK_MS;
  if (branch && detected !== undefined && detected > f.startedAt && inTime) return { lo: BigInt(branch.from_revision), hi };
  return { lo: BigInt(facts.checkpointAtStop) + 1n, hi };
}

/**
 * The last revision both eras share that a tailer can prove when it detects
 * the restore: the newest put, at or below the snapshot, of a key the
 * restored cluster still holds unchanged at that moment and whose put the
 * store captured. (A key rewritten in the new era — the clock, the epoch —
 * proves nothing once it is.) A restore gap must start right above it, or
 * higher.
 */
function provableDivergence(input: CheckInput, h: History, b: Branch, detectedMs: number): bigint {
  const rewritten = new Set(h.changes.filter((c) => c.era === b.era && c.at <= detectedMs).map((c) => c.key));
  const capturedPuts = new Set(
    [...input.store.events, ...(input.store.rolledBack ?? [])].filter((e) => e.op === 'put' || e.op === '').map((e) => `${e.revision} ${e.key}`),
  );
  let top = 0n;
  for (const [key, rev] of b.liveAtSnapshot) if (rev > top && !rewritten.has(key) && capturedPuts.has(`${rev} ${key}`)) top = rev;
  return top;
}

/**
 * What a restore gap excuses: an old-era change above the snapshot that the
 * tailer had not captured before the restore (up to that era's end: the gap's
 * recorded `to` is only how far the tailer saw it go); or, when the restore bumped
 * revisions (the shared history is compacted and cannot be read again), a
 * shared change between the gap's start and the snapshot.
 */
/**
 * The compaction revision of a compact fault of the restore's own (new) era that began before the restore's gap was
 * detected — within the detection slack of the restore fault's end, so the tailer had no chance to find the restore
 * first — or undefined.
 */
function newEraCompaction(input: CheckInput, b: Branch, detectedAt: number): bigint | undefined {
  const restoreEnded = input.faults.find((x) => x.kind === 'restore' && x.era === b.era - 1)?.endedAt;
  if (restoreEnded === undefined || detectedAt > restoreEnded + DETECTION_SLACK_MS) return undefined;
  const compactions = input.faults
    .filter((f) => f.kind === 'compact' && f.era === b.era && f.facts?.kind === 'compact' && f.startedAt <= detectedAt)
    .map((f) => BigInt((f.facts as { compactRevision: string }).compactRevision));
  return compactions.length ? compactions.reduce((a, c) => (c > a ? c : a)) : undefined;
}

function restoreExcuses(b: Branch, from: bigint, to: bigint, era: number, revision: bigint, shared: boolean): boolean {
  if (revision < from) return false;
  // The gap's `to` is the furthest the tailer saw the old timeline go: what etcd committed after that, before it
  // stopped, nobody but etcd ever saw, and the restore erased it. The gap says so (its end is "at least"), so it
  // stands for the old era's changes above it too — bounded by that era's true end, which this era check is.
  if (era === b.era - 1 && revision > b.snapshot) return revision > b.capturedBefore;
  return revision <= to && shared && b.bump > 0n && revision <= b.snapshot && revision > b.capturedBefore;
}
