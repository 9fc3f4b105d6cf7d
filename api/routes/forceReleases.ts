// POST /v1/force-releases (request), POST /v1/force-releases/:id/approve (a different lock-operator).
import Type from 'typebox';
import type { LockService } from '../../lock/service.js';
import type { RoutePlugin } from '../types.js';
import { callerOf, guard, IdParams, LockKey, Reason } from './lockSchemas.js';

const RequestBody = Type.Object(
  { key: LockKey, reason: Reason, revokeSession: Type.Optional(Type.Boolean({ description: "Also revoke the holder's whole session. Default false" })) },
  { additionalProperties: false },
);

export function forceReleaseRoutes(lock: LockService): RoutePlugin {
  return function forceReleaseRoutes(app) {
    app.post(
      '/v1/force-releases',
      { schema: { tags: ['force-release'], summary: "Request a force-release; shows the class's enforcement first", body: RequestBody }, preValidation: guard('lock-operator') },
      async (request, reply) => {
        const requested = await lock.requestForceRelease(callerOf(request), { key: request.body.key, reason: request.body.reason, revokeSession: request.body.revokeSession ?? false });
        return reply.status(202).send(requested);
      },
    );

    app.post(
      '/v1/force-releases/:id/approve',
      { schema: { tags: ['force-release'], summary: 'Approve a pending force-release (not its requester)', params: IdParams }, preValidation: guard('lock-operator') },
      async (request) => lock.approveForceRelease(callerOf(request), request.params.id),
    );
  };
}
