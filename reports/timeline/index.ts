// Key timeline (the console's timeline page): the grants of one key, or of the
// busiest keys under a prefix, over a window — as one bar per grant when they
// are few enough to draw, else as per-key time buckets aggregated in
// ClickHouse (held time, grants, holders, expiries, force-releases, foreign
// grants and holds deleted by hand), so a
// 30-day window of a busy cluster reaches the browser as a bounded number of
// cells. History gaps in the window come with their wall-clock span.
import Type, { type Static } from 'typebox';
import { LockauditError } from '../../core/errors.js';
import { grantFilterParams, pickGrantFilters } from '../../grants/filter.js';
import { GrantItemSchema, toItem, type GrantItem } from '../grantHistory/index.js';
import { clusterInScope, NarrowedSchema, scopeParams, scopeRead, type ReadScope } from '../../grants/scope.js';
import { ClusterName, Instant, KeyPrefix, LockName, NullableNumber } from '../../grants/schemas.js';
import { reportRows, type ReportDeps } from '../../platform/reportQuery.js';
import { num } from '../render.js';
import { loadSql } from '../../platform/sql.js';
import { bucketFor, resolveWindow } from '../window.js';

const LANES = loadSql('reports/timeline/lanes.sql');
const GRANTS = loadSql('reports/timeline/grants.sql');
const CELLS = loadSql('reports/timeline/cells.sql');
const GAPS = loadSql('reports/timeline/gaps.sql');
const GAP_BOUNDS = loadSql('reports/timeline/gapBounds.sql');

/** Bucket sizes for cells: finer than the contention series, since a busy hour is worth looking into. */
export const CELL_SECONDS = [1, 5, 10, 30, 60, 300, 900, 3600, 10_800, 21_600, 86_400] as const;
export const MAX_CELL_BUCKETS = 240;
export const MAX_LANES = 50;
/** The default window of a timeline of every key: the last hour. */
export const EVERY_KEY_WINDOW_MS = 3_600_000;
const MAX_GAPS = 20;

export const TimelineQuery = Type.Object(
  {
    key: Type.Optional(
      LockName({ description: 'One key (give key or keyPrefix, or neither: every key, the busiest drawn, over the last hour unless from or to is given)' }),
    ),
    keyPrefix: Type.Optional(KeyPrefix({ description: `Every key under this prefix; the ${MAX_LANES} busiest are drawn` })),
    cluster: Type.Optional(ClusterName({ description: 'Only this etcd cluster' })),
    from: Type.Optional(Instant({ description: 'Window start: grants still held at or after this instant. Default: to − LOCKAUDIT_MAX_WINDOW_DAYS' })),
    to: Type.Optional(Instant({ description: 'Window end: grants granted at or before this instant. Default now' })),
    maxBars: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 5000, default: 2000, description: 'Up to this many grants come as bars; more come as time buckets' }),
    ),
  },
  { additionalProperties: false },
);
export type TimelineParams = Static<typeof TimelineQuery>;

export const TimelineCellSchema = Type.Object({
  key: Type.String(),
  at: Type.String({ format: 'date-time', description: 'Bucket start' }),
  grants: Type.Number({ description: 'Grants started in the bucket' }),
  holders: Type.Number({ description: 'Distinct holders holding the key in the bucket' }),
  topHolder: Type.String({ description: 'The holder that held the key longest in the bucket' }),
  heldMs: Type.Number({ description: 'Time the key was held in the bucket (overlapping holds of unprotected grants add up)' }),
  expiries: Type.Number({ description: 'Holds that ended by lease expiry in the bucket' }),
  forceReleases: Type.Number({ description: 'Holds force-released in the bucket' }),
  unprotected: Type.Number({ description: 'Unprotected (fail-open) grants started in the bucket' }),
  foreign: Type.Number({ description: 'Foreign grants started in the bucket: holds put straight into etcd, not by the lock API' }),
  deleted: Type.Number({ description: 'Holds deleted by hand in the bucket: no marker, and the lease outlived them (no expiry, no API release)' }),
});
export type TimelineCell = Static<typeof TimelineCellSchema>;

