// POST /v1/token-hash — a fencing token's keyed hash (core/tokenHash.ts), the form in which tokens reach a SIEM
// (the alert sinks' OCSF and CEF events): an investigator who holds a token turns it into what to search the
// SIEM for. A POST body, not a path or query: a token in a URL lands in access logs.
import Type from 'typebox';
import { originSecret } from '../../core/originSecret.js';
import { hashToken, tokenHashKey } from '../../core/tokenHash.js';
import { requireRoles } from '../auth.js';
import type { App, RouteOptions } from '../types.js';
import { errorResponses } from './grants.js';
import { DecimalToken } from './lockSchemas.js';

const TokenHashBody = Type.Object({ token: DecimalToken }, { additionalProperties: false, examples: [{ token: '11258999068428022' }] });
const TokenHashSchema = Type.Object(
  {
    tokenHash: Type.String({
      description: '`hmac-sha256:<64 hex>`, as the alert sinks carry it (`unmapped.token_hash` in OCSF, `cs4` in CEF); "" for token 0, which fences nothing',
    }),
  },
  { examples: [{ tokenHash: 'hmac-sha256:4f1c0d3a9b7e2f6051c8a4d2e9b0f3a7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1' }] },
);

export async function tokenHashRoutes(app: App, { ctx }: RouteOptions): Promise<void> {
  let key: Buffer | undefined;
  app.post(
    '/v1/token-hash',
    {
      preValidation: [requireRoles('investigator', 'auditor'), app.reportRateLimit],
      config: { scope: 'cluster-wide' }, // hashes the token it is given: reads nothing of the store
      schema: {
        tags: ['grants'],
        summary: 'The keyed hash of a fencing token, to search a SIEM with',
        description:
          'Alert events (OCSF, CEF) carry a fencing token only as its keyed hash: a token in a log is a token anyone who reads the log can present. ' +
          'This turns a token you hold into that hash. The token goes in the body, never the URL. Roles: investigator, auditor.',
        body: TokenHashBody,
        response: { 200: { ...TokenHashSchema, description: 'The hash' }, ...errorResponses },
      },
    },
    async (request) => {
      key ??= tokenHashKey(originSecret(ctx.config));
      return { tokenHash: hashToken(key, request.body.token) };
    },
  );
}
