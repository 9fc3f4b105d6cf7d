// Tailer health (GET /v1/tailers, GET /v1/gaps): per cluster the leader,
// checkpoint, head, lag and gap count, read from what the elected tailers
// publish in ClickHouse, so any API process answers wherever the tailers run.
// Revisions travel as decimal strings. The checkpoint is the one the tailer
// resumes from, read with the same SQL (grants/checkpointInEffect.sql).
import Type, { type Static } from 'typebox';
import { loadSql } from '../../platform/sql.js';
import { reportRows, statusRows, type ReportDeps } from '../../platform/reportQuery.js';
import { ClusterName } from '../../grants/schemas.js';

const STATUS = loadSql('reports/tailerHealth/status.sql');
const GAP_COUNTS = loadSql('reports/tailerHealth/gapCounts.sql');
const GAPS = loadSql('reports/tailerHealth/gaps.sql');
const CHECKPOINTS = loadSql('grants/checkpointInEffect.sql');

const Revision = Type.String({ pattern: '^[0-9]+$', description: 'decimal revision' });

export const GapSchema = Type.Object({
  cluster: Type.String(),
  fromRevision: Revision,
  toRevision: Revision,
  detectedAt: Type.String({ description: 'ISO-8601' }),
  reason: Type.String(),
  kind: Type.Union([Type.Literal('compaction'), Type.Literal('restore')], {
    description: 'compaction: history compacted before capture; restore: etcd rewound to a snapshot',
  }),
  historyLost: Type.Boolean({
    description: 'false: a restore whose restored history is all readable (the range is the rolled-back revisions of the old timeline)',
  }),
  previousClusterId: Type.Union([Type.String(), Type.Null()], { description: "restore: etcd's cluster id before the restore (hex); null for compaction" }),
  clusterId: Type.Union([Type.String(), Type.Null()], {
    description: "restore: etcd's cluster id after the restore (hex; the same id when restored with the same token); null for compaction",
  }),
});

export const TailerSchema = Type.Object({
  cluster: Type.String(),
  clusterId: Type.Union([Type.String(), Type.Null()]),
  leader: Type.Union([Type.String(), Type.Null()]),
  checkpoint: Revision,
  headRevision: Type.Union([Revision, Type.Null()], {
    description: "etcd's head as the tailer last asked, never below the checkpoint; null: no tailer published status",
  }),
  lagRevisions: Type.Union([Revision, Type.Null()]),
  lagSeconds: Type.Union([Type.Number(), Type.Null()]),
  compactRevision: Type.Union([Revision, Type.Null()], {
    description: "etcd's compact revision as the tailer last asked (0: never compacted); null: no tailer published status",
  }),
  statusAt: Type.Union([Type.String(), Type.Null()]),
  gaps: Type.Integer({ minimum: 0 }),
});

export const GapsQuery = Type.Object(
  {
    cluster: Type.Optional(ClusterName()),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  },
  { additionalProperties: false },
);

export type Tailer = Static<typeof TailerSchema>;
export type GapItem = Static<typeof GapSchema>;

interface StatusRow {
  cluster: string;
  cluster_id: string;
  leader: string;
  head_revision: string;
  compact_revision: string;
  lag_seconds: number;
  updated_at: string;
}

const iso = (ms: string | number): string => new Date(typeof ms === 'number' ? ms : Date.parse(`${ms.replace(' ', 'T')}Z`)).toISOString();

/** One row per configured cluster, and per cluster that ever checkpointed. */
export async function tailerHealth(deps: ReportDeps, configuredClusters: readonly string[]): Promise<Tailer[]> {
  // Status reads (nothing bound): they answer while reports or a catch-up hold the store's query queue.
  const status = await statusRows<StatusRow>(deps, STATUS);
  const checkpoints = new Map(
    (await statusRows<{ cluster: string; revision: string }>(deps, CHECKPOINTS)).map((r) => [r.cluster, { revision: BigInt(r.revision) }]),
  );
  const gaps = await statusRows<{ cluster: string; n: string }>(deps, GAP_COUNTS);
  const names = new Set<string>([...configuredClusters, ...checkpoints.keys()]);
  return [...names].sort().map((cluster) => {
    const s = status.find((r) => r.cluster === cluster);
    const checkpoint = checkpoints.get(cluster)?.revision ?? 0n;
    // The status row is written about once a second, the checkpoint more often: a head below the checkpoint is only older.
    const statusHead = s ? BigInt(s.head_revision) : undefined;
    const head = statusHead === undefined ? undefined : statusHead > checkpoint ? statusHead : checkpoint;
    return {
      cluster,
      clusterId: s?.cluster_id || null,
      leader: s?.leader || null,
      checkpoint: checkpoint.toString(),
      headRevision: head === undefined ? null : head.toString(),
      lagRevisions: head === undefined ? null : (head > checkpoint ? head - checkpoint : 0n).toString(),
      lagSeconds: s ? Number(s.lag_seconds) : null,
      compactRevision: s ? String(s.compact_revision) : null,
      statusAt: s ? iso(s.updated_at) : null,
      gaps: Number(gaps.find((g) => g.cluster === cluster)?.n ?? 0),
    };
  });
}

interface GapRow {
  cluster: string;
  from_revision: string;
  to_revision: string;
  detected_at: string;
  reason: string;
  kind: string;
  history_lost: number | string;
  previous_cluster_id: string;
  cluster_id: string;
}

/** Recorded history gaps, newest first. */
export async function historyGaps(deps: ReportDeps, query: Static<typeof GapsQuery>): Promise<GapItem[]> {
  const rows = await reportRows<GapRow>(deps, GAPS, { cluster: query.cluster ?? '', limit: query.limit ?? 100 });
  return rows.map((r) => {
    const restore = r.kind === 'restore';
    return {
      cluster: r.cluster,
      fromRevision: r.from_revision,
      toRevision: r.to_revision,
      detectedAt: iso(r.detected_at),
      reason: r.reason,
      kind: restore ? 'restore' : 'compaction',
      historyLost: Number(r.history_lost) !== 0,
      previousClusterId: restore ? r.previous_cluster_id : null,
      clusterId: restore ? r.cluster_id : null,
    };
  });
}