export const TimelineGapSchema = Type.Object({
  cluster: Type.String(),
  fromRevision: Type.String(),
  toRevision: Type.String(),
  reason: Type.String(),
  detectedAt: Type.String({ format: 'date-time' }),
  fromTime: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'Wall time of the last captured event before the gap; null when none',
  }),
  toTime: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'Wall time of the first captured event after the gap; null when none yet',
  }),
});
export type TimelineGap = Static<typeof TimelineGapSchema>;

export const TimelineSchema = Type.Object(
  {
    from: Type.String({ format: 'date-time' }),
    to: Type.String({ format: 'date-time' }),
    mode: Type.Union([Type.Literal('grants'), Type.Literal('buckets')], {
      description: 'grants: one bar per grant in `grants`; buckets: per-key time buckets in `cells`',
    }),
    lanes: Type.Array(Type.String(), { description: 'The keys drawn, busiest first' }),
    totalLanes: Type.Number({ description: 'Keys with grants in the window (more than `lanes` when the prefix has more than 50)' }),
    totalGrants: Type.Number({ description: 'Grants of the drawn lanes in the window' }),
    bucketSeconds: NullableNumber('Cell width in buckets mode; null in grants mode'),
    grants: Type.Array(GrantItemSchema),
    cells: Type.Array(TimelineCellSchema),
    gaps: Type.Array(TimelineGapSchema),
    narrowedTo: Type.Optional(NarrowedSchema),
  },
  {
    examples: [
      {
        from: '2025-11-28T00:00:00.000Z',
        to: '2025-11-29T00:00:00.000Z',
        mode: 'buckets',
        lanes: ['payments/acct-42'],
        totalLanes: 1,
        totalGrants: 8812,
        bucketSeconds: 900,
        grants: [],
        cells: [
          {
            key: 'payments/acct-42',
            at: '2025-11-28T00:00:00.000Z',
            grants: 92,
            holders: 7,
            topHolder: 'spiffe://corp/payments-worker',
            heldMs: 612000,
            expiries: 1,
            forceReleases: 0,
            unprotected: 0,
            foreign: 0,
            deleted: 0,
          },
        ],
        gaps: [
          {
            cluster: 'local',
            fromRevision: '1200',
            toRevision: '1450',
            reason: 'compacted',
            detectedAt: '2025-11-28T10:02:00.000Z',
            fromTime: '2025-11-28T09:58:12.400Z',
            toTime: '2025-11-28T10:01:59.020Z',
          },
        ],
      },
    ],
  },
);
export type Timeline = Static<typeof TimelineSchema>;

type Num = string | number | null;
interface LaneRow {
  key: string;
  grants: Num;
  lanes: Num;
  total: Num;
}
interface CellRow {
  key: string;
  bucket_ms: Num;
  grants: Num;
  holders: Num;
  top_holder: string;
  held_ms: Num;
  expiries: Num;
  force_releases: Num;
  unprotected: Num;
  foreign_grants: Num;
  deleted: Num;
}
interface GapRow {
  cluster: string;
  from_revision: string;
  to_revision: string;
  reason: string;
  detected_ms: Num;
}
interface BoundsRow {
  before_ms: Num;
  after_ms: Num;
}

const n0 = (v: Num | undefined): number => num(v ?? null) ?? 0;
const isoOf = (ms: Num): string | null => (num(ms) === null ? null : new Date(n0(ms)).toISOString());

