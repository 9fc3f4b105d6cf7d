// The shapes every route module shares: the typed fastify instance, the
// context routes are given (the process's Runtime), and the one error body.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import Type, { type Static } from 'typebox';
import type { Runtime } from '../platform/runtime.js';

export type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

/** What a route module is given: the shared resources of the process. */
export type AppContext = Runtime;

/** A route module: registers its routes on the app. */
export type RoutePlugin = (app: App, ctx: AppContext) => Promise<void> | void;

/** The one error response: every 4xx/5xx body, as the error handler sends it and the routes document it. */
export const ErrorResponse = Type.Object(
  { error: Type.String({ description: 'The error code (README: Error codes)' }), message: Type.String(), details: Type.Optional(Type.Array(Type.String())) },
  { examples: [{ error: 'LOCKAUDIT_ERR_VALIDATION', message: 'querystring.key: must match pattern' }] },
);

export type ErrorBody = Static<typeof ErrorResponse>;
