// Which changes to a sealed period the record explains (issue 40 item 2). A
// period's events may change after its digest was signed for two reasons of
// operation, and only those re-sign it:
// - an etcd restore marks the captured rows above its divergence rolled back
//   and superseded (sql/065): explained when the restore's gap carries the
//   tailer's proof (core/proof.ts restoreGapMac, sql/220), was recorded after
//   the period was sealed, and the row is one that restore marks (a revision
//   at or above the gap's start, of an earlier timeline). The marks are undone,
//   the row's content is not: a restore never changes what a row says.
// - a fail-open spool shipped late adds unprotected grants (revision 0, op
//   spool) ingested after sealing. Spool lines carry no writer's proof yet, so
//   this explanation rests on the store row alone (docs/digests.md says so).
// The period as it was is the current rows with exactly those changes undone;
// the change is explained when that hashes to the digest first signed for the
// period. Anything else — an edited row, a row added or removed, a mark with no
// proven restore behind it — is not, and is never re-signed. A gap or restore
// record of the period that appears later is explained only as a proven
// restore gap (and its timeline) of a later generation; one removed or altered
// never is.
import type { AuditStore } from '../../core/clickhouse.js';
import { hasValidRestoreGapProof } from '../../core/proof.js';
import { loadSql } from '../../platform/sql.js';
import { canonicalJson } from '../hashChain.js';
import type { Digest, DigestEvent, DigestGap, DigestRestore } from './format.js';
import { hashPeriodEvents } from './periodContent.js';

const RESTORE_GAPS = loadSql('exporters/sql/digest_restore_gaps.sql');

/** A restore whose gap carries the tailer's proof. */
export interface ProvenRestore {
  generation: number;
  fromRevision: bigint;
  toRevision: bigint;
  detectedAtMs: number;
  /** Its timeline record is written (the tailer writes it after every mark): false while its marks are being written. */
  recorded: boolean;
}

/** How far before a digest was signed a restore may have been recorded and still have marked its rows after (the marks are written in pages after the gap). */
const MARKING_SLACK_MS = 3_600_000;

/** What made a sealed period change, as a superseding digest names it. */
export type ChangeReason = NonNullable<Digest['reasons']>[number];

export interface Explanation {
  explained: boolean;
  reasons: ChangeReason[];
  /** What is not explained, when something is not. */
  problem?: string;
}

/** The cluster's restore gaps whose proof checks under `secret` (none without a secret). */
export async function provenRestores(store: AuditStore, cluster: string, secret: Buffer | undefined): Promise<ProvenRestore[]> {
  if (!secret) return [];
  const rows = await store.rows<{
    generation: string;
    recorded: number | string;
    fromRevision: string;
    toRevision: string;
    detectedAtMs: string;
    historyLost: string;
    previousClusterId: string;
    clusterId: string;
    proof: string;
  }>(RESTORE_GAPS.text, { cluster });
  return rows
    .filter((r) =>
      hasValidRestoreGapProof(
        secret,
        {
          cluster,
          generation: Number(r.generation),
          fromRevision: r.fromRevision,
          toRevision: r.toRevision,
          detectedAtMs: Number(r.detectedAtMs),
          historyLost: Number(r.historyLost),
          previousClusterId: r.previousClusterId,
          clusterId: r.clusterId,
        },
        r.proof,
      ),
    )
    .map((r) => ({
      generation: Number(r.generation),
      fromRevision: BigInt(r.fromRevision),
      toRevision: BigInt(r.toRevision),
      detectedAtMs: Number(r.detectedAtMs),
      recorded: Number(r.recorded) === 1,
    }));
}

/** Proven restores recorded after `sealedAtMs` whose marks could reach a period whose events end at `revisionMax`. */
export function restoresAfter(restores: readonly ProvenRestore[], sealedAtMs: number): ProvenRestore[] {
  return restores.filter((r) => r.detectedAtMs > sealedAtMs);
}

/**
 * Whether the period of `original` (the digest first signed for it) changed only as the record explains:
 * its events now, with the explained changes undone, hash to what was signed, and its gaps and restores differ only
 * by proven restore gaps recorded since. Which restores count as "since" is judged twice — recorded after the digest
 * was signed, or within MARKING_SLACK_MS before (its marks, written in pages after its gap, may have come after) —
 * and the change is explained when either view gives back what was signed.
 */
export async function explainChange(
  store: AuditStore,
  original: Digest,
  now: { gaps: DigestGap[]; restores: DigestRestore[] },
  restores: readonly ProvenRestore[],
): Promise<Explanation> {
  const sealedAtMs = Date.parse(original.createdAt);
  const views = [restoresAfter(restores, sealedAtMs), restoresAfter(restores, sealedAtMs - MARKING_SLACK_MS)];
  let last: Explanation | undefined;
  for (const [i, later] of views.entries()) {
    if (i > 0 && later.length === views[0]?.length) break; // the same view again
    last = await explainWith(store, original, now, later, sealedAtMs);
    if (last.explained) return last;
  }
  return last as Explanation;
}

