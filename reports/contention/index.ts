// Contention (DESIGN §4): per namespace, class or key over a window — grants,
// distinct holders, wait and hold percentiles, handoff gap, expiry ratio,
// force-releases — plus the hottest keys and a time series for plots.
import Type, { type Static } from 'typebox';
import { ClassName, Instant, Namespace, NullableNumber } from '../../grants/schemas.js';
import { NarrowedSchema, scopeParams, scopeRead, type ReadScope } from '../../grants/scope.js';
import { reportRows, type ReportDeps } from '../../platform/reportQuery.js';
import { num } from '../render.js';
import { loadSql, type SqlFile } from '../../platform/sql.js';
import { bucketFor, bucketStarts, resolveWindow } from '../window.js';

const CONTENTION = loadSql('reports/contention/contention.sql');
const COVERED = loadSql('reports/contention/covered.sql');
const HOURS = loadSql('reports/contention/hours.sql');
const HOURS_TOP_KEYS = loadSql('reports/contention/hoursTopKeys.sql');
const HOURS_PENDING = loadSql('reports/contention/hoursPending.sql');

export const ContentionQuery = Type.Object(
  {
    from: Type.Optional(Instant({ description: 'Window start (grants granted at or after). Default: to − LOCKAUDIT_MAX_WINDOW_DAYS' })),
    to: Type.Optional(Instant({ description: 'Window end (grants granted at or before). Default now' })),
    namespace: Type.Optional(Namespace()),
    class: Type.Optional(ClassName()),
    by: Type.Optional(Type.Union([Type.Literal('namespace'), Type.Literal('class'), Type.Literal('key')], { default: 'namespace' })),
    top: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'How many hottest keys (and key groups)' })),
  },
  { additionalProperties: false },
);
export type ContentionParams = Static<typeof ContentionQuery>;

const P = (names: string[]) => Type.Object(Object.fromEntries(names.map((n) => [n, NullableNumber('ms; null when there is no value')])));
export const ContentionGroupSchema = Type.Object({
  group: Type.String(),
  grants: Type.Number(),
  distinctHolders: Type.Number(),
  waitMs: P(['p50', 'p95', 'p99']),
  holdMs: P(['p50', 'p99']),
  handoffGapMs: P(['p50', 'p95']),
  handoffs: Type.Number({ description: 'Releases followed by a grant of the same key inside the window' }),
  expiries: Type.Number(),
  expiryRatio: Type.Number({ description: 'expiries / grants' }),
  forceReleases: Type.Number(),
});
export type ContentionGroup = Static<typeof ContentionGroupSchema>;

export const HotKeySchema = Type.Object({
  key: Type.String(),
  grants: Type.Number(),
  distinctHolders: Type.Number(),
  waitP95Ms: Type.Number(),
  expiries: Type.Number(),
  forceReleases: Type.Number(),
});
export const SeriesPointSchema = Type.Object({
  at: Type.String({ format: 'date-time' }),
  grants: Type.Number(),
  waitP95Ms: Type.Number({ description: 'wait p95; 0 in an empty bucket' }),
  waitMs: P(['p50', 'p95', 'p99']),
  holdMs: P(['p50', 'p99']),
  expiries: Type.Number(),
  forceReleases: Type.Number(),
});

export const ContentionSchema = Type.Object(
  {
    from: Type.String({ format: 'date-time' }),
    to: Type.String({ format: 'date-time' }),
    by: Type.String(),
    groups: Type.Array(ContentionGroupSchema),
    hottestKeys: Type.Array(HotKeySchema),
    bucketSeconds: Type.Number(),
    series: Type.Array(SeriesPointSchema),
    narrowedTo: Type.Optional(NarrowedSchema),
  },
  {
    examples: [
      {
        from: '2025-10-30T00:00:00.000Z',
        to: '2025-11-29T00:00:00.000Z',
        by: 'namespace',
        groups: [
          {
            group: 'payments',
            grants: 120443,
            distinctHolders: 38,
            waitMs: { p50: 4, p95: 180, p99: 920 },
            holdMs: { p50: 35, p99: 4100 },
            handoffGapMs: { p50: 2, p95: 40 },
            handoffs: 90112,
            expiries: 61,
            expiryRatio: 0.0005,
            forceReleases: 2,
          },
        ],
        hottestKeys: [{ key: 'payments/acct-42', grants: 8812, distinctHolders: 12, waitP95Ms: 640, expiries: 3, forceReleases: 0 }],
        bucketSeconds: 10800,
        series: [
          {
            at: '2025-10-30T00:00:00.000Z',
            grants: 512,
            waitP95Ms: 170,
            waitMs: { p50: 3, p95: 170, p99: 810 },
            holdMs: { p50: 31, p99: 3900 },
            expiries: 0,
            forceReleases: 0,
          },
        ],
      },
    ],
  },
);
export type Contention = Static<typeof ContentionSchema>;

