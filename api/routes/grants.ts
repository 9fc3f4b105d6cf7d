// GET /v1/grants — grant history (reports/grantHistory). Thin: auth, rate
// limit, the read audit, then the report module.
import Type from 'typebox';
import { GrantHistoryQuery, GrantPageSchema, grantHistory, grantsCsv, recordGrantRead, GRANT_EXAMPLE, CSV_HEADER } from '../../reports/grantHistory/index.js';
import { ARROW_STREAM_TYPE, grantHistoryArrow } from '../../reports/grantHistory/arrow.js';
import { cursorKey } from '../../reports/cursor.js';
import { pickCluster } from '../../grants/clusters.js';
import { pickGrantFilters } from '../../grants/filter.js';
import { scopeRead, type Narrowed } from '../../grants/scope.js';
import { ErrorResponse } from '../types.js';
import type { App, RouteOptions } from '../types.js';
import { readScope, requireRoles } from '../auth.js';

export const errorResponses = {
  400: { ...ErrorResponse, description: 'Bad input, or a limit (window, page size, query timeout) was passed; the message names the field or limit' },
  401: { ...ErrorResponse, description: 'No valid API token' },
  403: {
    ...ErrorResponse,
    description: "The token lacks a role this route needs, or (LOCKAUDIT_ERR_AUTH_SCOPE) the request names data outside the token's scope",
  },
  429: { ...ErrorResponse, description: 'More than LOCKAUDIT_RATE_LIMIT_PER_MINUTE report requests a minute' },
};

/** X-Narrowed-To: `namespaces=a,b; clusters=c` (a side the request pinned itself is left out). */
function narrowedHeader(n: Narrowed): string {
  return [n.namespaces.length ? `namespaces=${n.namespaces.join(',')}` : '', n.clusters.length ? `clusters=${n.clusters.join(',')}` : '']
    .filter(Boolean)
    .join('; ');
}

const csvExample = `${CSV_HEADER.join(',')}\r\n${CSV_HEADER.map((h) => GRANT_EXAMPLE[h] ?? '').join(',')}\r\n`;

export async function grantRoutes(app: App, { ctx }: RouteOptions): Promise<void> {
  const deps = { store: ctx.store, limits: ctx.config.reports, cursorKey: cursorKey(ctx.config.api.cursorSecret) };
  app.get(
    '/v1/grants',
    {
      // Auth runs before validation: a caller without the role learns nothing, not even which input is wrong.
      preValidation: [requireRoles('investigator'), app.reportRateLimit],
      config: { scope: 'scoped' },
      schema: {
        tags: ['reports'],
        summary: 'Grant history',
        description:
          'Grants whose hold overlaps [from, to], filtered by key, key prefix, holder, class, namespace or token ("which grant held token T?"), ' +
          'newest first (order=asc: oldest first). Exact under tailer replays. Page with nextCursor: the first page fixes `to`, so grants arriving meanwhile never shift pages ' +
          'and every grant is served once. format=csv answers text/csv and format=arrow an Arrow IPC stream (application/vnd.apache.arrow.stream: ' +
          'tokens and revisions uint64, times timestamp[ms, UTC]; for pyarrow, polars, DuckDB), both with the next cursor in the X-Next-Cursor header. Role: investigator. ' +
          'Every read is recorded (who, filters, when). A token scoped to namespaces or clusters reads only their grants: a namespace, key, key prefix or cluster ' +
          'outside its scope is a 403 naming it; a request that pins none (a prefix shorter than a namespace, no namespace) is narrowed to the scope and says so ' +
          '(narrowedTo; for CSV and Arrow the X-Narrowed-To header). Its cursors page only under the same scope.',
        querystring: GrantHistoryQuery,
        response: {
          200: {
            description: 'One page of grants',
            content: {
              'application/json': { schema: GrantPageSchema },
              'text/csv': { schema: Type.String({ examples: [csvExample] }) },
              [ARROW_STREAM_TYPE]: { schema: Type.String({ format: 'binary', description: 'Arrow IPC stream: one schema, record batches, end marker' }) },
            },
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const params = request.query;
      const who = request.identity;
      const scope = readScope(request);
      const now = Date.now();
      // Outside the scope is a 403 naming the field before anything else is looked up (an unknown cluster included).
      scopeRead(scope, pickGrantFilters(params), (n) => `querystring.${n}`);
      // A cluster no tailer ever captured (a typo) is a 400 naming it, as on /v1/state, not an empty page.
      if (params.cluster !== undefined) await pickCluster({ ...deps, clusters: ctx.config.etcd.clusters.map((c) => c.name) }, params.cluster);
      // The read audit is written beside the query, not before it: nothing is sent until both are done (a read
      // that cannot be audited fails), and the page no longer waits for the insert first (issue 14: key history).
      const audited = who
        ? recordGrantRead(deps, { identity: who.identity, tokenId: who.tokenId, params, requestId: String(request.id), atMs: now })
        : Promise.resolve();
      if (params.format === 'arrow') {
        await audited; // an Arrow page is a stream: opened only once the read is audited, so a failed audit leaves none open
        const arrow = await grantHistoryArrow(deps, params, now, scope);
        if (arrow.nextCursor) reply.header('x-next-cursor', arrow.nextCursor);
        if (arrow.narrowed) reply.header('x-narrowed-to', narrowedHeader(arrow.narrowed));
        // The typed reply knows the schema's shapes only; fastify pipes a stream as it comes.
        return reply.type(ARROW_STREAM_TYPE).send(arrow.stream as never);
      }
      const [, page] = await Promise.all([audited, grantHistory(deps, params, now, scope)]);
      if (params.format === 'csv') {
        if (page.nextCursor) reply.header('x-next-cursor', page.nextCursor);
        if (page.narrowedTo) reply.header('x-narrowed-to', narrowedHeader(page.narrowedTo));
        return reply.type('text/csv; charset=utf-8').send(grantsCsv(page.items));
      }
      return page;
    },
  );
}
