// The tailer's rows proved again under a new key: how a deployment from before the tailer key was split from
// the origin secret (core/tailerSecret.ts) moves to a key of its own without losing what its proofs say.
// Every row whose proof holds under the old key — proven checkpoints, catch-up segments, restore gaps,
// quarantine entries — is written again, unchanged, with the new key's proof (same columns and version: the
// new row replaces the old at the next merge, and FINAL reads it at once). A row whose proof does not hold
// under the old key (forged, edited, proved with another key) is left as it is: it proves nothing after the
// split, as it proved nothing before. Run once, with the tailer stopped, by whoever holds both keys; run
// again, it proves again what either key proves (a split cut off half way finishes).
import type { AuditStore } from '../../core/clickhouse.js';
import {
  checkpointMac,
  hasValidCheckpointProof,
  hasValidQuarantinedGrantProof,
  hasValidQuarantineRowProof,
  hasValidRestoreGapProof,
  hasValidSegmentProof,
  quarantinedGrantMac,
  quarantineRowMac,
  restoreGapMac,
  segmentMac,
} from '../../core/proof.js';
import { loadSql } from '../../platform/sql.js';

const SQL = {
  clusters: loadSql('tailer/sql/reprove/clusters.sql'),
  checkpoints: loadSql('tailer/sql/reprove/checkpoints.sql'),
  checkpointsWrite: loadSql('tailer/sql/reprove/checkpointsWrite.sql'),
  segments: loadSql('tailer/sql/reprove/segments.sql'),
  segmentsWrite: loadSql('tailer/sql/reprove/segmentsWrite.sql'),
  gaps: loadSql('tailer/sql/reprove/gaps.sql'),
  gapsWrite: loadSql('tailer/sql/reprove/gapsWrite.sql'),
  quarantine: loadSql('tailer/sql/reprove/quarantine.sql'),
  quarantineWrite: loadSql('tailer/sql/reprove/quarantineWrite.sql'),
};
/** Rows written again per statement (each id travels as a bound parameter). */
const CHUNK = 1_000;

/** What one kind of row came to: proved again, or left (its proof held under neither key). */
export interface ReproveCount {
  reproved: number;
  left: number;
}
export type ReproveResult = Record<'checkpoints' | 'segments' | 'restoreGaps' | 'quarantine', ReproveCount> & {
  /**
   * What a reader should look at again: the restore gaps proved again (each explains re-signed periods) and how many
   * quarantine entries excuse a missing grant row. The old key was the lock API's too, so whoever held the API could
   * have forged these before the split; the split carries them over as the old key vouched for them.
   */
  review: { restoreGaps: Array<{ generation: number; fromRevision: string; toRevision: string }>; grantRowExcuses: number };
};

interface Keys {
  old: Buffer;
  next: Buffer;
}

/**
 * The new proof of one row, from a prover of its fields under a key and a checker of a proof: undefined when the
 * row's proof holds under neither key, or already holds under the new one (nothing to write).
 */
function newProof(keys: Keys, proof: string, check: (key: Buffer, proof: string) => boolean, prove: (key: Buffer) => string): string | 'left' | undefined {
  if (check(keys.next, proof)) return undefined;
  return check(keys.old, proof) ? prove(keys.next) : 'left';
}

async function writeAgain(
  store: AuditStore,
  sql: { text: string },
  cluster: string,
  rows: ReadonlyArray<{ id: string; proof: string }>,
  count: ReproveCount,
): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    await store.command(sql.text, { cluster, ids: chunk.map((r) => r.id), proofs: chunk.map((r) => r.proof) });
  }
  count.reproved += rows.length;
}

