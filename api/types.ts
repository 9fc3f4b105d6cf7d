// The shapes every route module shares: the typed fastify instance, the
// context routes are given (the process's Runtime), and the one error body.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, FastifyPluginAsync, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import Type, { type Static } from 'typebox';
import type { Runtime } from '../platform/runtime.js';

export type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

/** What a route module is given: the shared resources of the process. */
export type AppContext = Runtime;

/** What every route plugin is registered with. */
export interface RouteOptions {
  ctx: AppContext;
}

/**
 * A route module: a fastify plugin, registered with app.register(route, { ctx })
 * in a scope of its own; its state lives in its closure or in decorators.
 */
export type RoutePlugin = (app: App, options: RouteOptions) => Promise<void> | void;

/**
 * A RoutePlugin as fastify's register() takes it: always async (a plugin that
 * returns no promise must call done), keeping the module's name, which fastify
 * shows as the plugin's (printPlugins, errors).
 */
export function asPlugin(route: RoutePlugin): FastifyPluginAsync<RouteOptions> {
  const plugin = async (app: FastifyInstance, options: RouteOptions): Promise<void> => {
    await route(app as unknown as App, options);
  };
  Object.defineProperty(plugin, 'name', { value: route.name || 'routes' });
  return plugin;
}

/** The one error response: every 4xx/5xx body, as the error handler sends it and the routes document it. */
export const ErrorResponse = Type.Object(
  {
    error: Type.String({ description: 'The error code (docs/runbook.md: Error codes)' }),
    message: Type.String(),
    details: Type.Optional(Type.Array(Type.String())),
  },
  { examples: [{ error: 'LOCKAUDIT_ERR_VALIDATION', message: 'querystring.key: must match pattern' }] },
);

export type ErrorBody = Static<typeof ErrorResponse>;
