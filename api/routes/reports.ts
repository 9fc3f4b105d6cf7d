// Report routes (reports/*): risk register, contention, unprotected-grant
// reconciliation. Thin: roles and rate limit before validation, then the
// report module, then its renderer.
import { randomUUID } from 'node:crypto';
import Type from 'typebox';
import { LockauditError } from '../../core/errors.js';
import { ContentionQuery, ContentionSchema, contention } from '../../reports/contention/index.js';
import { recordRead } from '../../reports/grantHistory/index.js';
import { pickCluster } from '../../grants/clusters.js';
import { scopeRead } from '../../grants/scope.js';
import {
  REGISTER_CSV_HEADER,
  RegisterSchema,
  RiskRegisterQuery,
  assertRegisterScope,
  registerCsv,
  scopedRegister,
  registerHtml,
  runRegister,
  storedRegister,
} from '../../reports/riskRegister/index.js';
import { TimelineQuery, TimelineSchema, timeline } from '../../reports/timeline/index.js';
import {
  ReconcileBody,
  ReconcileParams,
  ReconciliationSchema,
  UnprotectedQuery,
  UnprotectedReportSchema,
  reconcile,
  unprotectedReport,
} from '../../reports/unprotected/index.js';
import type { App, RouteOptions } from '../types.js';
import { readScope, requireRoles } from '../auth.js';
import { errorResponses } from './grants.js';

