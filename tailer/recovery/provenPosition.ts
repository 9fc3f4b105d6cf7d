// The tailer's resume position, taken only as far as its proof goes (issue 40
// item 7). Whoever can write the store can insert a checkpoint ahead of what
// was captured; a start that obeyed it would watch from there and never see
// the revisions between — no gap, no alarm, and a hand delete there lost.
// Every checkpoint row the tailer writes carries its proof (sql/230,
// core/proof.ts); the position in effect (offsets.ts, restores.ts
// readPosition) counts only when a proven row stands behind it. Otherwise the
// highest proven row of the timeline is the position (never below the
// timeline's resume revision), and the start is told, to alarm: a forged or
// edited row makes the tailer capture again what it holds (idempotent rows),
// never skip.
//
// Upgrade: a store with no proven checkpoint row at all for the cluster was
// written before proofs; its position stands as before (the first checkpoint
// written then carries a proof). Proven rows are read from checkpoint_proofs,
// which no merge of `checkpoints` empties. Known holes (docs/architecture.md,
// what is not yet proven): deleting every row of checkpoint_proofs for a
// cluster makes a store look so; the timeline floor (etcd_timelines) is taken
// without a proof.
import type { AuditStore } from '../../core/clickhouse.js';
import { hasValidCheckpointProof } from '../../core/proof.js';
import { loadSql } from '../../platform/sql.js';
import { currentTimeline, type Position } from './restores.js';

const SQL = loadSql('tailer/sql/provenCheckpoints.sql');
/** Proven candidates read at most: forged rows past this many make the start replay from the timeline's start. */
const CANDIDATES = 1_000;

export interface ProvenPosition {
  /** Where to resume: `inEffect` when proven (or written before proofs), else the highest proven position. */
  position: Position;
  /** Set when the position in effect had no proof behind it: what it claimed. */
  unproven?: Position;
  /** No proven row was ever written for the cluster: a store from before sql/230. */
  beforeProofs?: boolean;
}

/** The position `inEffect` (readFencedCheckpoint) checked against the checkpoint rows' proofs. */
export async function provenPosition(store: AuditStore, cluster: string, secret: Buffer, inEffect: Position): Promise<ProvenPosition> {
  if (inEffect.revision === 0n) return { position: inEffect };
  const timeline = await currentTimeline(store, cluster);
  const t = timeline?.timeline ?? 0;
  // A restored timeline starts at its resume revision: a position there claims nothing captured in it.
  const floor = timeline && timeline.generation > 0 ? timeline.resumeRevision : 0n;
  if (inEffect.revision <= floor) return { position: inEffect };
  const rows = await store.rows<{ rev: string; term_of: string; leader: string; timeline: number; proof: string }>(SQL.text, {
    cluster,
    timeline: t,
    limit: CANDIDATES,
  });
  if (rows.length === 0) return { position: inEffect, beforeProofs: true };
  const found = rows.find(
    (r) => Number(r.timeline) === t && hasValidCheckpointProof(secret, { cluster, timeline: t, term: r.term_of, revision: r.rev, leader: r.leader }, r.proof),
  );
  const best = found && { revision: BigInt(found.rev), term: BigInt(found.term_of), leader: found.leader };
  if (best && best.revision === inEffect.revision && best.term === inEffect.term) return { position: inEffect };
  // A position of a row written before sql/110 (term 0) that a proven one has passed: the proven one, no alarm.
  if (best && inEffect.term === 0n && best.revision >= inEffect.revision) return { position: best };
  const position = best && best.revision > floor ? best : { revision: floor, term: 0n, leader: '' };
  return { position, unproven: inEffect };
}
