// GET /v1/tailers, /v1/tailers/lag and /v1/gaps: the tailer health reports
// (reports/tailerHealth, reports/tailerLag) over HTTP.
import Type, { type Static } from 'typebox';
import { TailerLagQuery, TailerLagSchema, tailerLag } from '../../reports/tailerLag/index.js';
import { GapSchema, GapsQuery, historyGaps, tailerHealth, TailerSchema } from '../../reports/tailerHealth/index.js';
import { pickCluster } from '../../grants/clusters.js';
import { clusterInScope, scopeRead } from '../../grants/scope.js';
import { readScope, requireRoles } from '../auth.js';
import { errorResponses } from './grants.js';
import type { App, RouteOptions } from '../types.js';

export async function tailerRoutes(app: App, { ctx }: RouteOptions): Promise<void> {
  // Checked before validation: a caller without the role learns nothing about its input.
  const guard = requireRoles('investigator', 'auditor', 'admin');

  app.get(
    '/v1/tailers',
    {
      preValidation: guard,
      config: { scope: 'cluster-wide' }, // no per-key data: a scoped token reads it, of its clusters only
      schema: { tags: ['tailer'], summary: 'Tailer health per etcd cluster', response: { 200: Type.Object({ items: Type.Array(TailerSchema) }) } },
    },
    async (request) => ({
      items: (
        await tailerHealth(
          { store: ctx.store, limits: ctx.config.reports },
          ctx.config.etcd.clusters.map((c) => c.name),
        )
      ).filter((t) => clusterInScope(readScope(request), t.cluster)),
    }),
  );

  app.get(
    '/v1/tailers/lag',
    {
      preValidation: guard,
      config: { scope: 'cluster-wide' }, // no per-key data: a scoped token reads it, of its clusters only
      schema: {
        tags: ['tailer'],
        summary: 'Tailer lag over time',
        description:
          'Per cluster and time bucket (at most 241 a cluster: 240 bucket widths, and a window not aligned to bucket edges touches one more): the worst lag behind etcd in seconds and revisions, the newest checkpoint and the number of status samples (0: no tailer published status). Default window: the last 24 h. Roles: investigator, auditor, admin.',
        querystring: TailerLagQuery,
        response: { 200: { ...TailerLagSchema, description: 'Lag series per cluster' }, ...errorResponses },
      },
    },
    async (request) => {
      const query = request.query as Static<typeof TailerLagQuery>;
      const deps = { store: ctx.store, limits: ctx.config.reports };
      const scope = readScope(request);
      scopeRead(scope, { cluster: query.cluster }, (n) => `querystring.${n}`);
      const all = await tailerLag(deps, query, Date.now());
      const lag = { ...all, clusters: all.clusters.filter((c) => clusterInScope(scope, c.cluster)) };
      // A typo (no status sample in the window, not configured, never captured) is a 400, not a series of nulls.
      const sampled = lag.clusters.some((c) => c.series.some((p) => p.samples > 0));
      if (query.cluster !== undefined && !sampled) await pickCluster({ ...deps, clusters: ctx.config.etcd.clusters.map((c) => c.name) }, query.cluster);
      return lag;
    },
  );

  app.get(
    '/v1/gaps',
    {
      preValidation: guard,
      config: { scope: 'cluster-wide' }, // no per-key data: a scoped token reads it, of its clusters only
      schema: {
        tags: ['tailer'],
        summary: 'History ranges lost before capture',
        querystring: GapsQuery,
        response: { 200: Type.Object({ items: Type.Array(GapSchema) }) },
      },
    },
    async (request) => {
      const query = request.query as Static<typeof GapsQuery>;
      const deps = { store: ctx.store, limits: ctx.config.reports };
      const scope = readScope(request);
      scopeRead(scope, { cluster: query.cluster }, (n) => `querystring.${n}`);
      // A cluster no tailer ever captured (a typo) is a 400, not an empty list that reads as "no gaps".
      if (query.cluster !== undefined) await pickCluster({ ...deps, clusters: ctx.config.etcd.clusters.map((c) => c.name) }, query.cluster);
      return { items: (await historyGaps(deps, query)).filter((g) => clusterInScope(scope, g.cluster)) };
    },
  );
}