export async function reportRoutes(app: App, { ctx }: RouteOptions): Promise<void> {
  const deps = { store: ctx.store, limits: ctx.config.reports };
  const limited = app.reportRateLimit;
  // Auth before validation: a caller without the role learns nothing about its input or the resource.
  const guard = (...roles: Parameters<typeof requireRoles>) => [requireRoles(...roles), limited];

  app.get(
    '/v1/reports/risk-register',
    {
      preValidation: guard('auditor'),
      config: { scope: 'scoped' },
      schema: {
        tags: ['reports'],
        summary: 'Advisory risk register',
        description:
          "The stored register of a day (its newest run), or the newest register. One row per advisory class: owner, waiver expiry, days left, status (ok, expiring within 30 days, expired) and use over 24 h and 30 d. JSON, CSV or a readable HTML page. Role: auditor. A token scoped to namespaces reads their classes only (narrowedTo); one scoped to clusters reads none (each class's use spans every cluster: 403).",
        querystring: RiskRegisterQuery,
        response: {
          200: {
            description: 'The register',
            content: {
              'application/json': { schema: RegisterSchema },
              'text/csv': {
                schema: Type.String({
                  examples: [
                    `${REGISTER_CSV_HEADER.join(',')}\r\n2025-11-29,2025-11-29T02:00:00.000Z,repeat:risk-register-nightly:1764381600000,cache-refresh,catalog,risk-team@corp,2025-12-20,21,expiring,1840,51022,312,2210,3,71,0,2,0,14,0,3,0,1\r\n`,
                  ],
                }),
              },
              'text/html': { schema: Type.String({ examples: ['<!doctype html><html>…<table>…</table></html>'] }) },
            },
          },
          404: {
            ...errorResponses[401],
            description: 'No register of that date (or none yet)',
            examples: [{ error: 'LOCKAUDIT_ERR_REPORT_NOT_FOUND', message: 'no risk register for 2025-11-29' }],
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const { date, format } = request.query;
      const scope = readScope(request);
      assertRegisterScope(scope); // before any read
      const stored = await storedRegister(deps, date);
      const register = stored && scopedRegister(stored, scope);
      if (!register)
        throw new LockauditError(
          'LOCKAUDIT_ERR_REPORT_NOT_FOUND',
          date ? `no risk register for ${date}` : 'no risk register has been built yet; POST /v1/reports/risk-register/run builds one',
        );
      if (format === 'csv') return reply.type('text/csv; charset=utf-8').send(registerCsv(register));
      if (format === 'html') return reply.type('text/html; charset=utf-8').send(registerHtml(register));
      return register;
    },
  );

  app.post(
    '/v1/reports/risk-register/run',
    {
      preValidation: guard('auditor'),
      schema: {
        tags: ['reports'],
        summary: 'Build the risk register now',
        description:
          'Builds the advisory risk register as of now (the nightly job does the same on its schedule), stores it beside the nightly ones and returns it. Role: auditor.',
        response: { 201: { ...RegisterSchema, description: 'The register just built and stored' }, ...errorResponses },
      },
    },
    async (request, reply) => {
      const who = request.identity?.identity ?? 'unknown';
      const register = await runRegister(deps, {
        runId: `manual-${randomUUID()}`,
        asOfMs: Date.now(),
        timeZone: ctx.config.reports.riskRegisterTz,
        trigger: 'manual',
        requestedBy: who,
      });
      return reply.status(201).send(register);
    },
  );

  app.get(
    '/v1/reports/contention',
    {
      preValidation: guard('investigator'),
      config: { scope: 'scoped' },
      schema: {
        tags: ['reports'],
        summary: 'Contention',
        description:
          "Per namespace, class or key over a window: grants, distinct holders, wait p50/p95/p99, hold p50/p99, handoff gap (release → next grant on the key), expiry ratio, force-releases; the hottest keys; and a time series of grants, wait p50/p95/p99, hold p50/p99, expiries and force-releases per bucket (bucketSeconds chosen for at most 240 bucket widths: 241 points when the window is not aligned to bucket edges). Percentiles: the value at rank floor(p·n) of the sorted values. Role: investigator. A scoped token sees only its scope's grants in every part (a namespace outside it: 403; narrowedTo says what was narrowed).",
        querystring: ContentionQuery,
        response: { 200: { ...ContentionSchema, description: 'The contention report' }, ...errorResponses },
      },
    },
    async (request) => contention(deps, request.query, Date.now(), {}, readScope(request)),
  );

  app.get(
    '/v1/reports/timeline',
    {
      preValidation: guard('investigator'),
      config: { scope: 'scoped' },
      schema: {
        tags: ['reports'],
        summary: 'Key timeline',
        description:
          'The grants of one key, or of the 50 busiest keys under a prefix, whose hold overlaps [from, to]: up to maxBars grants come one by one ' +
          '(mode "grants"); more come aggregated per key and time bucket (mode "buckets": held time, grants, holders, top holder, expiries, ' +
          'force-releases; at most 241 buckets a key), so any window reaches the browser bounded. History gaps in the window come with their ' +
          "wall-clock span. Role: investigator. Every read is recorded like a grant history read. A scoped token draws only its scope's keys and clusters: " +
          'a key, prefix or cluster outside it is a 403 naming the field; a window it narrowed says so (narrowedTo).',
        querystring: TimelineQuery,
        response: { 200: { ...TimelineSchema, description: 'The timeline' }, ...errorResponses },
      },
    },
    async (request) => {
      const who = request.identity;
      const now = Date.now();
      const { maxBars: _bars, ...filters } = request.query;
      const scope = readScope(request);
      scopeRead(scope, request.query, (n) => `querystring.${n}`); // before the cluster is looked up
      if (request.query.cluster !== undefined) await pickCluster({ ...deps, clusters: ctx.config.etcd.clusters.map((c) => c.name) }, request.query.cluster);
      if (who)
        await recordRead(deps, {
          identity: who.identity,
          tokenId: who.tokenId,
          filters,
          format: 'timeline',
          paged: false,
          requestId: String(request.id),
          atMs: now,
        });
      return timeline(deps, request.query, now, scope);
    },
  );

  app.get(
    '/v1/reports/unprotected',
    {
      preValidation: guard('lock-operator', 'investigator'),
      config: { scope: 'scoped' },
      schema: {
        tags: ['reports'],
        summary: 'Unprotected grants to reconcile',
        description:
          "Grants issued without quorum (fail-open, token 0) in the window, each with the protected grants that overlapped it on the same key — possible double holders — and its latest reconcile note. Roles: lock-operator, investigator. A scoped token sees its scope's grants only (narrowedTo).",
        querystring: UnprotectedQuery,
        response: { 200: { ...UnprotectedReportSchema, description: 'The unprotected grants' }, ...errorResponses },
      },
    },
    async (request) => unprotectedReport(deps, request.query, Date.now(), readScope(request)),
  );

  app.post(
    '/v1/reports/unprotected/:id/reconcile',
    {
      preValidation: guard('lock-operator'),
      schema: {
        tags: ['reports'],
        summary: 'Reconcile an unprotected grant',
        description: 'Records a note on an unprotected grant, with who and when. Every note is kept; the newest is shown in the report. Role: lock-operator.',
        params: ReconcileParams,
        body: ReconcileBody,
        response: {
          201: {
            ...ReconciliationSchema,
            description: 'The recorded note',
            examples: [
              {
                id: '5f1d0c9a8e2b4d7f9a3c6e1b2d4f8a0c',
                note: 'Both writers touched sku-9; cache rebuilt',
                reconciledBy: 'ops@corp',
                reconciledAt: '2025-11-29T09:30:00.000Z',
                notes: 1,
              },
            ],
          },
          404: {
            ...errorResponses[401],
            description: 'No unprotected grant has this id',
            examples: [{ error: 'LOCKAUDIT_ERR_REPORT_NOT_FOUND', message: 'params.id: no unprotected grant has the id …' }],
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const note = await reconcile(deps, { id: request.params.id, note: request.body.note, by: request.identity?.identity ?? 'unknown', atMs: Date.now() });
      return reply.status(201).send(note);
    },
  );
}
