// Epoch advance, two people like force-release: one requests, a different
// lock-operator approves. Approval is one txn: /sys/epoch unchanged since
// the request → bump the epoch, bind the cluster id etcd reports now, delete
// every hold (all restored, or granted under the old epoch) with an
// `epoch-advance` marker. Tokens after it exceed every token before it,
// since each revision is below 2^48 and the new epoch is above every epoch
// this API has seen (a restore may have rolled /sys/epoch back). The new
// /sys/epoch carries the API's proof bound to the value it replaced, and the
// marker the hash of the request it carries out; the request itself is
// proven and approved by its hash (lock/twoPerson.ts). An unproven
// /sys/epoch (put by hand) counts for nothing here: the advance goes past the
// highest proven epoch, and never past EPOCH_MAX.
import { randomUUID } from 'node:crypto';
import { EtcdLeaseInvalidError } from 'etcd3';
import Type, { type Static } from 'typebox';
import { LockauditError } from '../core/errors.js';
import { EPOCH_MAX, WALL_TIME_MAX_MS, type EpochValue, type MarkValue } from '../core/keyspace.js';
import { epochMac } from '../core/proof.js';
import type { LockParts } from './context.js';
import { cmp, op } from './kv.js';
import { TwoPersonRequests, type PendingRequest, type Withdrawn } from './twoPerson.js';

const EpochRequestSchema = Type.Object({
  id: Type.String(),
  reason: Type.String(),
  requester: Type.String(),
  requestedAt: Type.Integer({ minimum: 0, maximum: WALL_TIME_MAX_MS }),
  /** The epoch the advance goes beyond: the highest proven epoch this API knows (an unproven /sys/epoch counts for nothing). */
  fromEpoch: Type.Integer({ minimum: 0, maximum: EPOCH_MAX }),
  /** The /sys/epoch mod revision the advance replaces ('0': absent); the approval's txn compares it. */
  epochModRevision: Type.String(),
  /**
   * Adoption (an upgrade, or an unproven /sys/epoch two people have checked): prove the epoch /sys/epoch holds,
   * `adoptEpoch`, as it is — no hold deleted — instead of advancing past it. 0: an advance.
   */
  adoptEpoch: Type.Integer({ minimum: 0, maximum: EPOCH_MAX }),
  /** The cluster id /sys/epoch was bound to when an adoption was requested: the approval requires etcd to report it still. */
  clusterId: Type.String({ maxLength: 20 }),
  /** The API's proof (core/proof.ts) over every field above, in this order, and the request's lease. */
  mac: Type.Optional(Type.String()),
});
export type EpochRequest = Static<typeof EpochRequestSchema>;
export { EpochRequestSchema };

const epochRequests = (parts: LockParts): TwoPersonRequests<typeof EpochRequestSchema> =>
  new TwoPersonRequests(parts, {
    kind: 'epoch-request',
    schema: EpochRequestSchema,
    noun: 'epoch advance',
    notFound: 'LOCKAUDIT_ERR_EPOCH_NOT_FOUND',
    selfApproval: 'LOCKAUDIT_ERR_EPOCH_SELF_APPROVAL',
    fields: epochRequestFields,
  });

/** What an epoch-advance request's proof binds, in order (its id first). */
export function epochRequestFields(r: EpochRequest): readonly unknown[] {
  return [r.id, r.reason, r.requester, r.requestedAt, r.fromEpoch, r.epochModRevision, r.adoptEpoch, r.clusterId];
}

export interface EpochAdvanceRequested {
  id: string;
  status: 'pending';
  /** An adoption: the approval proves /sys/epoch as it is (epoch stays `epoch`) and deletes no hold. */
  adopt: boolean;
  epoch: number;
  nextEpoch: number;
  sealed: boolean;
  recordedClusterId: string;
  clusterId: string;
  /** Holds the approval will delete. */
  holds: number;
  expiresAt: string;
  /** sha256 of the request: the approver names it, so only the request they were shown is carried out. */
  requestHash: string;
}

export interface EpochAdvancePending {
  id: string;
  status: 'pending';
  adopt: boolean;
  fromEpoch: number;
  nextEpoch: number;
  reason: string;
  requester: string;
  requestedAt: string;
  requestHash: string;
  /** false: the request in etcd is not what the API wrote (edited, or written by hand); it cannot be approved. */
  proven: boolean;
}

export interface EpochAdvanced {
  id: string;
  status: 'approved';
  epoch: number;
  clusterId: string;
  deletedHolds: number;
  revision: string;
  requestHash: string;
}

