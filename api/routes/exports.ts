// Compliance exports (role auditor): POST /v1/exports queues a job,
// GET /v1/exports/:id shows its progress, GET /v1/exports/:id/download
// redirects to a presigned URL valid for a few minutes. Thin: the export
// itself is exporters/compliance/complianceExport.ts. The request and every download
// are recorded in export_audit (who, what, when).
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { createRedis } from '../../platform/redis.js';
import Type, { type Static } from 'typebox';
import { LockauditError } from '../../core/errors.js';
import { createS3Client } from '../../core/s3.js';
import { INSTANT_OR_UTC_PATTERN } from '../../core/instant.js';
import { pickCluster } from '../../grants/clusters.js';
import { ExportRecords, parseExportInput, type ExportState } from '../../exporters/compliance/complianceExport.js';
import { RateLimiter } from '../rateLimit.js';
import { grantFilterProperties } from '../../grants/filter.js';
import { COMPLIANCE_QUEUE, enqueueComplianceExport, type ComplianceJobData } from '../../exporters/exportJobs.js';
import { manifestName } from '../../exporters/storage/manifest.js';
import { readObjectText } from '../../exporters/storage/objectStore.js';
import { ErrorResponse, type App, type RoutePlugin, type RouteOptions } from '../types.js';
import { readScope, requireRoles } from '../auth.js';
import { NarrowedSchema, scopeCovers, scopeRead, type ReadScope } from '../../grants/scope.js';

export interface ExportRouteOptions {
  /** Lifetime of a download URL. Default: config api.exportDownloadSeconds (300 s). */
  presignSeconds?: number;
  /** How long POST waits for Redis before answering 503. Default 5 000 ms. */
  enqueueTimeoutMs?: number;
}

const DateText = Type.String({
  pattern: INSTANT_OR_UTC_PATTERN,
  maxLength: 40,
  description: "A date (YYYY-MM-DD) or an RFC 3339 date-time; without a zone it is read as UTC (never the server's local time)",
  examples: ['2026-01-01T00:00:00Z'],
});
const Decimal64 = Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$', description: 'a 64-bit token as a decimal string' });

// The grant filter (grants/filter*.sql): an export accepts what grant history does.
export const ExportFilters = Type.Object(grantFilterProperties(), { additionalProperties: false });

export const ExportRequestBody = Type.Object(
  {
    from: DateText,
    to: DateText,
    format: Type.Optional(
      Type.Union([Type.Literal('parquet'), Type.Literal('csv'), Type.Literal('arrow')], {
        default: 'parquet',
        description:
          'parquet; csv; or arrow: an Arrow IPC stream (application/vnd.apache.arrow.stream; tokens and revisions uint64, exact) for pyarrow, polars, DuckDB',
      }),
    ),
    filters: Type.Optional(ExportFilters),
  },
  { additionalProperties: false },
);

const ExportId = Type.Object({ id: Type.String({ pattern: '^exp_[0-9a-f]{32}$', description: 'an export id' }) }, { additionalProperties: false });

export const ExportStatusSchema = Type.Object({
  id: Type.String(),
  status: Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('done'), Type.Literal('failed')]),
  format: Type.String(),
  from: Type.String(),
  to: Type.String(),
  filters: Type.Record(Type.String(), Type.String()),
  scope: Type.Optional(
    Type.Object(
      { namespaces: Type.Array(Type.String()), clusters: Type.Array(Type.String()) },
      { description: "The requesting token's scope: the export holds only these namespaces' and clusters' grants (empty: every one)" },
    ),
  ),
  requestedBy: Type.String(),
  requestedAt: Type.String(),
  progress: Type.Object({ rows: Decimal64, total: Decimal64, percent: Type.Number() }),
  bytes: Type.Optional(Type.Integer()),
  sha256: Type.Optional(Type.String()),
  error: Type.Optional(Type.String()),
  downloadUrl: Type.Optional(Type.String()),
});

