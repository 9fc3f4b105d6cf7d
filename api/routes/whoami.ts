// GET /v1/whoami — who the caller's API token says it is: identity, roles and
// the token's public id. Any valid token may ask; the console uses it to show
// only the pages the token's roles can read.
import Type from 'typebox';
import { ROLES } from '../../core/apiTokens.js';
import { LockauditError } from '../../core/errors.js';
import type { App, RouteOptions } from '../types.js';
import { errorResponses } from './grants.js';

const WhoamiSchema = Type.Object(
  {
    identity: Type.String(),
    roles: Type.Array(Type.String({ enum: [...ROLES] }), { description: `Some of: ${ROLES.join(', ')}` }),
    tokenId: Type.String({ description: "The token's public id (never the token)" }),
    scope: Type.Union([Type.Object({ namespaces: Type.Array(Type.String()), clusters: Type.Array(Type.String()) }), Type.Null()], {
      description: 'What the token may read of per-key data (empty list: no bound on that side); null: everything',
    }),
  },
  { examples: [{ identity: 'ivy@corp', roles: ['investigator'], tokenId: '3f9a0c1d2e4b', scope: { namespaces: ['payments'], clusters: [] } }] },
);

export async function whoamiRoutes(app: App, _options: RouteOptions): Promise<void> {
  app.get(
    '/v1/whoami',
    {
      schema: {
        tags: ['auth'],
        summary: "The caller's identity and roles",
        description: 'The identity, roles and public token id behind the Bearer token. Any valid token.',
        response: { 200: { ...WhoamiSchema, description: 'The caller' }, 401: errorResponses[401] },
      },
    },
    async (request) => {
      const who = request.identity;
      if (!who) throw new LockauditError('LOCKAUDIT_ERR_AUTH_REQUIRED', 'a valid API token is required (Authorization: Bearer <token>)');
      return { identity: who.identity, roles: who.roles, tokenId: who.tokenId, scope: who.scope };
    },
  );
}
