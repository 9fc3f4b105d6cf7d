// Bearer-token auth. An auth failure answers the same whether or not the
// resource exists: it runs before any handler looks anything up.
import type { FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import type { ApiTokenVerifier, Identity, Role } from '../core/apiTokens.js';
import { scopeText, type ReadScope } from '../grants/scope.js';
import { LockauditError } from '../core/errors.js';
import fp from 'fastify-plugin';

/**
 * How a route serves a token scoped to namespaces or clusters (issue 44): `scoped` — its handler applies the
 * caller's scope (grants/scope.ts); `cluster-wide` — it shows no per-key data (tailer health, gaps, the epoch).
 * A route that declares neither refuses scoped tokens (403): a new route cannot leak by forgetting the scope.
 */
export type ScopePolicy = 'scoped' | 'cluster-wide';

declare module 'fastify' {
  interface FastifyRequest {
    identity: Identity | null;
  }
  interface FastifyContextConfig {
    scope?: ScopePolicy;
  }
}

/** Bearer auth for every route: fastify-plugin, so its hook and decorator reach the root scope. */
export const authPlugin = fp<{ verifier: ApiTokenVerifier }>(
  async (app, { verifier }) => {
    app.decorateRequest('identity', null);
    app.addHook('onRequest', async (request) => {
      const header = request.headers.authorization;
      if (!header) return;
      const match = /^Bearer\s+(\S+)$/i.exec(header);
      request.identity = match ? ((await verifier.verify(match[1] as string)) ?? null) : null;
    });
  },
  { name: 'lockaudit-auth' },
);

/**
 * preValidation: the caller must hold one of `roles` (admin holds every role), and a scoped token reaches only
 * a route that declares how it serves one (`config.scope`).
 */
export function requireRoles(...roles: Role[]): preHandlerHookHandler {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const who = request.identity;
    if (!who) throw new LockauditError('LOCKAUDIT_ERR_AUTH_REQUIRED', 'a valid API token is required (Authorization: Bearer <token>)');
    if (!who.roles.includes('admin') && !roles.some((r) => who.roles.includes(r)))
      throw new LockauditError('LOCKAUDIT_ERR_AUTH_FORBIDDEN', `this route needs one of the roles: ${roles.join(', ')}`);
    if (who.scope && request.routeOptions.config.scope === undefined)
      throw new LockauditError(
        'LOCKAUDIT_ERR_AUTH_SCOPE',
        `this route does not serve scoped tokens (this token reads only ${scopeText(who.scope)}): use a token without a scope`,
      );
  };
}

/** The caller's read scope (grants/scope.ts): its token's, or null — every namespace of every cluster. */
export const readScope = (request: { identity: Identity | null }): ReadScope => request.identity?.scope ?? null;