function view(s: ExportState): Static<typeof ExportStatusSchema> {
  return {
    id: s.id,
    status: s.status,
    format: s.format,
    from: new Date(s.fromMs).toISOString(),
    to: new Date(s.toMs).toISOString(),
    filters: Object.fromEntries(Object.entries(s.filters).filter((e): e is [string, string] => typeof e[1] === 'string')),
    ...(s.scope ? { scope: s.scope } : {}),
    requestedBy: s.requestedBy,
    requestedAt: new Date(s.requestedAt).toISOString(),
    progress: { rows: s.rowsDone.toString(), total: s.rowsTotal.toString(), percent: s.percent },
    ...(s.status === 'done' ? { bytes: s.bytes, sha256: s.sha256, downloadUrl: `/v1/exports/${s.id}/download` } : {}),
    ...(s.status === 'failed' ? { error: s.error } : {}),
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

export function exportRoutes(options: ExportRouteOptions = {}): RoutePlugin {
  return async function exportRoutes(app: App, { ctx }: RouteOptions) {
    const presignSeconds = options.presignSeconds ?? ctx.config.api.exportDownloadSeconds;
    const records = new ExportRecords(ctx.store);
    // Per caller: an auditor token in a loop must not starve every real export (each runs a full grants check).
    const { exportRequestsPerHour, exportMaxActive, exportMaxRangeDays } = ctx.config.reports;
    const requestsPerHour = new RateLimiter(exportRequestsPerHour, Date.now, 3_600_000);
    const s3 = createS3Client(ctx.config.s3);
    let queue: Queue<ComplianceJobData> | undefined;
    let connection: Redis | undefined;
    const getQueue = (): Queue<ComplianceJobData> => {
      // Created on first use: an API that never exports never connects to Redis. Requests fail fast while Redis is away.
      connection ??= createRedis(ctx.config.redis.url, 'request', ctx.logger);
      queue ??= new Queue<ComplianceJobData>(COMPLIANCE_QUEUE, { connection, prefix: ctx.config.queuePrefix });
      return queue;
    };
    app.addHook('onClose', async () => {
      await queue?.close().catch(() => undefined);
      connection?.disconnect();
    });

    // An export is bound to the scope that made it: a reader whose scope does not cover it is told what a wrong id
    // is told, so a guessed or shared id neither reads another team's grants nor learns that the export exists.
    const load = async (id: string, reader: ReadScope): Promise<ExportState> => {
      const state = await records.get(id);
      if (!state || !scopeCovers(reader, state.scope)) throw new LockauditError('LOCKAUDIT_ERR_EXPORT_NOT_FOUND', `no export ${id}`);
      return state;
    };

    app.post(
      '/v1/exports',
      {
        preValidation: [requireRoles('auditor')],
        config: { scope: 'scoped' },
        schema: {
          tags: ['exports'],
          summary: 'Request a compliance export of grant history',
          description:
            'Grants matching the filters (those of GET /v1/grants, cluster, origin and endKind included), as one Parquet, Arrow IPC stream or CSV file. ' +
            'Window rule: grants GRANTED in [from, to) — from included, to excluded — whenever they ended; unlike GET /v1/grants, which returns every grant ' +
            'whose hold overlaps [from, to]. So exports of ranges that do not overlap never share a grant, and consecutive ranges hold each grant exactly once; ' +
            "a grant held across `from` but granted before it is in the earlier range's export. Every row carries its origin (api or foreign). " +
            'CSV cells that a spreadsheet would run as a formula (starting with =, +, -, @, tab or CR) are written with a leading apostrophe. ' +
            'Answers 202 with the export id at once; ' +
            'poll GET /v1/exports/{id} for progress, then GET /v1/exports/{id}/download. Role: auditor. The request is recorded. ' +
            'A token scoped to namespaces or clusters exports only its scope (a filter naming something outside it is a 403 naming the field; ' +
            'an export that pins no namespace or cluster is narrowed, and the 202 says so in narrowedTo); the export, its manifest (signed, with the scope) ' +
            'and its download are then readable only by tokens whose scope covers it — for any other, its id is a 404. ' +
            'Limits per caller: a range of at most LOCKAUDIT_EXPORT_MAX_RANGE_DAYS (400 naming body.to), at most LOCKAUDIT_EXPORT_MAX_ACTIVE exports queued or running ' +
            '(429 LOCKAUDIT_ERR_LIMIT_EXPORTS) and LOCKAUDIT_EXPORT_REQUESTS_PER_HOUR requests an hour (429 LOCKAUDIT_ERR_LIMIT_EXPORT_RATE with Retry-After).',
          body: ExportRequestBody,
          response: {
            202: Type.Object({ id: Type.String(), status: Type.String(), statusUrl: Type.String(), narrowedTo: Type.Optional(NarrowedSchema) }),
            400: ErrorResponse,
            401: ErrorResponse,
            403: ErrorResponse,
            429: ErrorResponse,
            503: ErrorResponse,
          },
        },
      },
      async (request, reply) => {
        const body = request.body;
        const parsed = parseExportInput(
          { from: body.from, to: body.to, filters: body.filters },
          { from: 'body.from', to: 'body.to', filter: (n) => `body.filters.${n}` },
          exportMaxRangeDays,
        );
        const scope = readScope(request);
        const narrowedTo = scopeRead(scope, parsed.filters, (n) => `body.filters.${n}`);
        // A cluster no tailer captured (a typo) is a 400, not an export that runs and signs zero rows.
        if (parsed.filters.cluster !== undefined) {
          await pickCluster(
            { store: ctx.store, limits: ctx.config.reports, clusters: ctx.config.etcd.clusters.map((c) => c.name) },
            parsed.filters.cluster,
            'body.filters.cluster',
          );
        }
        const who = request.identity?.identity ?? 'unknown';
        const active = await records.activeFor(who);
        if (active >= exportMaxActive) {
          throw new LockauditError(
            'LOCKAUDIT_ERR_LIMIT_EXPORTS',
            `${who} has ${active} export(s) queued or running, the most LOCKAUDIT_EXPORT_MAX_ACTIVE (${exportMaxActive}) allows; wait for one to finish (GET /v1/exports/{id})`,
          );
        }
        // Counted only for a request that would run: a refused one costs nothing.
        const retryAfter = requestsPerHour.take(who);
        if (retryAfter > 0) {
          reply.header('retry-after', String(retryAfter));
          throw new LockauditError(
            'LOCKAUDIT_ERR_LIMIT_EXPORT_RATE',
            `more than LOCKAUDIT_EXPORT_REQUESTS_PER_HOUR (${exportRequestsPerHour}) export requests in an hour; retry in ${retryAfter} s`,
          );
        }
        const state = await records.create({ format: body.format ?? 'parquet', ...parsed, requestedBy: who, scope });
        try {
          await withTimeout(enqueueComplianceExport(getQueue(), state.id), options.enqueueTimeoutMs ?? 5_000);
        } catch (err) {
          await records.update(state, { status: 'failed', error: 'the job queue (Redis) was unavailable; request again' });
          throw isQueueError(err)
            ? err
            : new LockauditError('LOCKAUDIT_ERR_EXPORT_QUEUE', `the export could not be queued: ${(err as Error).message}`, { cause: err });
        }
        return reply.status(202).send({ id: state.id, status: state.status, statusUrl: `/v1/exports/${state.id}`, ...(narrowedTo ? { narrowedTo } : {}) });
      },
    );

    app.get(
      '/v1/exports/:id',
      {
        preValidation: [requireRoles('auditor')],
        config: { scope: 'scoped' },
        schema: {
          tags: ['exports'],
          summary: 'Status and progress of an export',
          params: ExportId,
          response: { 200: ExportStatusSchema, 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse },
        },
      },
      async (request) => view(await load(request.params.id, readScope(request))),
    );

    app.get(
      '/v1/exports/:id/download',
      {
        preValidation: [requireRoles('auditor')],
        config: { scope: 'scoped' },
        schema: {
          tags: ['exports'],
          summary: 'Download a finished export',
          description: `Redirects (302) to a presigned URL valid for ${presignSeconds} s. 409 while the export is not done. Every download is recorded.`,
          params: ExportId,
          response: { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse, 409: ErrorResponse },
        },
      },
      async (request, reply) => {
        const state = await load(request.params.id, readScope(request));
        if (state.status !== 'done')
          throw new LockauditError(
            'LOCKAUDIT_ERR_EXPORT_NOT_READY',
            `export ${state.id} is ${state.status}${state.status === 'failed' ? `: ${state.error}` : ''}`,
          );
        const url = await s3.presignedGetObject(ctx.config.s3.historyBucket, state.objectKey, presignSeconds);
        await records.audit(state.id, 'download', request.identity?.identity ?? 'unknown', {
          tokenId: request.identity?.tokenId,
          ip: request.ip,
          expiresSeconds: presignSeconds,
          object: state.objectKey,
        });
        return reply.redirect(url, 302);
      },
    );

    app.get(
      '/v1/exports/:id/manifest',
      {
        preValidation: [requireRoles('auditor')],
        config: { scope: 'scoped' },
        schema: {
          tags: ['exports'],
          summary: 'The signed manifest of a finished export',
          description:
            'Rows, bytes and sha256 of the file, and the signed digests of the periods it covers, signed as a whole with the digest key (GET /v1/digests/public-key); docs/verify-export.mjs checks a download against it. 409 while the export is not done.',
          params: ExportId,
          response: {
            200: Type.Object({}, { additionalProperties: true, description: 'The manifest (docs/digests.md#tamper-evident-digests)' }),
            400: ErrorResponse,
            401: ErrorResponse,
            403: ErrorResponse,
            404: ErrorResponse,
            409: ErrorResponse,
          },
        },
      },
      async (request) => {
        const state = await load(request.params.id, readScope(request));
        if (state.status !== 'done')
          throw new LockauditError(
            'LOCKAUDIT_ERR_EXPORT_NOT_READY',
            `export ${state.id} is ${state.status}${state.status === 'failed' ? `: ${state.error}` : ''}`,
          );
        return JSON.parse(await readObjectText(s3, ctx.config.s3.historyBucket, manifestName(state.objectKey))) as Record<string, unknown>;
      },
    );
  };
}

function isQueueError(err: unknown): err is LockauditError {
  return err instanceof LockauditError && err.code === 'LOCKAUDIT_ERR_EXPORT_QUEUE';
}
