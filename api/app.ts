// buildApp() assembles the fastify app; listening is elsewhere (roles/api.ts)
// so tests use app.inject(). Route modules are plugins given the AppContext.
import compress from '@fastify/compress';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type RouteOptions } from 'fastify';
import { isLockauditError } from '../core/errors.js';
import { authPlugin } from './auth.js';
import { httpMetrics, routeLabel, statusClass } from './httpMetrics.js';
import { reportRateLimitHook } from './rateLimit.js';
import { healthRoutes } from './routes/health.js';
import { asPlugin, ErrorResponse, type App, type AppContext, type ErrorBody, type RoutePlugin } from './types.js';
import { tokenRoutes } from './routes/tokens.js';
import { whoamiRoutes } from './routes/whoami.js';
import { describeValidation, validatorCompiler } from './validation.js';

export type { App, AppContext, ErrorBody, RoutePlugin } from './types.js';

/** Levels at which the per-request debug line is written (built only then). */
const DEBUG_LEVELS = new Set(['debug', 'trace']);

export async function buildApp(ctx: AppContext, routes: readonly RoutePlugin[] = []): Promise<App> {
  const app = Fastify({
    loggerInstance: ctx.logger.child({ role: 'api' }) as FastifyBaseLogger,
    bodyLimit: 1024 * 1024,
    // One line per request at info would drown the log under a lock workload; see the onResponse hook.
    logController: new LogController({ disableRequestLogging: true }),
    ajv: { customOptions: { removeAdditional: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  const http = httpMetrics(ctx.metrics);
  app.addHook('onResponse', async (request, reply) => {
    // routeOptions builds a new object on every read: read once.
    const url = request.routeOptions.url;
    const ms = reply.elapsedTime;
    const route = routeLabel(url);
    http.requests.inc({ method: request.method, route, code: statusClass(reply.statusCode) });
    http.seconds.observe({ method: request.method, route }, ms / 1000);
    if (DEBUG_LEVELS.has(request.log.level)) request.log.debug({ method: request.method, route: url, status: reply.statusCode, ms: Math.round(ms) }, 'request');
  });

  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err.validation) {
      const details = describeValidation(err.validation, err.validationContext ?? 'request');
      const body: ErrorBody = { error: 'LOCKAUDIT_ERR_VALIDATION', message: details.join('; '), details };
      return reply.status(400).send(body);
    }
    if (isLockauditError(err)) {
      const body: ErrorBody = { error: err.code, message: err.message, ...(err.details.length ? { details: [...err.details] } : {}) };
      return reply.status(err.status).send(body);
    }
    // Fastify's own client errors (bad JSON, an empty JSON body, wrong content type, body too large) keep their 4xx
    // but speak the one catalog: its FST_ERR_* codes are no contract of ours. The message names the body.
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.status(err.statusCode).send({ error: 'LOCKAUDIT_ERR_VALIDATION', message: `body: ${err.message}` } satisfies ErrorBody);
    }
    request.log.error({ err }, 'unhandled error');
    return reply.status(500).send({ error: 'LOCKAUDIT_ERR_INTERNAL', message: 'internal error' } satisfies ErrorBody);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({ error: 'LOCKAUDIT_ERR_NOT_FOUND', message: `no route ${request.method} ${request.url.split('?')[0]}` } satisfies ErrorBody),
  );

  // Every documented operation gets an operationId, and the error answers every route can give.
  app.addHook('onRoute', (route) => documentRoute(route));

  // gzip/brotli when the client accepts it: the console's bundle and a 30-day timeline shrink several times over.
  await app.register(compress, { global: true, threshold: 1024 });
  await app.register(swagger, {
    openapi: {
      // 3.1: its schemas are JSON Schema 2020-12, so `examples` arrays and null in type unions are valid as written.
      openapi: '3.1.0',
      servers: [{ url: '/', description: 'This lockaudit API (paths are absolute)' }],
      info: { title: 'lockaudit', version: '0.1.0', description: 'Audit and reporting for an etcd-backed lock service, and the embedded lock API.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API token from `lockaudit token create`' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  await app.register(authPlugin, { verifier: ctx.verifier });
  app.decorate('reportRateLimit', reportRateLimitHook(ctx.config.reports.rateLimitPerMinute));
  // Each route module is a plugin in a scope of its own; the root's auth, error handler and decorators reach it.
  for (const route of [healthRoutes, whoamiRoutes, tokenRoutes, ...routes]) await app.register(asPlugin(route), { ctx });
  return app;
}

// The one error body (api/types.ts), as a plain JSON schema for the documented answers.
const ErrorSchema = JSON.parse(JSON.stringify(ErrorResponse)) as Record<string, unknown>;

/** camelCase of the method and path: GET /v1/exports/:id/download → getV1ExportsIdDownload. */
export function operationIdOf(method: string, url: string): string {
  const words = [method.toLowerCase(), ...url.split(/[^A-Za-z0-9]+/).filter(Boolean)];
  return words.map((w, i) => (i === 0 ? w : w.charAt(0).toUpperCase() + w.slice(1))).join('');
}

function documentRoute(route: RouteOptions): void {
  const schema = (route.schema ?? {}) as Record<string, unknown> & { hide?: boolean; response?: Record<string, unknown> };
  if (schema.hide || Array.isArray(route.method) || route.method === 'HEAD') return;
  const response: Record<string, unknown> = { ...(schema.response ?? {}) };
  const codes = Object.keys(response);
  // A route without a documented success answer still has one; described, not constrained (no serializer strips fields).
  if (!codes.some((c) => /^[23]/.test(c))) response['2XX'] = { description: 'Success', type: 'object', additionalProperties: true };
  if (!codes.some((c) => c.startsWith('4'))) {
    response[400] = { ...ErrorSchema, description: 'Bad input; the message names the field' };
    response[401] = { ...ErrorSchema, description: 'No valid API token' };
    response[403] = { ...ErrorSchema, description: 'The token lacks a role this route needs' };
  }
  route.schema = { ...schema, operationId: (schema.operationId as string | undefined) ?? operationIdOf(route.method, route.url), response };
}
