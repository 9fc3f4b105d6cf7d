// POST /v1/force-releases (request), GET /v1/force-releases[/:id] (pending, each with its requestHash and
// whether the API wrote it), POST /v1/force-releases/:id/approve (a different lock-operator, naming the
// requestHash they saw), POST /v1/force-releases/:id/reject (another lock-operator rejects; its requester cancels).
import Type from 'typebox';
import type { LockService } from '../../lock/service.js';
import type { RoutePlugin } from '../types.js';
import { ApproveBody, callerOf, guard, IdParams, LockKey, Reason, WithdrawBody } from './lockSchemas.js';

const RequestBody = Type.Object(
  { key: LockKey, reason: Reason, revokeSession: Type.Optional(Type.Boolean({ description: "Also revoke the holder's whole session. Default false" })) },
  { additionalProperties: false },
);

export function forceReleaseRoutes(lock: LockService): RoutePlugin {
  return function forceReleaseRoutes(app) {
    app.post(
      '/v1/force-releases',
      {
        schema: { tags: ['force-release'], summary: "Request a force-release; shows the class's enforcement first", body: RequestBody },
        preValidation: guard('lock-operator'),
      },
      async (request, reply) => {
        const requested = await lock.requestForceRelease(callerOf(request), {
          key: request.body.key,
          reason: request.body.reason,
          revokeSession: request.body.revokeSession ?? false,
        });
        return reply.status(202).send(requested);
      },
    );

    app.get(
      '/v1/force-releases',
      {
        schema: {
          tags: ['force-release'],
          summary: 'Pending force-release requests, oldest first, each with its requestHash and whether the lock API wrote it (proven)',
        },
        preValidation: guard('lock-operator'),
      },
      async () => lock.listForceRequests(),
    );

    app.get(
      '/v1/force-releases/:id',
      {
        schema: {
          tags: ['force-release'],
          summary: 'One pending force-release request: what approving it releases, its requestHash, and whether the lock API wrote it',
          params: IdParams,
        },
        preValidation: guard('lock-operator'),
      },
      async (request) => lock.readForceRequest(request.params.id),
    );

    app.post(
      '/v1/force-releases/:id/approve',
      {
        schema: {
          tags: ['force-release'],
          summary: 'Approve a pending force-release (not its requester), naming the requestHash you were shown',
          params: IdParams,
          body: ApproveBody,
        },
        preValidation: guard('lock-operator'),
      },
      async (request) => lock.approveForceRelease(callerOf(request), request.params.id, request.body.requestHash),
    );

    app.post(
      '/v1/force-releases/:id/reject',
      {
        schema: {
          tags: ['force-release'],
          summary: 'Reject a pending force-release (another lock-operator) or cancel it (its requester)',
          params: IdParams,
          body: WithdrawBody,
        },
        preValidation: guard('lock-operator'),
      },
      async (request) => lock.withdrawForceRequest(callerOf(request), request.params.id, request.body.reason),
    );
  };
}
