// GET /v1/digests/public-key: the Ed25519 public key that checks the
// tamper-evident digests and signed compliance-export manifests
// (docs/digests.md#tamper-evident-digests). Public by nature: no token needed, so an auditor can
// fetch it with nothing but the URL (and compare it with the one the
// operator handed over out of band).
import Type from 'typebox';
import { deploymentKeyring, servedDigestPublicKey } from '../../core/digestKey.js';
import { LockauditError } from '../../core/errors.js';
import { ErrorResponse, type App, type RouteOptions } from '../types.js';

const PublicKeySchema = Type.Object(
  {
    algorithm: Type.Literal('Ed25519'),
    keyId: Type.String({
      pattern: '^[0-9a-f]{16}$',
      description: 'sha256 of the key (SPKI DER), first 16 hex digits: every digest names the key that signed it',
    }),
    publicKeyPem: Type.String({ description: 'SPKI PEM' }),
    keys: Type.Array(
      Type.Object({
        keyId: Type.String({ pattern: '^[0-9a-f]{16}$' }),
        publicKeyPem: Type.String({ description: 'SPKI PEM' }),
      }),
      {
        description:
          'Every key the deployment has signed with, the current one included (a rotation adds one): older digests and manifests are signed by older keys. Give them to `lockaudit verify --public-key` and docs/verify-export.mjs as one PEM file.',
      },
    ),
  },
  {
    examples: [
      {
        algorithm: 'Ed25519',
        keyId: '3f1c9a0b5e7d2c41',
        publicKeyPem: '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n',
        keys: [
          {
            keyId: '3f1c9a0b5e7d2c41',
            publicKeyPem: '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n',
          },
        ],
      },
    ],
  },
);

export async function digestRoutes(app: App, { ctx }: RouteOptions): Promise<void> {
  // The API never holds the private key for this (LOCKAUDIT_DIGEST_PUBLIC_KEY), nor generates one: a key it generated
  // in a split deployment was one no worker signs with. Until the worker has made the key, the route says so (503).
  // Read on each request, never kept: a rotation moves the key while this process runs.
  const body = (): { algorithm: 'Ed25519'; keyId: string; publicKeyPem: string; keys: Array<{ keyId: string; publicKeyPem: string }> } => {
    const served = servedDigestPublicKey(ctx.config);
    if (!served) {
      throw new LockauditError(
        'LOCKAUDIT_ERR_DIGEST_KEY_MISSING',
        'no digest signing key exists yet: the worker generates it at its first start (or set LOCKAUDIT_DIGEST_PUBLIC_KEY on the API)',
      );
    }
    const keys = [...deploymentKeyring(ctx.config)].map(([keyId, k]) => ({ keyId, publicKeyPem: k.export({ type: 'spki', format: 'pem' }).toString() }));
    return { algorithm: 'Ed25519', ...served, keys: keys.some((k) => k.keyId === served?.keyId) ? keys : [...keys, served] };
  };
  app.get(
    '/v1/digests/public-key',
    {
      schema: {
        tags: ['digests'],
        summary: 'The public key of the signed digests',
        description:
          "Checks every digest (archive bucket, digests/<cluster>/) and every signed compliance-export manifest: `lockaudit verify`, docs/verify-export.mjs. No token needed. LOCKAUDIT_DIGEST_PUBLIC_KEY when set, else the existing signing key's public half; 503 until a key exists.",
        response: { 200: PublicKeySchema, 503: ErrorResponse },
      },
    },
    async () => body(),
  );
}