/** The epoch after `from`, refused past the last one a token's 16 bits carry. */
function nextEpoch(from: number, what: string): number {
  if (from >= EPOCH_MAX) {
    throw new LockauditError(
      'LOCKAUDIT_ERR_EPOCH_EXHAUSTED',
      `${what}: epoch ${from} is the last one a fencing token can carry (${EPOCH_MAX}); no advance can go past it`,
    );
  }
  return from + 1;
}

function pendingView(p: PendingRequest<EpochRequest>): EpochAdvancePending {
  const r = p.value;
  return {
    id: p.id,
    status: 'pending',
    adopt: r.adoptEpoch > 0,
    fromEpoch: r.fromEpoch,
    nextEpoch: r.adoptEpoch > 0 ? r.adoptEpoch : r.fromEpoch + 1,
    reason: r.reason,
    requester: r.requester,
    requestedAt: new Date(r.requestedAt).toISOString(),
    requestHash: p.requestHash,
    proven: p.proven,
  };
}

export async function requestEpochAdvance(
  parts: LockParts,
  identity: string,
  reason: string,
  options: { adopt?: boolean } = {},
): Promise<EpochAdvanceRequested> {
  await parts.epoch.probe(); // `sealed` below is what acquire would do now
  // Absent only when /sys/epoch held no epoch record since start: then there is nothing to show but that.
  const record: EpochValue = parts.epoch.record ?? { epoch: 0, clusterId: '' };
  const fromEpoch = parts.epoch.highestEpoch;
  const adoptEpoch = options.adopt ? adoptable(parts, record) : 0;
  const next = adoptEpoch > 0 ? adoptEpoch : nextEpoch(fromEpoch, 'epoch advance');
  // An adoption deletes no hold: only an advance needs to say how many it will.
  const holds = adoptEpoch > 0 ? 0 : (await parts.etcd.getPrefix(parts.keys.holdPrefix(), { countOnly: true })).count;
  const id = randomUUID();
  const request: EpochRequest = {
    id,
    reason,
    requester: identity,
    requestedAt: Date.now(),
    fromEpoch,
    epochModRevision: parts.epoch.modRevision,
    adoptEpoch,
    clusterId: record.clusterId,
  };
  const { requestHash, expiresAt } = await epochRequests(parts).create(request);
  parts.logger.info({ id, fromEpoch, adoptEpoch, requester: identity, requestHash }, adoptEpoch > 0 ? 'epoch adoption requested' : 'epoch advance requested');
  return {
    id,
    status: 'pending',
    adopt: adoptEpoch > 0,
    epoch: record.epoch,
    nextEpoch: next,
    sealed: parts.epoch.sealed,
    recordedClusterId: record.clusterId,
    clusterId: parts.epoch.clusterId ?? record.clusterId,
    holds,
    expiresAt,
    requestHash,
  };
}

/**
 * The epoch an adoption may prove: /sys/epoch as it is, only when it is unproven, bound to the cluster etcd
 * reports, at or above every proven epoch and high-water this API knows (an adoption never moves tokens back),
 * and nothing else seals grants. Otherwise LOCKAUDIT_ERR_EPOCH_ADOPT_REFUSED saying why.
 */
/** Advances an adopted epoch must leave before the last epoch (EPOCH_MAX). */
const ADOPT_HEADROOM = 1000;

function adoptable(parts: LockParts, record: EpochValue): number {
  const refuse = (why: string): never => {
    throw new LockauditError('LOCKAUDIT_ERR_EPOCH_ADOPT_REFUSED', `epoch adoption: ${why}; an advance (without adopt) is the way on`);
  };
  if (!parts.epoch.unproven) refuse(`/sys/epoch (epoch ${record.epoch}) already carries the lock API's proof`);
  if (parts.epoch.undecodable) refuse('/sys/epoch holds no epoch record at all');
  // An adopted epoch near the end of the token space would leave no room for the advances a restore needs.
  if (record.epoch > EPOCH_MAX - ADOPT_HEADROOM)
    refuse(`/sys/epoch says epoch ${record.epoch}, which leaves fewer than ${ADOPT_HEADROOM} advances before the last epoch (${EPOCH_MAX})`);
  const clusterId = parts.epoch.clusterId;
  if (clusterId === undefined || record.clusterId !== clusterId)
    refuse(`/sys/epoch is bound to cluster ${record.clusterId}, but etcd reports ${clusterId ?? 'nothing yet'}`);
  if (record.epoch < Math.max(1, parts.epoch.highestEpoch))
    refuse(`/sys/epoch says epoch ${record.epoch}, below epoch ${parts.epoch.highestEpoch} already proven or granted under`);
  if (parts.epoch.rewound) refuse('etcd was seen rewound');
  return record.epoch;
}

