// GET /v1/tailers and GET /v1/gaps (DESIGN.md §6): tailer health per cluster,
// read from what the elected tailers publish in ClickHouse, so any API
// process answers, wherever the tailers run. Revisions travel as strings.
import Type, { type Static } from 'typebox';
import { TailerLagQuery, TailerLagSchema, tailerLag } from '../../reports/tailerLag/index.js';
import { ClusterName } from '../../reports/schemas.js';
import { requireRoles } from '../auth.js';
import { errorResponses } from './grants.js';
import type { App, RouteOptions } from '../types.js';

const Revision = Type.String({ pattern: '^[0-9]+$', description: 'decimal revision' });

const GapSchema = Type.Object({
  cluster: Type.String(),
  fromRevision: Revision,
  toRevision: Revision,
  detectedAt: Type.String({ description: 'ISO-8601' }),
  reason: Type.String(),
});

const TailerSchema = Type.Object({
  cluster: Type.String(),
  clusterId: Type.Union([Type.String(), Type.Null()]),
  leader: Type.Union([Type.String(), Type.Null()]),
  checkpoint: Revision,
  headRevision: Type.Union([Revision, Type.Null()]),
  lagRevisions: Type.Union([Revision, Type.Null()]),
  lagSeconds: Type.Union([Type.Number(), Type.Null()]),
  compactRevision: Type.Union([Revision, Type.Null()]),
  statusAt: Type.Union([Type.String(), Type.Null()]),
  gaps: Type.Integer({ minimum: 0 }),
});

const GapsQuery = Type.Object(
  {
    cluster: Type.Optional(ClusterName()),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  },
  { additionalProperties: false },
);

type Tailer = Static<typeof TailerSchema>;
type GapItem = Static<typeof GapSchema>;

const iso = (ms: string | number): string => new Date(typeof ms === 'number' ? ms : Date.parse(`${ms.replace(' ', 'T')}Z`)).toISOString();

export async function tailerRoutes(app: App, { ctx }: RouteOptions): Promise<void> {
  // Checked before validation: a caller without the role learns nothing about its input.
  const guard = requireRoles('investigator', 'auditor', 'admin');

  app.get(
    '/v1/tailers',
    {
      preValidation: guard,
      schema: { tags: ['tailer'], summary: 'Tailer health per etcd cluster', response: { 200: Type.Object({ items: Type.Array(TailerSchema) }) } },
    },
    async () => {
      const status = await ctx.store.rows<{ cluster: string; cluster_id: string; leader: string; head_revision: string; compact_revision: string; lag_seconds: number; updated_at: string }>(
        'SELECT cluster, cluster_id, leader, head_revision, compact_revision, lag_seconds, updated_at FROM {db:Identifier}.tailer_status FINAL',
      );
      const checkpoints = await ctx.store.rows<{ cluster: string; revision: string }>(
        'SELECT cluster, max(revision) AS revision FROM {db:Identifier}.checkpoints GROUP BY cluster',
      );
      const gaps = await ctx.store.rows<{ cluster: string; n: string }>('SELECT cluster, count() AS n FROM {db:Identifier}.gaps FINAL GROUP BY cluster');
      const names = new Set<string>([...ctx.config.etcd.clusters.map((c) => c.name), ...checkpoints.map((c) => c.cluster)]);
      const items: Tailer[] = [...names].sort().map((cluster) => {
        const s = status.find((r) => r.cluster === cluster);
        const checkpoint = BigInt(checkpoints.find((r) => r.cluster === cluster)?.revision ?? '0');
        const head = s ? BigInt(s.head_revision) : undefined;
        return {
          cluster,
          clusterId: s?.cluster_id || null,
          leader: s?.leader || null,
          checkpoint: checkpoint.toString(),
          headRevision: head === undefined ? null : head.toString(),
          lagRevisions: head === undefined ? null : (head > checkpoint ? head - checkpoint : 0n).toString(),
          lagSeconds: s ? Number(s.lag_seconds) : null,
          compactRevision: s && s.compact_revision !== '0' ? s.compact_revision : null,
          statusAt: s ? iso(s.updated_at) : null,
          gaps: Number(gaps.find((g) => g.cluster === cluster)?.n ?? 0),
        };
      });
      return { items };
    },
  );

  app.get(
    '/v1/tailers/lag',
    {
      preValidation: guard,
      schema: {
        tags: ['tailer'],
        summary: 'Tailer lag over time',
        description: 'Per cluster and time bucket (at most 241 a cluster: 240 bucket widths, and a window not aligned to bucket edges touches one more): the worst lag behind etcd in seconds and revisions, the newest checkpoint and the number of status samples (0: no tailer published status). Default window: the last 24 h. Roles: investigator, auditor, admin.',
        querystring: TailerLagQuery,
        response: { 200: { ...TailerLagSchema, description: 'Lag series per cluster' }, ...errorResponses },
      },
    },
    async (request) => tailerLag({ store: ctx.store, limits: ctx.config.reports }, request.query as Static<typeof TailerLagQuery>, Date.now()),
  );

  app.get(
    '/v1/gaps',
    {
      preValidation: guard,
      schema: { tags: ['tailer'], summary: 'History ranges lost before capture', querystring: GapsQuery, response: { 200: Type.Object({ items: Type.Array(GapSchema) }) } },
    },
    async (request) => {
      const q = request.query as Static<typeof GapsQuery>;
      const rows = await ctx.store.rows<{ cluster: string; from_revision: string; to_revision: string; detected_at: string; reason: string }>(
        `SELECT cluster, from_revision, to_revision, detected_at, reason FROM {db:Identifier}.gaps FINAL
         WHERE {cluster:String} = '' OR cluster = {cluster:String}
         ORDER BY detected_at DESC LIMIT {limit:UInt32}`,
        { cluster: q.cluster ?? '', limit: q.limit ?? 100 },
      );
      const items: GapItem[] = rows.map((r) => ({ cluster: r.cluster, fromRevision: r.from_revision, toRevision: r.to_revision, detectedAt: iso(r.detected_at), reason: r.reason }));
      return { items };
    },
  );
}