async function explainWith(
  store: AuditStore,
  original: Digest,
  now: { gaps: DigestGap[]; restores: DigestRestore[] },
  later: readonly ProvenRestore[],
  sealedAtMs: number,
): Promise<Explanation> {
  const byGeneration = new Map(later.map((r) => [r.generation, r]));
  const marked = new Map<number, number>();
  let spooled = 0;
  let unmarked = 0;
  const undoMark = (row: DigestEvent, value: string): boolean => {
    const r = byGeneration.get(Number(value));
    return r !== undefined && BigInt(row.revision) >= r.fromRevision && Number(row.timeline) < r.generation;
  };
  const view = (row: DigestEvent, ingestedAtMs: string): DigestEvent | undefined => {
    // A fail-open spool line shipped after sealing: an unprotected grant or its end, under its spool key.
    if (row.revision === '0' && row.op === 'spool' && row.key.startsWith('/spool/') && Number(ingestedAtMs) > sealedAtMs) {
      spooled++;
      return undefined;
    }
    // A row a later restore rolled back must carry its mark (or an earlier restore's): marks removed are no restore.
    const revision = row.revision === '0' ? undefined : BigInt(row.revision);
    if (revision !== undefined && row.supersededBy === '0' && later.some((r) => revision >= r.fromRevision && Number(row.timeline) < r.generation)) {
      unmarked++;
      return row;
    }
    let out = row;
    const generations = new Set<number>();
    for (const field of ['rolledBackBy', 'supersededBy'] as const) {
      if (out[field] !== '0' && undoMark(row, out[field])) {
        generations.add(Number(out[field]));
        out = { ...out, [field]: '0' };
      }
    }
    for (const g of generations) marked.set(g, (marked.get(g) ?? 0) + 1);
    return out;
  };
  const before = await hashPeriodEvents(
    store,
    original.cluster,
    { after: original.events.after, through: original.events.through, fromMs: Date.parse(original.periodStart), toMs: Date.parse(original.periodEnd) },
    view,
    {},
    original.events.encoding,
  );
  const reasons: ChangeReason[] = [
    ...[...marked].map(([generation, rows]): ChangeReason => ({ kind: 'restore', generation, rows })),
    ...(spooled ? [{ kind: 'spool' as const, rows: spooled }] : []),
  ];
  if (unmarked > 0) {
    return {
      explained: false,
      reasons,
      problem: `${unmarked} row(s) a proven restore rolled back do not carry its mark (marks removed, or written by hand on other rows)`,
    };
  }
  if (before.sha256 !== original.events.sha256 || before.count !== original.events.count) {
    return {
      explained: false,
      reasons,
      problem: `its events changed in a way no proven restore or late spool explains (${before.count} event(s) once those are undone, ${original.events.count} signed)`,
    };
  }
  // The record: what was signed must still be there, and anything added must be a proven restore gap, field for field.
  const key = (x: unknown): string => canonicalJson(x);
  const nowGaps = new Set(now.gaps.map(key));
  const nowRestores = new Set(now.restores.map(key));
  if (original.gaps.some((g) => !nowGaps.has(key(g))) || original.restores.some((r) => !nowRestores.has(key(r)))) {
    return { explained: false, reasons, problem: 'a gap or restore it signed was removed or altered' };
  }
  const signedGaps = new Set(original.gaps.map(key));
  const signedRestores = new Set(original.restores.map(key));
  const addedGaps = now.gaps.filter((g) => !signedGaps.has(key(g)));
  const addedRestores = now.restores.filter((r) => !signedRestores.has(key(r)));
  const provenGap = (g: DigestGap): boolean => {
    const r = byGeneration.get(Number(g.generation));
    return (
      g.kind === 'restore' &&
      r !== undefined &&
      BigInt(g.fromRevision) === r.fromRevision &&
      BigInt(g.toRevision) === r.toRevision &&
      Date.parse(g.detectedAt) === r.detectedAtMs
    );
  };
  const unproven = [
    ...addedGaps.filter((g) => !provenGap(g)).map((g) => `gap ${g.fromRevision}..${g.toRevision}`),
    ...addedRestores.filter((r) => !byGeneration.has(Number(r.generation))).map((r) => `restore ${r.generation}`),
  ];
  if (unproven.length) return { explained: false, reasons, problem: `${unproven.join(', ')} recorded after sealing without a proven restore behind it` };
  for (const g of new Set([...addedGaps.map((x) => Number(x.generation)), ...addedRestores.map((x) => Number(x.generation))])) {
    if (!reasons.some((r) => r.kind === 'restore' && r.generation === g)) reasons.push({ kind: 'restore', generation: g, rows: 0 });
  }
  return { explained: true, reasons };
}