/** Every pending epoch-advance request, oldest first, each judged. */
export async function listEpochRequests(parts: LockParts): Promise<{ requests: EpochAdvancePending[]; unreadable: number }> {
  const { requests, unreadable } = await epochRequests(parts).list();
  return { requests: requests.map(pendingView), unreadable };
}

export async function readEpochRequest(parts: LockParts, id: string): Promise<EpochAdvancePending> {
  return pendingView(await epochRequests(parts).readPending(id));
}

export function withdrawEpochRequest(parts: LockParts, identity: string, id: string, reason: string): Promise<Withdrawn> {
  return epochRequests(parts).withdraw(identity, id, reason);
}

export async function approveEpochAdvance(parts: LockParts, identity: string, id: string, seenHash: string): Promise<EpochAdvanced> {
  const requests = epochRequests(parts);
  const pending = await requests.approvable(identity, id, seenHash);
  const { value: request, kv } = pending;
  const requestKey = kv.key;
  const { header } = await parts.etcd.get(parts.keys.epoch());
  const adopt = request.adoptEpoch > 0;
  if (adopt) {
    // Judged again at approval: etcd may have been restored (into another cluster, or rewound) while it waited.
    await parts.epoch.probe();
    const why =
      request.adoptEpoch < parts.epoch.highestEpoch
        ? `epoch ${request.adoptEpoch} is now below epoch ${parts.epoch.highestEpoch} already proven or granted under`
        : String(header.cluster_id) !== request.clusterId
          ? `etcd now reports cluster ${String(header.cluster_id)}, not ${request.clusterId} the adopted /sys/epoch is bound to`
          : parts.epoch.rewound
            ? 'etcd was seen rewound since the request'
            : undefined;
    if (why) throw new LockauditError('LOCKAUDIT_ERR_EPOCH_ADOPT_REFUSED', `epoch adoption ${id}: ${why}; an advance is the way on`);
  }
  // Above every proven epoch this API has seen: a restore can roll /sys/epoch back below one already used.
  const epoch = adopt ? request.adoptEpoch : nextEpoch(Math.max(request.fromEpoch, parts.epoch.highestEpoch), `epoch advance ${id}`);
  const unsigned: Omit<EpochValue, 'mac'> = { epoch, clusterId: adopt ? request.clusterId : String(header.cluster_id), from: request.epochModRevision };
  const next: EpochValue = { ...unsigned, mac: epochMac(parts.originSecret, unsigned) };
  // Bound to the /sys/epoch revision this advance replaces (the txn compares it): a copy explains no later delete.
  const mark: MarkValue = { kind: 'epoch-advance', by: identity, at: Date.now(), from: request.epochModRevision, request: pending.requestHash };
  const epochUnchanged = request.epochModRevision === '0' ? cmp.absent(parts.keys.epoch()) : cmp.mod(parts.keys.epoch(), request.epochModRevision);
  for (let attempt = 0; attempt < 2; attempt++) {
    let res;
    try {
      // An adoption proves the epoch in place (the txn still compares the value the approvers saw); it deletes no hold.
      const ops = adopt
        ? [op.put(parts.keys.epoch(), next), op.del(requestKey)]
        : [op.put(parts.keys.epoch(), next), op.delPrefix(parts.keys.holdPrefix()), await parts.markers.put(mark), op.del(requestKey)];
      res = await parts.etcd.txn([epochUnchanged, cmp.mod(requestKey, kv.modRevision)], ops);
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
      await requests.retire(pending);
      throw new LockauditError('LOCKAUDIT_ERR_EPOCH_STALE', `epoch advance ${id}: /sys/epoch changed since the request; request again`);
    }
    await requests.retire(pending);
    await requests.approved(pending, identity, String(res.header.revision));
    await parts.epoch.reload();
    await parts.epoch.persistMark();
    for (const key of parts.waiters.keys()) parts.waiters.notify(key);
    const deleted = adopt ? 0 : Number(res.responses[1]?.response_delete_range.deleted ?? 0);
    parts.logger.info(
      {
        id,
        epoch: next.epoch,
        clusterId: next.clusterId,
        deletedHolds: deleted,
        requester: request.requester,
        approver: identity,
        requestHash: pending.requestHash,
      },
      adopt ? 'epoch adopted' : 'epoch advanced',
    );
    return {
      id,
      status: 'approved',
      epoch: next.epoch,
      clusterId: next.clusterId,
      deletedHolds: deleted,
      revision: String(res.header.revision),
      requestHash: pending.requestHash,
    };
  }
  throw new LockauditError('LOCKAUDIT_ERR_INTERNAL', 'epoch advance: the marker lease kept vanishing');
}
