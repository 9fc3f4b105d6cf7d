// Tailer lag over time (the console's tailer health plot): the worst lag per
// cluster and time bucket, from the status samples the elected tailers
// publish (sql/030_tailer_lag_history.sql). Aggregated in ClickHouse: a
// 30-day window is at most 241 points a cluster.
import { INSTANT_MAX_MS, INSTANT_MIN_MS, parseInstant } from '../../core/instant.js';
import Type, { type Static } from 'typebox';
import { ClusterName, Instant, NullableNumber } from '../../grants/schemas.js';
import { reportRows, type ReportDeps } from '../../platform/reportQuery.js';
import { num } from '../render.js';
import { loadSql } from '../../platform/sql.js';
import { bucketFor, bucketStarts, resolveWindow } from '../window.js';

const LAG = loadSql('reports/tailerLag/lag.sql');

/** Status is published about once a second, so buckets below 10 s would mostly hold one sample. */
export const LAG_BUCKET_SECONDS = [10, 30, 60, 300, 900, 3600, 10_800, 21_600, 86_400] as const;
const DEFAULT_SPAN_MS = 86_400_000;

export const TailerLagQuery = Type.Object(
  {
    cluster: Type.Optional(ClusterName({ description: 'Only this etcd cluster' })),
    from: Type.Optional(Instant({ description: 'Window start. Default: to − 24 h' })),
    to: Type.Optional(Instant({ description: 'Window end. Default now' })),
  },
  { additionalProperties: false },
);
export type TailerLagParams = Static<typeof TailerLagQuery>;

export const LagPointSchema = Type.Object({
  at: Type.String({ format: 'date-time', description: 'Bucket start' }),
  lagSecondsMax: NullableNumber('Worst lag behind etcd in the bucket, seconds; null when no tailer published status'),
  lagRevisionsMax: Type.Union([Type.String({ pattern: '^[0-9]+$' }), Type.Null()], {
    description: 'Worst lag in revisions (decimal string); null when no status',
  }),
  checkpoint: Type.Union([Type.String({ pattern: '^[0-9]+$' }), Type.Null()], { description: 'Newest checkpoint in the bucket (decimal string)' }),
  samples: Type.Number({ description: 'Status samples in the bucket' }),
});

export const TailerLagSchema = Type.Object(
  {
    from: Type.String({ format: 'date-time' }),
    to: Type.String({ format: 'date-time' }),
    bucketSeconds: Type.Number(),
    clusters: Type.Array(Type.Object({ cluster: Type.String(), series: Type.Array(LagPointSchema) })),
  },
  {
    examples: [
      {
        from: '2025-11-28T12:00:00.000Z',
        to: '2025-11-29T12:00:00.000Z',
        bucketSeconds: 900,
        clusters: [
          { cluster: 'local', series: [{ at: '2025-11-28T12:00:00.000Z', lagSecondsMax: 0.06, lagRevisionsMax: '3', checkpoint: '182331', samples: 900 }] },
        ],
      },
    ],
  },
);
export type TailerLag = Static<typeof TailerLagSchema>;

type Num = string | number | null;
interface LagRow {
  cluster: string;
  bucket_ms: Num;
  lag_seconds_max: Num;
  lag_revisions_max: Num;
  checkpoint: Num;
  samples: Num;
}

export async function tailerLag(deps: ReportDeps, p: TailerLagParams, nowMs: number): Promise<TailerLag> {
  // Lag is mostly looked at recently: the default window is the last 24 h (from/to are schema-checked ISO 8601).
  // parseInstant is the validator's own reading, so it agrees with what passed; the defaults stay within its range.
  const given = (text: string | undefined): number | undefined => (text === undefined ? undefined : parseInstant(text));
  const to = given(p.to) ?? Math.min(Math.max((given(p.from) ?? nowMs) + (p.from !== undefined ? DEFAULT_SPAN_MS : 0), INSTANT_MIN_MS), nowMs, INSTANT_MAX_MS);
  const from = p.from ?? new Date(Math.max(to - DEFAULT_SPAN_MS, INSTANT_MIN_MS)).toISOString();
  const { fromMs, toMs } = resolveWindow({ from, to: p.to ?? new Date(to).toISOString() }, deps.limits.maxWindowDays, nowMs);
  const bucketSeconds = bucketFor(toMs - fromMs, LAG_BUCKET_SECONDS);
  const rows = await reportRows<LagRow>(deps, LAG, { cluster: p.cluster ?? '', fromMs, toMs, bucketSeconds });
  const byCluster = new Map<string, Map<number, LagRow>>();
  for (const r of rows) {
    const m = byCluster.get(r.cluster) ?? new Map<number, LagRow>();
    m.set(num(r.bucket_ms) ?? 0, r);
    byCluster.set(r.cluster, m);
  }
  // Every bucket of the window, empty ones as nulls: a plot shows a break where no tailer ran.
  const starts = bucketStarts(fromMs, toMs, bucketSeconds);
  const clusters = [...byCluster.keys()].sort().map((cluster) => ({
    cluster,
    series: starts.map((at) => {
      const b = byCluster.get(cluster)?.get(at);
      return {
        at: new Date(at).toISOString(),
        lagSecondsMax: b ? num(b.lag_seconds_max) : null,
        lagRevisionsMax: b ? String(b.lag_revisions_max) : null,
        checkpoint: b ? String(b.checkpoint) : null,
        samples: b ? (num(b.samples) ?? 0) : 0,
      };
    }),
  }));
  return { from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString(), bucketSeconds, clusters };
}