type Num = string | number | null;
interface Row {
  kind: 'group' | 'key' | 'bucket';
  grp: string;
  key: string;
  bucket_ms: Num;
  grants: Num;
  holders: Num;
  wait: Num[];
  ended: Num;
  hold: Num[];
  handoffs: Num;
  handoff: Num[];
  expiries: Num;
  force_releases: Num;
}

const n0 = (v: Num | undefined): number => num(v ?? null) ?? 0;
const pct = (values: Num[], i: number, present: boolean): number | null => (present ? num(values[i] ?? null) : null);

export interface ContentionOptions {
  /**
   * Read sealed hours from their seals (sql/130, seal.ts) when the buckets are
   * whole hours (default true); false: always the raw query (contention.sql),
   * which the known-answer tests and the bench compare against.
   */
  preaggregated?: boolean;
  /** Told each query's name and time (ms) as it ends: the reports bench's stage breakdown. */
  onStage?: (name: string, ms: number) => void;
}

interface PendingRow {
  cluster: string;
  key: string;
  grant_revision: string;
  spool_id: string;
  timeline: number | string;
}

interface CoveredRow {
  cluster: string;
  hour_s: number;
}

/** Covered hours (sorted by cluster, hour) as runs of consecutive hours: cluster i's hours [runFrom[i], runTo[i]). */
export function coveredRuns(covered: ReadonlyArray<{ cluster: string; hour_s: number | string }>): { clusters: string[]; runFrom: number[]; runTo: number[] } {
  const runs = { clusters: [] as string[], runFrom: [] as number[], runTo: [] as number[] };
  for (const c of covered) {
    const hour = Number(c.hour_s);
    const last = runs.clusters.length - 1;
    if (last >= 0 && runs.clusters[last] === c.cluster && runs.runTo[last] === hour) runs.runTo[last] = hour + 3600;
    else {
      runs.clusters.push(c.cluster);
      runs.runFrom.push(hour);
      runs.runTo.push(hour + 3600);
    }
  }
  return runs;
}

/** The report's rows: from the sealed hours where it can (hours.sql), else raw (contention.sql) — the same rows either way. */
async function contentionRows(
  deps: ReportDeps,
  params: Record<string, string | number | string[]>,
  bucketSeconds: number,
  opts: ContentionOptions,
): Promise<Row[]> {
  const timed = async <T>(sql: SqlFile, p: Record<string, unknown>): Promise<T[]> => {
    const t0 = performance.now();
    const rows = await reportRows<T>(deps, sql, p);
    opts.onStage?.(sql.name, performance.now() - t0);
    return rows;
  };
  if ((opts.preaggregated ?? true) && bucketSeconds % 3600 === 0) {
    const covered = await timed<CoveredRow>(COVERED, { fromMs: params.fromMs, toMs: params.toMs, lookbackDays: deps.limits.maxWindowDays });
    if (covered.length > 0) {
      const seals = coveredRuns(covered);
      // Each its own query, once: a WITH subquery is run again at every place that names it.
      const [top, pending] = await Promise.all([
        timed<{ key: string }>(HOURS_TOP_KEYS, {
          ...seals,
          fromMs: params.fromMs,
          toMs: params.toMs,
          namespace: params.namespace,
          class: params.class,
          top: params.top,
          scopeNamespaces: params.scopeNamespaces,
          scopeClusters: params.scopeClusters,
          canaryNamespace: params.canaryNamespace,
          canaryHolder: params.canaryHolder,
          withCanary: params.withCanary,
        }),
        timed<PendingRow>(HOURS_PENDING, seals),
      ]);
      return timed<Row>(HOURS, {
        ...params,
        ...seals,
        topKeys: top.map((t) => t.key),
        pendingClusters: pending.map((p) => p.cluster),
        pendingKeys: pending.map((p) => p.key),
        pendingRevisions: pending.map((p) => p.grant_revision),
        pendingSpools: pending.map((p) => p.spool_id),
        pendingTimelines: pending.map((p) => Number(p.timeline)),
      });
    }
  }
  return timed<Row>(CONTENTION, params);
}

