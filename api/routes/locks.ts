// POST /v1/locks/acquire, POST /v1/locks/release, GET /v1/locks?key=
import Type from 'typebox';
import { LockauditError } from '../../core/errors.js';
import { parseToken, tokenToString } from '../../core/token.js';
import type { Grant } from '../../lock/acquire.js';
import type { LockService } from '../../lock/service.js';
import type { RoutePlugin } from '../types.js';
import { callerOf, DecimalToken, guard, LeaseId, LockKey } from './lockSchemas.js';

export const MAX_WAIT_MS = 300_000;

const AcquireBody = Type.Object(
  {
    key: LockKey,
    session: LeaseId,
    class: Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,63}$', description: 'Lock class name' }),
    waitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WAIT_MS, description: 'How long to wait for the key, ms. Default 0 (try once)' })),
  },
  { additionalProperties: false },
);

const ReleaseBody = Type.Object({ key: LockKey, session: LeaseId, token: DecimalToken }, { additionalProperties: false });
const InspectQuery = Type.Object({ key: LockKey }, { additionalProperties: false });

/** The lock answers are a few hundred bytes, below the compression threshold: no compression hook on their path. */
const SMALL_ANSWER = { compress: false } as const;

function acquired(grant: Grant): Record<string, unknown> {
  return {
    key: grant.key,
    token: tokenToString(grant.token),
    epoch: grant.epoch,
    revision: grant.revision,
    enforcement: grant.enforcement,
    unprotected: grant.unprotected,
    waitMs: grant.waitMs,
  };
}

export function lockRoutes(lock: LockService): RoutePlugin {
  return function lockRoutes(app) {
    app.post(
      '/v1/locks/acquire',
      { ...SMALL_ANSWER, schema: { tags: ['locks'], summary: 'Acquire a lock; 409 when not granted within waitMs', body: AcquireBody }, preValidation: guard('client') },
      async (request, reply) => {
        const { key, session, waitMs } = request.body;
        // The response closing before it was written means the caller left: its wait ends, ungranted.
        const left = new AbortController();
        const onClose = (): void => {
          if (!reply.raw.writableEnded) left.abort();
        };
        reply.raw.once('close', onClose);
        try {
          return await acquired(await lock.acquire({ identity: callerOf(request), key, session, className: request.body.class, waitMs: waitMs ?? 0, signal: left.signal }));
        } finally {
          reply.raw.off('close', onClose);
        }
      },
    );

    app.post(
      '/v1/locks/release',
      { ...SMALL_ANSWER, schema: { tags: ['locks'], summary: 'Release a lock: only its holder, with its token', body: ReleaseBody }, preValidation: guard('client') },
      async (request) => {
        const token = parseToken(request.body.token);
        if (token === undefined) throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', 'body.token: is not a 64-bit decimal token', { details: ['body.token: is not a 64-bit decimal token'] });
        return lock.release({ identity: callerOf(request), key: request.body.key, session: request.body.session, token });
      },
    );

    app.get(
      '/v1/locks',
      { schema: { tags: ['locks'], summary: 'Who holds a key and since when (the token only to its holder)', querystring: InspectQuery }, preValidation: guard('client') },
      async (request) => lock.inspect(callerOf(request), request.query.key),
    );
  };
}
