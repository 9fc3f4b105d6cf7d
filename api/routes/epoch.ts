// GET /v1/epoch, POST /v1/epoch/advance (request), GET /v1/epoch/advance[/:id] (pending, with requestHash
// and proof), POST /v1/epoch/advance/:id/approve (a different lock-operator, naming the requestHash they
// saw), POST /v1/epoch/advance/:id/reject (another lock-operator rejects; its requester cancels).
import Type from 'typebox';
import { ROLES } from '../../core/apiTokens.js';
import type { LockService } from '../../lock/service.js';
import type { RoutePlugin } from '../types.js';
import { ApproveBody, callerOf, guard, IdParams, Reason, WithdrawBody } from './lockSchemas.js';

const AdvanceBody = Type.Object(
  {
    reason: Reason,
    adopt: Type.Optional(
      Type.Boolean({
        description:
          'Adopt: prove /sys/epoch as it is instead of advancing past it (no hold deleted) — for a /sys/epoch written before proofs existed (an upgrade) that both operators have checked. Only when it is unproven, bound to this cluster and not below an epoch already used. Default false',
      }),
    ),
  },
  { additionalProperties: false },
);
const EpochSchema = Type.Object({
  epoch: Type.Optional(Type.Integer({ minimum: 0, description: 'The current epoch (the high bits of every fencing token); absent before the first grant' })),
  recordedClusterId: Type.Optional(Type.String({ description: 'The etcd cluster id /sys/epoch was written for' })),
  clusterId: Type.Optional(Type.String({ description: 'The cluster id etcd reports now' })),
  sealed: Type.Boolean({
    description:
      'Grants refused with LOCKAUDIT_ERR_LOCK_SEALED until a two-person epoch advance: true exactly when acquire refuses so (the same predicate, judged on a fresh read of /sys/epoch and the grant guard)',
  }),
  reason: Type.Optional(
    Type.String({ description: 'Why grants are sealed (a restore into another cluster, or etcd rewound below a revision, guard or epoch already granted at)' }),
  ),
  quorumLost: Type.Boolean(),
});

export function epochRoutes(lock: LockService): RoutePlugin {
  return function epochRoutes(app) {
    app.get(
      '/v1/epoch',
      {
        schema: { tags: ['epoch'], summary: 'The epoch record, the cluster id etcd reports, and whether grants are sealed', response: { 200: EpochSchema } },
        preValidation: guard(...ROLES),
        config: { scope: 'cluster-wide' }, // the cluster's epoch: no per-key data
      },
      async () => {
        const { epoch, etcd } = lock.parts;
        await epoch.probe();
        const reason = epoch.sealReason();
        return {
          epoch: epoch.record?.epoch,
          recordedClusterId: epoch.record?.clusterId,
          clusterId: epoch.clusterId,
          sealed: reason !== undefined,
          ...(reason ? { reason } : {}),
          quorumLost: etcd.quorum.lost,
        };
      },
    );

    app.post(
      '/v1/epoch/advance',
      {
        schema: {
          tags: ['epoch'],
          summary: 'Request an epoch advance (deletes every hold when approved), or the adoption of an unproven /sys/epoch',
          body: AdvanceBody,
        },
        preValidation: guard('lock-operator'),
      },
      async (request, reply) =>
        reply.status(202).send(await lock.requestEpochAdvance(callerOf(request), request.body.reason, { adopt: request.body.adopt ?? false })),
    );

    app.get(
      '/v1/epoch/advance',
      {
        schema: {
          tags: ['epoch'],
          summary: 'Pending epoch-advance requests, oldest first, each with its requestHash and whether the lock API wrote it (proven)',
        },
        preValidation: guard('lock-operator'),
      },
      async () => lock.listEpochRequests(),
    );

    app.get(
      '/v1/epoch/advance/:id',
      {
        schema: { tags: ['epoch'], summary: 'One pending epoch-advance request, its requestHash, and whether the lock API wrote it', params: IdParams },
        preValidation: guard('lock-operator'),
      },
      async (request) => lock.readEpochRequest(request.params.id),
    );

    app.post(
      '/v1/epoch/advance/:id/approve',
      {
        schema: {
          tags: ['epoch'],
          summary: 'Approve a pending epoch advance (not its requester), naming the requestHash you were shown',
          params: IdParams,
          body: ApproveBody,
        },
        preValidation: guard('lock-operator'),
      },
      async (request) => lock.approveEpochAdvance(callerOf(request), request.params.id, request.body.requestHash),
    );

    app.post(
      '/v1/epoch/advance/:id/reject',
      {
        schema: {
          tags: ['epoch'],
          summary: 'Reject a pending epoch advance (another lock-operator) or cancel it (its requester)',
          params: IdParams,
          body: WithdrawBody,
        },
        preValidation: guard('lock-operator'),
      },
      async (request) => lock.withdrawEpochRequest(callerOf(request), request.params.id, request.body.reason),
    );
  };
}
