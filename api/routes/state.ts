// GET /v1/state and GET /v1/diff — the keyspace at a moment and what changed
// between two (reports/state, reports/diff). Thin: roles and rate limit
// before validation, the read audit, then the report module.
import { recordRead } from '../../reports/grantHistory/index.js';
import { DiffQuery, DiffSchema, diff } from '../../reports/diff/index.js';
import { StateQuery, StateSchema, stateAt } from '../../reports/state/index.js';
import type { App, RouteOptions } from '../types.js';
import { readScope, requireRoles } from '../auth.js';
import { errorResponses } from './grants.js';

export async function stateRoutes(app: App, { ctx }: RouteOptions): Promise<void> {
  const deps = { store: ctx.store, limits: ctx.config.reports, clusters: ctx.config.etcd.clusters.map((c) => c.name) };
  // Auth before validation: a caller without the role learns nothing about its input.
  const preValidation = [requireRoles('investigator', 'auditor'), app.reportRateLimit];

  app.get(
    '/v1/state',
    {
      preValidation,
      config: { scope: 'scoped' },
      schema: {
        tags: ['reports'],
        summary: 'The keyspace at a moment',
        description:
          'Every hold (holder, token, class, since), durable queue entry and lock class in force at one revision — `at` is a revision or an RFC 3339 time, ' +
          'resolved to the newest captured revision at or before it — from captured events alone. A revision inside a recorded gap is answered with ' +
          'complete=false, the gap named and the keys it hides listed under unknown. Roles: investigator, auditor. Every read is recorded like a grant history read. ' +
          "A scoped token sees its namespaces' holds, queue entries and classes only, of a cluster in its scope (a prefix or cluster outside it: 403; narrowedTo).",
        querystring: StateQuery,
        response: { 200: { ...StateSchema, description: 'The keyspace at that revision' }, ...errorResponses },
      },
    },
    async (request) => {
      const who = request.identity;
      if (who)
        await recordRead(deps, {
          identity: who.identity,
          tokenId: who.tokenId,
          filters: { ...request.query },
          format: 'state',
          paged: false,
          requestId: String(request.id),
          atMs: Date.now(),
        });
      return stateAt(deps, request.query, readScope(request));
    },
  );

  app.get(
    '/v1/diff',
    {
      preValidation,
      config: { scope: 'scoped' },
      schema: {
        tags: ['reports'],
        summary: 'What changed between two moments',
        description:
          'Between two moments (revisions or RFC 3339 times): holds that appeared, ended (how, at which revision, by whom) or changed holder; classes created, ' +
          'changed field by field, deleted; epoch advances; force-releases. appeared and ended are the exact set difference of the two states. Gaps inside ' +
          'or across the window are named and make complete false. Roles: investigator, auditor. Every read is recorded like a grant history read. ' +
          "A scoped token sees its namespaces' changes only, of a cluster in its scope (epoch advances are the cluster's; a prefix or cluster outside it: 403; narrowedTo).",
        querystring: DiffQuery,
        response: { 200: { ...DiffSchema, description: 'The changes' }, ...errorResponses },
      },
    },
    async (request) => {
      const who = request.identity;
      if (who)
        await recordRead(deps, {
          identity: who.identity,
          tokenId: who.tokenId,
          filters: { ...request.query },
          format: 'diff',
          paged: false,
          requestId: String(request.id),
          atMs: Date.now(),
        });
      return diff(deps, request.query, readScope(request));
    },
  );
}
