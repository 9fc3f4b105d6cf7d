// GET /v1/two-person-log — the life of every two-person request (reports/twoPersonLog). Thin: auth, rate
// limit, then the report module.
import { readScope, requireRoles } from '../auth.js';
import { TwoPersonLogQuery, TwoPersonLogSchema, twoPersonLog } from '../../reports/twoPersonLog/index.js';
import type { App, RouteOptions } from '../types.js';
import { errorResponses } from './grants.js';

export async function twoPersonLogRoutes(app: App, { ctx }: RouteOptions): Promise<void> {
  const deps = { store: ctx.store, limits: ctx.config.reports };
  app.get(
    '/v1/two-person-log',
    {
      preValidation: [requireRoles('auditor', 'lock-operator', 'admin'), app.reportRateLimit],
      config: { scope: 'scoped' },
      schema: {
        tags: ['force-release'],
        summary: 'The life of every two-person request',
        description:
          'Force-release and epoch-advance requests as the lock API recorded them: requested, approved, rejected, cancelled, and every approval refused ' +
          '(refused-unproven: the request in etcd was edited or written around the API; refused-changed: not the request its approver was shown; ' +
          "refused-self; refused-expired), newest first. Roles: auditor, lock-operator, admin. A scoped token sees its clusters' acts and its namespaces' force-releases (epoch advances are the cluster's; narrowedTo).",
        querystring: TwoPersonLogQuery,
        response: { 200: { description: 'The acts, newest first', content: { 'application/json': { schema: TwoPersonLogSchema } } }, ...errorResponses },
      },
    },
    async (request) => twoPersonLog(deps, request.query, Date.now(), readScope(request)),
  );
}
