// GET /v1/epoch, POST /v1/epoch/advance (request), POST /v1/epoch/advance/:id/approve (a different lock-operator).
import Type from 'typebox';
import { ROLES } from '../../core/apiTokens.js';
import type { LockService } from '../../lock/service.js';
import type { RoutePlugin } from '../types.js';
import { callerOf, guard, IdParams, Reason } from './lockSchemas.js';

const AdvanceBody = Type.Object({ reason: Reason }, { additionalProperties: false });
const EpochSchema = Type.Object({
  epoch: Type.Optional(Type.Integer({ minimum: 0, description: 'The current epoch (the high bits of every fencing token); absent before the first grant' })),
  recordedClusterId: Type.Optional(Type.String({ description: 'The etcd cluster id /sys/epoch was written for' })),
  clusterId: Type.Optional(Type.String({ description: 'The cluster id etcd reports now' })),
  sealed: Type.Boolean({
    description: 'Grants refused with LOCKAUDIT_ERR_LOCK_SEALED until a two-person epoch advance: true exactly when acquire refuses so (the same predicate, judged on a fresh read of /sys/epoch and the grant guard)',
  }),
  reason: Type.Optional(Type.String({ description: 'Why grants are sealed (a restore into another cluster, or etcd rewound below a revision, guard or epoch already granted at)' })),
  quorumLost: Type.Boolean(),
});

export function epochRoutes(lock: LockService): RoutePlugin {
  return function epochRoutes(app) {
    app.get('/v1/epoch', { schema: { tags: ['epoch'], summary: 'The epoch record, the cluster id etcd reports, and whether grants are sealed', response: { 200: EpochSchema } }, preValidation: guard(...ROLES) }, async () => {
      const { epoch, etcd } = lock.parts;
      await epoch.probe();
      const reason = epoch.sealReason();
      return { epoch: epoch.record?.epoch, recordedClusterId: epoch.record?.clusterId, clusterId: epoch.clusterId, sealed: reason !== undefined, ...(reason ? { reason } : {}), quorumLost: etcd.quorum.lost };
    });

    app.post(
      '/v1/epoch/advance',
      { schema: { tags: ['epoch'], summary: 'Request an epoch advance (deletes every hold when approved)', body: AdvanceBody }, preValidation: guard('lock-operator') },
      async (request, reply) => reply.status(202).send(await lock.requestEpochAdvance(callerOf(request), request.body.reason)),
    );

    app.post(
      '/v1/epoch/advance/:id/approve',
      { schema: { tags: ['epoch'], summary: 'Approve a pending epoch advance (not its requester)', params: IdParams }, preValidation: guard('lock-operator') },
      async (request) => lock.approveEpochAdvance(callerOf(request), request.params.id),
    );
  };
}
