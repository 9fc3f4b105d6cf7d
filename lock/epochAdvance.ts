// Epoch advance, two people like force-release: one requests, a different
// lock-operator approves. Approval is one txn: /sys/epoch unchanged since
// the request → bump the epoch, bind the cluster id etcd reports now, delete
// every hold (all restored, or granted under the old epoch) with an
// `epoch-advance` marker. Tokens after it exceed every token before it,
// since each revision is below 2^48 and the new epoch is above every epoch
// this API has seen (a restore may have rolled /sys/epoch back).
import { randomUUID } from 'node:crypto';
import { EtcdLeaseInvalidError } from 'etcd3';
import Type from 'typebox';
import { LockauditError } from '../core/errors.js';
import { decodeValue, type EpochValue, type MarkValue } from '../core/keyspace.js';
import type { LockParts } from './context.js';
import { PENDING_REQUEST_TTL_SECONDS } from './forceRelease.js';
import { cmp, op } from './kv.js';

const EpochRequestSchema = Type.Object({
  id: Type.String(),
  reason: Type.String(),
  requester: Type.String(),
  requestedAt: Type.Integer(),
  fromEpoch: Type.Integer(),
  epochModRevision: Type.String(),
});

export interface EpochAdvanceRequested {
  id: string;
  status: 'pending';
  epoch: number;
  nextEpoch: number;
  sealed: boolean;
  recordedClusterId: string;
  clusterId: string;
  /** Holds the approval will delete. */
  holds: number;
  expiresAt: string;
}

export interface EpochAdvanced {
  id: string;
  status: 'approved';
  epoch: number;
  clusterId: string;
  deletedHolds: number;
  revision: string;
}

export async function requestEpochAdvance(parts: LockParts, identity: string, reason: string): Promise<EpochAdvanceRequested> {
  await parts.epoch.probe(); // `sealed` below is what acquire would do now
  const record = parts.epoch.record as EpochValue;
  const holds = await parts.etcd.getPrefix(parts.keys.holdPrefix(), { countOnly: true });
  const id = randomUUID();
  const requestedAt = Date.now();
  const lease = await parts.etcd.leaseGrant(PENDING_REQUEST_TTL_SECONDS);
  await parts.etcd.txn([], [op.put(parts.keys.epochRequest(id), { id, reason, requester: identity, requestedAt, fromEpoch: record.epoch, epochModRevision: parts.epoch.modRevision }, lease)]);
  return {
    id,
    status: 'pending',
    epoch: record.epoch,
    nextEpoch: record.epoch + 1,
    sealed: parts.epoch.sealed,
    recordedClusterId: record.clusterId,
    clusterId: parts.epoch.clusterId ?? record.clusterId,
    holds: holds.count,
    expiresAt: new Date(requestedAt + PENDING_REQUEST_TTL_SECONDS * 1000).toISOString(),
  };
}

export async function approveEpochAdvance(parts: LockParts, identity: string, id: string): Promise<EpochAdvanced> {
  const requestKey = parts.keys.epochRequest(id);
  const { kv, header } = await parts.etcd.get(requestKey);
  const request = kv ? decodeValue(EpochRequestSchema, kv.value) : undefined;
  if (!kv || !request) throw new LockauditError('LOCKAUDIT_ERR_EPOCH_NOT_FOUND', `epoch advance ${id}: no pending request with this id (approved, stale, expired after 1 h, or never made)`);
  if (request.requester === identity) {
    throw new LockauditError('LOCKAUDIT_ERR_EPOCH_SELF_APPROVAL', `epoch advance ${id}: you requested it; a different lock-operator must approve`);
  }
  // Above every epoch this API has seen: a restore can roll /sys/epoch back below one already used.
  const next: EpochValue = { epoch: Math.max(request.fromEpoch, parts.epoch.highestEpoch) + 1, clusterId: String(header.cluster_id) };
  // Bound to the /sys/epoch revision this advance replaces (the txn compares it): a copy explains no later delete.
  const mark: MarkValue = { kind: 'epoch-advance', by: identity, at: Date.now(), from: request.epochModRevision };
  for (let attempt = 0; attempt < 2; attempt++) {
    let res;
    try {
      res = await parts.etcd.txn(
        [cmp.mod(parts.keys.epoch(), request.epochModRevision), cmp.mod(requestKey, kv.modRevision)],
        [op.put(parts.keys.epoch(), next), op.delPrefix(parts.keys.holdPrefix()), await parts.markers.put(mark), op.del(requestKey)],
      );
    } catch (err) {
      if (err instanceof EtcdLeaseInvalidError && attempt === 0) {
        // After a restore the marker lease we knew is gone.
        parts.markers.invalidate();
        continue;
      }
      throw err;
    }
    if (!res.succeeded) {
      await parts.etcd.txn([cmp.mod(requestKey, kv.modRevision)], [op.del(requestKey)]).catch(() => undefined);
      throw new LockauditError('LOCKAUDIT_ERR_EPOCH_STALE', `epoch advance ${id}: /sys/epoch changed since the request; request again`);
    }
    await parts.epoch.reload();
    await parts.epoch.persistMark();
    for (const key of parts.waiters.keys()) parts.waiters.notify(key);
    const deleted = Number(res.responses[1]?.response_delete_range.deleted ?? 0);
    parts.logger.info({ id, epoch: next.epoch, clusterId: next.clusterId, deletedHolds: deleted, requester: request.requester, approver: identity }, 'epoch advanced');
    return { id, status: 'approved', epoch: next.epoch, clusterId: next.clusterId, deletedHolds: deleted, revision: String(res.header.revision) };
  }
  throw new LockauditError('LOCKAUDIT_ERR_INTERNAL', 'epoch advance: the marker lease kept vanishing');
}
