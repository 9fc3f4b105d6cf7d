// GET /v1/epoch, POST /v1/epoch/advance (request), POST /v1/epoch/advance/:id/approve (a different lock-operator).
import Type from 'typebox';
import { ROLES } from '../../core/apiTokens.js';
import type { LockService } from '../../lock/service.js';
import type { RoutePlugin } from '../types.js';
import { callerOf, guard, IdParams, Reason } from './lockSchemas.js';

const AdvanceBody = Type.Object({ reason: Reason }, { additionalProperties: false });

export function epochRoutes(lock: LockService): RoutePlugin {
  return (app) => {
    app.get('/v1/epoch', { schema: { tags: ['epoch'], summary: 'The epoch record, the cluster id etcd reports, and whether grants are sealed' }, preValidation: guard(...ROLES) }, async () => {
      const { epoch, etcd } = lock.parts;
      await epoch.reload();
      return { epoch: epoch.record?.epoch, recordedClusterId: epoch.record?.clusterId, clusterId: epoch.clusterId, sealed: epoch.sealed, quorumLost: etcd.quorum.lost };
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