/**
 * The contention report. A scoped reader (grants/scope.ts) sees only its scope's grants in every part — groups,
 * hottest keys, series — whether read raw or from sealed hours; a namespace outside it is a 403.
 */
export async function contention(
  deps: ReportDeps,
  p: ContentionParams,
  nowMs: number,
  opts: ContentionOptions = {},
  scope: ReadScope = null,
): Promise<Contention> {
  const narrowed = scopeRead(scope, p, (n) => `querystring.${n}`);
  const { fromMs, toMs } = resolveWindow({ from: p.from, to: p.to }, deps.limits.maxWindowDays, nowMs);
  const by = p.by ?? 'namespace';
  const top = p.top ?? 10;
  const bucketSeconds = bucketFor(toMs - fromMs);
  const rows = await contentionRows(
    deps,
    {
      by,
      fromMs,
      toMs,
      namespace: p.namespace ?? '',
      class: p.class ?? '',
      groupLimit: by === 'key' ? top : 10_000,
      top,
      bucketSeconds,
      ...scopeParams(scope),
    },
    bucketSeconds,
    opts,
  );
  const buckets = new Map(rows.filter((r) => r.kind === 'bucket').map((r) => [n0(r.bucket_ms), r]));
  // Every bucket of the window: an empty one has zero counts and no percentiles.
  const series: Contention['series'] = bucketStarts(fromMs, toMs, bucketSeconds).map((at) => {
    const b = buckets.get(at);
    const grants = n0(b?.grants);
    const ended = n0(b?.ended) > 0;
    const wait = b?.wait ?? [];
    const hold = b?.hold ?? [];
    return {
      at: new Date(at).toISOString(),
      grants,
      waitP95Ms: pct(wait, 1, grants > 0) ?? 0,
      waitMs: { p50: pct(wait, 0, grants > 0), p95: pct(wait, 1, grants > 0), p99: pct(wait, 2, grants > 0) },
      holdMs: { p50: pct(hold, 0, ended), p99: pct(hold, 1, ended) },
      expiries: n0(b?.expiries),
      forceReleases: n0(b?.force_releases),
    };
  });
  return {
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs).toISOString(),
    by,
    groups: rows
      .filter((r) => r.kind === 'group')
      .map((g) => {
        const grants = n0(g.grants);
        const ended = n0(g.ended) > 0;
        const handoffs = n0(g.handoffs);
        const expiries = n0(g.expiries);
        return {
          group: g.grp,
          grants,
          distinctHolders: n0(g.holders),
          waitMs: { p50: pct(g.wait, 0, grants > 0), p95: pct(g.wait, 1, grants > 0), p99: pct(g.wait, 2, grants > 0) },
          holdMs: { p50: pct(g.hold, 0, ended), p99: pct(g.hold, 1, ended) },
          handoffGapMs: { p50: pct(g.handoff, 0, handoffs > 0), p95: pct(g.handoff, 1, handoffs > 0) },
          handoffs,
          expiries,
          expiryRatio: grants > 0 ? expiries / grants : 0,
          forceReleases: n0(g.force_releases),
        };
      }),
    hottestKeys: rows
      .filter((r) => r.kind === 'key')
      .map((h) => ({
        key: h.key,
        grants: n0(h.grants),
        distinctHolders: n0(h.holders),
        waitP95Ms: pct(h.wait, 1, true) ?? 0,
        expiries: n0(h.expiries),
        forceReleases: n0(h.force_releases),
      })),
    bucketSeconds,
    series,
    ...(narrowed ? { narrowedTo: narrowed } : {}),
  };
}
