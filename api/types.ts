// The shapes every route module shares: the typed fastify instance, the
// context routes are given (the process's Runtime), and the one error body.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { Runtime } from '../platform/runtime.js';

export type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

/** What a route module is given: the shared resources of the process. */
export type AppContext = Runtime;

/** A route module: registers its routes on the app. */
export type RoutePlugin = (app: App, ctx: AppContext) => Promise<void> | void;

export interface ErrorBody {
  error: string;
  message: string;
  details?: string[];
}
