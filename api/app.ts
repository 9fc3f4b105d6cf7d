// buildApp() assembles the fastify app; listening is elsewhere (roles/api.ts)
// so tests use app.inject(). Route modules are plugins given the AppContext.
import compress from '@fastify/compress';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError } from 'fastify';
import { isLockauditError } from '../core/errors.js';
import { registerAuth } from './auth.js';
import { healthRoutes } from './routes/health.js';
import type { App, AppContext, ErrorBody, RoutePlugin } from './types.js';
import { tokenRoutes } from './routes/tokens.js';
import { whoamiRoutes } from './routes/whoami.js';
import { describeValidation, validatorCompiler } from './validation.js';

export type { App, AppContext, ErrorBody, RoutePlugin } from './types.js';

export async function buildApp(ctx: AppContext, routes: readonly RoutePlugin[] = []): Promise<App> {
  const app = Fastify({
    loggerInstance: ctx.logger.child({ role: 'api' }) as FastifyBaseLogger,
    bodyLimit: 1024 * 1024,
    // One line per request at info would drown the log under a lock workload; see the onResponse hook.
    logController: new LogController({ disableRequestLogging: true }),
    ajv: { customOptions: { removeAdditional: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.addHook('onResponse', async (request, reply) => {
    request.log.debug({ method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
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
    // Fastify's own client errors (bad JSON, wrong content type, body too large) keep their 4xx.
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.status(err.statusCode).send({ error: err.code ?? 'LOCKAUDIT_ERR_VALIDATION', message: err.message } satisfies ErrorBody);
    }
    request.log.error({ err }, 'unhandled error');
    return reply.status(500).send({ error: 'LOCKAUDIT_ERR_INTERNAL', message: 'internal error' } satisfies ErrorBody);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({ error: 'LOCKAUDIT_ERR_NOT_FOUND', message: `no route ${request.method} ${request.url.split('?')[0]}` } satisfies ErrorBody),
  );

  // gzip/brotli when the client accepts it: the console's bundle and a 30-day timeline shrink several times over.
  await app.register(compress, { global: true, threshold: 1024 });
  await app.register(swagger, {
    openapi: {
      info: { title: 'lockaudit', version: '0.1.0', description: 'Audit and reporting for an etcd-backed lock service, and the embedded lock API.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API token from `lockaudit token create`' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  registerAuth(app, ctx.verifier);
  await healthRoutes(app, ctx);
  await whoamiRoutes(app, ctx);
  await tokenRoutes(app, ctx);
  for (const route of routes) await route(app, ctx);
  return app;
}
