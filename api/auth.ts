// Bearer-token auth. An auth failure answers the same whether or not the
// resource exists: it runs before any handler looks anything up.
import type { FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import type { ApiTokenVerifier, Identity, Role } from '../core/apiTokens.js';
import { LockauditError } from '../core/errors.js';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    identity: Identity | null;
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

/** preHandler: the caller must hold one of `roles` (admin holds every role). */
export function requireRoles(...roles: Role[]): preHandlerHookHandler {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const who = request.identity;
    if (!who) throw new LockauditError('LOCKAUDIT_ERR_AUTH_REQUIRED', 'a valid API token is required (Authorization: Bearer <token>)');
    if (who.roles.includes('admin') || roles.some((r) => who.roles.includes(r))) return;
    throw new LockauditError('LOCKAUDIT_ERR_AUTH_FORBIDDEN', `this route needs one of the roles: ${roles.join(', ')}`);
  };
}