export async function timeline(deps: ReportDeps, p: TimelineParams, nowMs: number, scope: ReadScope = null): Promise<Timeline> {
  if (p.key !== undefined && p.keyPrefix !== undefined) {
    throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', 'querystring.key: give at most one of key and keyPrefix');
  }
  // A key, prefix, namespace or cluster outside a scoped reader's scope is a 403; what it leaves open is narrowed.
  const narrowed = scopeRead(scope, p, (n) => `querystring.${n}`);
  // Neither: every key, the busiest drawn — over the last hour unless a window is given (what the console opens on).
  const everyKey = p.key === undefined && p.keyPrefix === undefined;
  const from = p.from ?? (everyKey && p.to === undefined ? new Date(nowMs - EVERY_KEY_WINDOW_MS).toISOString() : undefined);
  const { fromMs, toMs } = resolveWindow({ from, to: p.to }, deps.limits.maxWindowDays, nowMs);
  const maxBars = p.maxBars ?? 2000;
  const cluster = p.cluster ?? '';
  const laneRows = await reportRows<LaneRow>(deps, LANES, {
    ...grantFilterParams(pickGrantFilters(p), { fromMs, toMs, rule: 'overlapping' }, scope),
    maxLanes: MAX_LANES,
  });
  const lanes = laneRows.map((r) => r.key);
  const totalGrants = laneRows.reduce((sum, r) => sum + n0(r.grants), 0);
  const base = {
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs).toISOString(),
    lanes,
    totalLanes: n0(laneRows[0]?.lanes),
    totalGrants,
    // A cluster-scoped reader sees its clusters' gaps only (no cluster given reads every cluster's).
    gaps: (await gapsIn(deps, cluster, fromMs, toMs)).filter((g) => clusterInScope(scope, g.cluster)),
    ...(narrowed ? { narrowedTo: narrowed } : {}),
  };
  if (totalGrants <= maxBars) {
    const rows = lanes.length
      ? await reportRows<Parameters<typeof toItem>[0]>(deps, GRANTS, {
          lanes,
          cluster,
          fromMs,
          toMs,
          limit: maxBars,
          ...scopeParams(scope),
        })
      : [];
    const grants: GrantItem[] = rows.map(toItem);
    return { ...base, mode: 'grants', bucketSeconds: null, grants, cells: [] };
  }
  const bucketSeconds = bucketFor(toMs - fromMs, CELL_SECONDS, MAX_CELL_BUCKETS);
  const rows = await reportRows<CellRow>(deps, CELLS, { lanes, cluster, fromMs, toMs, bucketSeconds, ...scopeParams(scope) });
  const cells: TimelineCell[] = rows.map((r) => ({
    key: r.key,
    at: new Date(n0(r.bucket_ms)).toISOString(),
    grants: n0(r.grants),
    holders: n0(r.holders),
    topHolder: r.top_holder,
    heldMs: n0(r.held_ms),
    expiries: n0(r.expiries),
    forceReleases: n0(r.force_releases),
    unprotected: n0(r.unprotected),
    foreign: n0(r.foreign_grants),
    deleted: n0(r.deleted),
  }));
  return { ...base, mode: 'buckets', bucketSeconds, grants: [], cells };
}

/** Gaps whose wall-clock span meets [fromMs, toMs]; a bound nobody captured is open (null). */
async function gapsIn(deps: ReportDeps, cluster: string, fromMs: number, toMs: number): Promise<TimelineGap[]> {
  const rows = await reportRows<GapRow>(deps, GAPS, { cluster, fromMs, limit: MAX_GAPS });
  // One index lookup per gap (at most MAX_GAPS), asked at once rather than one after another.
  const bounds = await Promise.all(
    rows.map((g) => reportRows<BoundsRow>(deps, GAP_BOUNDS, { cluster: g.cluster, fromRevision: g.from_revision, toRevision: g.to_revision })),
  );
  return rows.flatMap((g, i) => {
    const before = num(bounds[i]?.[0]?.before_ms ?? null);
    const after = num(bounds[i]?.[0]?.after_ms ?? null);
    if ((before ?? -Infinity) > toMs || (after ?? Infinity) < fromMs) return [];
    return [
      {
        cluster: g.cluster,
        fromRevision: String(g.from_revision),
        toRevision: String(g.to_revision),
        reason: g.reason,
        detectedAt: new Date(n0(g.detected_ms)).toISOString(),
        fromTime: isoOf(before),
        toTime: isoOf(after),
      },
    ];
  });
}