/** Every row the tailer proved under `old`, proved again under `next` (see the head of this file). */
export async function reproveTailerRows(store: AuditStore, keys: Keys): Promise<ReproveResult> {
  const result: ReproveResult = {
    checkpoints: { reproved: 0, left: 0 },
    segments: { reproved: 0, left: 0 },
    restoreGaps: { reproved: 0, left: 0 },
    quarantine: { reproved: 0, left: 0 },
    review: { restoreGaps: [], grantRowExcuses: 0 },
  };
  const clusters = (await store.rows<{ cluster: string }>(SQL.clusters.text)).map((r) => r.cluster);
  for (const cluster of clusters) {
    const pick = <T extends { id: string; proof: string }>(
      rows: T[],
      count: ReproveCount,
      check: (k: Buffer, r: T) => boolean,
      prove: (k: Buffer, r: T) => string,
    ) => {
      const out: Array<{ id: string; proof: string }> = [];
      for (const r of rows) {
        const proof = newProof(
          keys,
          r.proof,
          (k) => check(k, r),
          (k) => prove(k, r),
        );
        if (proof === 'left') count.left += 1;
        else if (proof !== undefined) out.push({ id: r.id, proof });
      }
      return out;
    };

    const checkpoints = await store.rows<{ id: string; timelineNo: number; termText: string; revisionText: string; leader: string; proof: string }>(
      SQL.checkpoints.text,
      { cluster },
    );
    const signedCheckpoint = (r: (typeof checkpoints)[number]) => ({
      cluster,
      timeline: Number(r.timelineNo),
      term: r.termText,
      revision: r.revisionText,
      leader: r.leader,
    });
    await writeAgain(
      store,
      SQL.checkpointsWrite,
      cluster,
      pick(
        checkpoints,
        result.checkpoints,
        (k, r) => hasValidCheckpointProof(k, signedCheckpoint(r), r.proof),
        (k, r) => checkpointMac(k, signedCheckpoint(r)),
      ),
      result.checkpoints,
    );

    const segments = await store.rows<{ id: string; timelineNo: number; termText: string; fromText: string; throughText: string; proof: string }>(
      SQL.segments.text,
      { cluster },
    );
    const signedSegment = (r: (typeof segments)[number]) => ({
      cluster,
      timeline: Number(r.timelineNo),
      term: r.termText,
      from: r.fromText,
      through: r.throughText,
    });
    await writeAgain(
      store,
      SQL.segmentsWrite,
      cluster,
      pick(
        segments,
        result.segments,
        (k, r) => hasValidSegmentProof(k, signedSegment(r), r.proof),
        (k, r) => segmentMac(k, signedSegment(r)),
      ),
      result.segments,
    );

    const gaps = await store.rows<{
      id: string;
      generationText: string;
      fromText: string;
      toText: string;
      detectedAtMs: string;
      historyLostText: string;
      previousClusterId: string;
      clusterId: string;
      proof: string;
    }>(SQL.gaps.text, { cluster });
    const signedGap = (r: (typeof gaps)[number]) => ({
      cluster,
      generation: Number(r.generationText),
      fromRevision: r.fromText,
      toRevision: r.toText,
      detectedAtMs: Number(r.detectedAtMs),
      historyLost: Number(r.historyLostText),
      previousClusterId: r.previousClusterId,
      clusterId: r.clusterId,
    });
    await writeAgain(
      store,
      SQL.gapsWrite,
      cluster,
      pick(
        gaps,
        result.restoreGaps,
        (k, r) => hasValidRestoreGapProof(k, signedGap(r), r.proof),
        (k, r) => {
          result.review.restoreGaps.push({ generation: Number(r.generationText), fromRevision: r.fromText, toRevision: r.toText });
          return restoreGapMac(k, signedGap(r));
        },
      ),
      result.restoreGaps,
    );

    // Quarantine entries can be many (and their values large: only their sha256 is read), so in pages.
    type Entry = { id: string; revisionText: string; keyText: string; timelineNo: number; opText: string; valueSha256: string; reason: string; proof: string };
    const grantOf = (r: Entry) => ({ cluster, timeline: Number(r.timelineNo), revision: r.revisionText, key: r.keyText });
    const rowOf = (r: Entry) => ({ ...grantOf(r), op: r.opText, valueSha256: r.valueSha256, reason: r.reason });
    for (let afterId = ''; ;) {
      const page = await store.rows<Entry>(SQL.quarantine.text, { cluster, afterId, limit: CHUNK });
      if (page.length === 0) break;
      afterId = (page[page.length - 1] as Entry).id;
      await writeAgain(
        store,
        SQL.quarantineWrite,
        cluster,
        pick(
          page,
          result.quarantine,
          (k, r) => (r.opText === 'grants-row' ? hasValidQuarantinedGrantProof(k, grantOf(r), r.proof) : hasValidQuarantineRowProof(k, rowOf(r), r.proof)),
          (k, r) => {
            if (r.opText !== 'grants-row') return quarantineRowMac(k, rowOf(r));
            result.review.grantRowExcuses += 1;
            return quarantinedGrantMac(k, grantOf(r));
          },
        ),
        result.quarantine,
      );
    }
  }
  return result;
}
