// GET /v1/quarantine — quarantined changes (reports/quarantine). Thin: auth,
// rate limit, the read audit, then the report module.
import { QuarantinePageSchema, QuarantineQuery, quarantinePage, recordQuarantineRead } from '../../reports/quarantine/index.js';
import { cursorKey } from '../../reports/cursor.js';
import { pickCluster } from '../../grants/clusters.js';
import { scopeRead } from '../../grants/scope.js';
import type { App, RouteOptions } from '../types.js';
import { readScope, requireRoles } from '../auth.js';
import { errorResponses } from './grants.js';

export async function quarantineRoutes(app: App, { ctx }: RouteOptions): Promise<void> {
  const deps = { store: ctx.store, limits: ctx.config.reports, cursorKey: cursorKey(ctx.config.api.cursorSecret) };
  const clusters = ctx.config.etcd.clusters.map((c) => c.name);
  app.get(
    '/v1/quarantine',
    {
      preValidation: [requireRoles('auditor', 'investigator'), app.reportRateLimit],
      config: { scope: 'scoped' },
      schema: {
        tags: ['tailer'],
        summary: 'Quarantined changes',
        description:
          'Changes the tailer could not decode or store, set aside so capture went on: revision, key, reason and the raw value, ' +
          'oldest first, by cluster and time; page with nextCursor. Roles: auditor, investigator. Every read is recorded (who, filters, when). ' +
          "A scoped token sees its clusters' changes only and, when it names namespaces, only hold and queue keys in them (a cluster outside it: 403; narrowedTo).",
        querystring: QuarantineQuery,
        response: {
          200: { description: 'One page of quarantined changes', content: { 'application/json': { schema: QuarantinePageSchema } } },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const params = request.query;
      const who = request.identity;
      const now = Date.now();
      const scope = readScope(request);
      scopeRead(scope, { cluster: params.cluster }, (n) => `querystring.${n}`); // before the cluster is looked up
      // A cluster no tailer ever captured (a typo) is a 400, not an empty page that reads as "nothing quarantined".
      if (params.cluster !== undefined) await pickCluster({ ...deps, clusters }, params.cluster);
      if (who) await recordQuarantineRead(deps, { identity: who.identity, tokenId: who.tokenId, params, requestId: String(request.id), atMs: now });
      return quarantinePage(deps, params, now, scope);
    },
  );
}
