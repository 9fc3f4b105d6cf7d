// POST /v1/sessions, POST /v1/sessions/:id/keepalive, DELETE /v1/sessions/:id
import Type from 'typebox';
import { SESSION_TTL_DEFAULT, SESSION_TTL_MAX, SESSION_TTL_MIN, type LockService } from '../../lock/service.js';
import type { RoutePlugin } from '../types.js';
import { callerOf, guard, SessionParams } from './lockSchemas.js';

const CreateBody = Type.Object(
  {
    ttlSeconds: Type.Optional(
      Type.Integer({
        minimum: SESSION_TTL_MIN,
        maximum: SESSION_TTL_MAX,
        description: `Lease TTL; must equal the class TTL of the holds it carries. Default ${SESSION_TTL_DEFAULT}`,
      }),
    ),
  },
  { additionalProperties: false },
);

export function sessionRoutes(lock: LockService): RoutePlugin {
  return function sessionRoutes(app) {
    app.post(
      '/v1/sessions',
      {
        schema: { tags: ['locks'], summary: 'Open (or reuse) your session for a TTL: one etcd lease per (identity, TTL)', body: CreateBody },
        // A bodyless POST means "all defaults".
        preValidation: [guard('client'), async (request) => void (request.body ??= {})],
      },
      async (request, reply) => {
        const session = await lock.createSession(callerOf(request), request.body.ttlSeconds ?? SESSION_TTL_DEFAULT);
        return reply.status(session.reused ? 200 : 201).send(session);
      },
    );

    app.post(
      '/v1/sessions/:id/keepalive',
      { schema: { tags: ['locks'], summary: 'Renew a session lease (every hold on it)', params: SessionParams }, preValidation: guard('client') },
      async (request) => lock.keepAlive(callerOf(request), request.params.id),
    );

    app.delete(
      '/v1/sessions/:id',
      {
        schema: {
          tags: ['locks'],
          summary: 'Close a session: its holds are deleted with a session-close marker, then the lease is revoked',
          params: SessionParams,
        },
        preValidation: guard('client'),
      },
      async (request) => {
        const closed = await lock.closeSession(callerOf(request), request.params.id);
        return { ...closed, closed: true };
      },
    );
  };
}
