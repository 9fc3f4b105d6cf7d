// API token management (role admin): GET /v1/tokens lists them, POST
// /v1/tokens creates one (shown once), DELETE /v1/tokens/:id revokes one.
// Creating, revoking and using a token is recorded in token_audit.
import Type from 'typebox';
import {
  checkScope,
  createApiToken,
  listApiTokens,
  MAX_EXPIRES_IN_SECONDS,
  MAX_SCOPE_ENTRIES,
  revokeApiToken,
  ROLES,
  type Role,
} from '../../core/apiTokens.js';
import { LockauditError } from '../../core/errors.js';
import { ClusterName, Holder, Namespace } from '../../grants/schemas.js';
import { requireRoles } from '../auth.js';
import type { App, RouteOptions } from '../types.js';
import { errorResponses } from './grants.js';

const TokenId = Type.String({ pattern: '^[a-f0-9]{12}$', description: "A token's public id (the 12 hex characters after la_)" });
const Iso = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

const ScopeSchema = Type.Union(
  [
    Type.Object({
      namespaces: Type.Array(Type.String(), { description: 'The namespaces it reads (empty: every namespace)' }),
      clusters: Type.Array(Type.String(), { description: 'The etcd clusters it reads (empty: every cluster)' }),
    }),
    Type.Null(),
  ],
  { description: 'What the token may read of per-key data; null: everything' },
);

const TokenInfoSchema = Type.Object({
  tokenId: TokenId,
  identity: Type.String(),
  roles: Type.Array(Type.String({ enum: [...ROLES] })),
  issuedAt: Type.String({ format: 'date-time' }),
  issuedBy: Type.String(),
  expiresAt: Iso,
  revoked: Type.Boolean(),
  revokedAt: Iso,
  lastUsedAt: { ...Iso, description: 'The last use, to the minute; null when never used' },
  scope: ScopeSchema,
});

const CreateBody = Type.Object(
  {
    identity: Holder({ description: 'The caller identity the token speaks for' }),
    roles: Type.Array(Type.String({ enum: [...ROLES] }), { minItems: 1, maxItems: ROLES.length, uniqueItems: true }),
    expiresInSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EXPIRES_IN_SECONDS, description: 'Lifetime; absent: the token never expires' })),
    namespaces: Type.Optional(
      Type.Array(Namespace(), {
        maxItems: MAX_SCOPE_ENTRIES,
        uniqueItems: true,
        description: 'Scope: the token reads only these namespaces (absent or empty: every namespace). Not with the admin role',
      }),
    ),
    clusters: Type.Optional(
      Type.Array(ClusterName(), {
        maxItems: MAX_SCOPE_ENTRIES,
        uniqueItems: true,
        description: 'Scope: the token reads only these etcd clusters (absent or empty: every cluster). Not with the admin role',
      }),
    ),
  },
  { additionalProperties: false },
);

export async function tokenRoutes(app: App, { ctx }: RouteOptions): Promise<void> {
  const admin = requireRoles('admin');
  const not404 = { ...errorResponses[401], description: 'No token has this id' };
  const { 429: _unlimited, ...errors } = errorResponses;

  app.get(
    '/v1/tokens',
    {
      preValidation: admin,
      schema: {
        tags: ['auth'],
        summary: 'Every API token (never the secret): roles, expiry, revocation, last use. Role: admin.',
        response: { 200: Type.Object({ items: Type.Array(TokenInfoSchema) }), ...errors },
      },
    },
    async () => ({ items: await listApiTokens(ctx.store) }),
  );

  app.post(
    '/v1/tokens',
    {
      preValidation: admin,
      schema: {
        tags: ['auth'],
        summary: 'Create an API token; the token is in this answer only. Role: admin.',
        body: CreateBody,
        response: { 201: Type.Object({ token: Type.String(), tokenId: TokenId, expiresAt: Iso, scope: ScopeSchema }), ...errors },
      },
    },
    async (request, reply) => {
      const by = request.identity?.identity ?? 'unknown';
      const roles = request.body.roles as Role[];
      const scope = checkScope({ namespaces: request.body.namespaces, clusters: request.body.clusters }, roles, (n) => `body.${n}`);
      const created = await createApiToken(ctx.store, request.body.identity, roles, {
        expiresInSeconds: request.body.expiresInSeconds,
        issuedBy: by,
        scope,
      });
      return reply.status(201).send(created);
    },
  );

  app.delete(
    '/v1/tokens/:id',
    {
      preValidation: admin,
      schema: {
        tags: ['auth'],
        summary: 'Revoke an API token: every API process refuses it within 5 s. Role: admin.',
        params: Type.Object({ id: TokenId }, { additionalProperties: false }),
        response: { 200: TokenInfoSchema, 404: not404, ...errors },
      },
    },
    async (request) => {
      const revoked = await revokeApiToken(ctx.store, request.params.id, request.identity?.identity ?? 'unknown');
      if (!revoked) throw new LockauditError('LOCKAUDIT_ERR_NOT_FOUND', `params.id: no token has the id ${request.params.id}`);
      return revoked;
    },
  );
}
