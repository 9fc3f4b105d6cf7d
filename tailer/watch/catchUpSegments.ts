// What a catch-up made durable beyond its checkpoint (sql/160, issue 22 item
// 4). The checkpoint is one revision: everything up to it is durable. A
// catch-up far behind watches K windows at once, and the checkpoint crosses a
// window only once the windows before it are complete — so a kill kept only
// the first window's progress. Each window's durable floor is recorded too, as
// an interval [window start, floor]; a restart reads them and watches only the
// holes between the checkpoint and those intervals (pipeline.ts
// planResumeWindows). The intervals are facts about rows already in the store,
// whoever wrote them, so they hold across leaders; a restore starts another
// timeline, whose intervals are its own. With the tailer's key each row
// carries its proof (sql/230) and only proven rows are read: a forged
// interval would make a restart skip its revisions, an ignored one only
// watches them again.
import type { AuditStore } from '../../core/clickhouse.js';
import { hasValidSegmentProof, segmentMac } from '../../core/proof.js';
import { loadSql } from '../../platform/sql.js';

/** Every change of [from, through] is durable. */
export interface Durable {
  from: bigint;
  through: bigint;
}

const SQL = { read: loadSql('tailer/sql/catchUpSegments.sql') };

/** The recorded durable intervals above `checkpoint` (with `secret`: the proven ones), clipped to it, merged (sorted, disjoint, none adjacent). */
export async function readDurable(store: AuditStore, cluster: string, timeline: number, checkpoint: bigint, secret?: Buffer): Promise<Durable[]> {
  const rows = await store.rows<{ start: string; floor: string; term_of: string; proof: string }>(SQL.read.text, {
    cluster,
    timeline,
    checkpoint: checkpoint.toString(),
  });
  const proven = secret
    ? rows.filter((r) => hasValidSegmentProof(secret, { cluster, timeline, term: r.term_of, from: r.start, through: r.floor }, r.proof))
    : rows;
  return mergeDurable(
    proven.map((r) => ({ from: BigInt(r.start), through: BigInt(r.floor) })),
    checkpoint,
  );
}

/** Clips intervals to above `checkpoint` and merges overlapping and adjacent ones. */
export function mergeDurable(intervals: readonly Durable[], checkpoint: bigint): Durable[] {
  const clipped = intervals
    .map((d) => ({ from: d.from > checkpoint ? d.from : checkpoint + 1n, through: d.through }))
    .filter((d) => d.through >= d.from)
    .sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
  const out: Durable[] = [];
  for (const d of clipped) {
    const last = out[out.length - 1];
    if (last && d.from <= last.through + 1n) {
      if (d.through > last.through) last.through = d.through;
    } else out.push({ ...d });
  }
  return out;
}

/** Records windows' durable intervals (one row each; the highest `through` per start wins, sql/160). */
export async function writeDurable(
  store: AuditStore,
  at: { cluster: string; timeline: number; term: bigint; secret?: Buffer },
  intervals: readonly Durable[],
): Promise<void> {
  if (intervals.length === 0) return;
  const { secret } = at;
  await store.insert(
    'catchup_segments',
    intervals.map((d) => {
      const signed = { cluster: at.cluster, timeline: at.timeline, term: at.term.toString(), from: d.from.toString(), through: d.through.toString() };
      return {
        cluster: at.cluster,
        timeline: at.timeline,
        from_revision: signed.from,
        through: signed.through,
        term: signed.term,
        updated_at: Date.now(),
        ...(secret ? { proof: segmentMac(secret, signed) } : {}),
      };
    }),
  );
}
