// The chaos checker: the invariants of check/invariants.ts over the history
// (check/history.ts) with gaps earned from the run's own faults
// (check/gaps.ts). Inputs: the recorder's file (what etcd committed), the
// truth file (what the run itself did and how it must read), what lockaudit
// stored (read from ClickHouse after it stopped), the faults with the
// revisions they know, the keyspace at the final revision and the force
// archive. Verdict: clean (exit 0), violations (1), invalid (2: the checker
// was blind or the run did not test what it says).
import { earnGaps } from './check/gaps.js';
import { indexHistory, indexStore } from './check/history.js';
import { archive, capture, classification, flips, grants, phantoms, recordingContiguous, runValid, sealedByHandEpoch, tokenOrder } from './check/invariants.js';
import { type CheckInput, type CheckResult, type Violation, type ViolationKind } from './check/types.js';

export type { CheckInput, CheckResult, Violation, ViolationKind } from './check/types.js';

export function check(input: CheckInput): CheckResult {
  const h = indexHistory(input);
  const s = indexStore(input);
  const violations: Violation[] = [];
  const add = (v: Omit<Violation, 'cluster'>): void => {
    violations.push({ cluster: h.cluster, ...v });
  };
  const invalid = [...recordingContiguous(input, h), ...runValid(input)];
  const gaps = earnGaps(input, h);
  violations.push(...gaps.violations);
  const captured = capture(h, s, gaps.earned, add);
  flips(s, add);
  const ph = phantoms(h, s, add);
  const cls = classification(input, h, captured.rowOf, add);
  const handEpochs = sealedByHandEpoch(input, h, captured.rowOf, add);
  const grantsChecked = grants(input, add);
  const apiGrants = tokenOrder(input, h, add);
  const forceRecords = archive(input, h, add);
  const byKind = new Map<ViolationKind, number>();
  for (const v of violations) byKind.set(v.kind, (byKind.get(v.kind) ?? 0) + 1);
  return {
    status: invalid.length ? 'invalid' : violations.length ? 'violations' : 'clean',
    invalid,
    changesChecked: captured.checked,
    captured: captured.captured,
    capturedRolledBack: captured.capturedRolledBack,
    quarantined: captured.quarantined,
    inGaps: captured.inGaps,
    unverifiableTail: ph.unverifiableTail,
    unwitnessable: cls.unwitnessable,
    phantoms: ph.phantoms,
    grantsChecked,
    forceRecords,
    apiGrants,
    handEpochs,
    eras: h.lastEra + 1,
    gaps: gaps.lines,
    violations,
    byKind,
  };
}

/** The process exit code of a verdict. */
export const exitCode = (r: CheckResult): number => (r.status === 'invalid' ? 2 : r.status === 'violations' ? 1 : 0);

/** The verdict as JSON (verdict.json beside the run's artefacts). */
export function verdictJson(r: CheckResult): string {
  const { byKind, ...rest } = r;
  return JSON.stringify({ ...rest, byKind: Object.fromEntries(byKind) }, null, 1);
}

/** The per-gap table: each gap, the fault that earned it, its width, the bound it was held to and how many changes it excused. */
export function gapTable(r: CheckResult): string[] {
  const lines = [`gaps recorded: ${r.gaps.length} (changes excused by gaps: ${r.inGaps} of ${r.changesChecked})`];
  if (r.gaps.length)
    lines.push(`  ${'from–to'.padEnd(26)} ${'kind'.padEnd(11)} ${'width'.padStart(8)} ${'excused'.padStart(8)}  ${'bound'.padEnd(30)} fault / verdict`);
  for (const g of r.gaps)
    lines.push(
      `  ${`${g.from}–${g.to}`.padEnd(26)} ${g.kind.padEnd(11)} ${g.width.padStart(8)} ${String(g.excused).padStart(8)}  ${g.bound.padEnd(30)} ${g.fault}${g.verdict === 'earned' ? '' : ` — ${g.verdict.toUpperCase()}`}`,
    );
  return lines;
}
