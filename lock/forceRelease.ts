// Force-release (docs/architecture.md, the lock service's rules): a lock-operator requests with a reason and
// sees the class's enforcement first (advisory: two writers may follow); a
// *different* lock-operator approves. Approval is one txn: hold unchanged
// since the request → delete it and put /sys/force/<id> (24 h lease).
// Pending requests live in etcd (outside the tailed prefixes) on a 1 h lease,
// so any API replica can approve them, each proven and approved by its hash
// (lock/twoPerson.ts). With revokeSession the holder's
// session is then ended like a close (sessions.ts): its other holds deleted
// with session-close markers, then the lease revoked.
import { randomUUID } from 'node:crypto';
import Type, { type Static } from 'typebox';
import { LockauditError } from '../core/errors.js';
import { decodeValue, EPOCH_MAX, HoldValueSchema, WALL_TIME_MAX_MS, type ForceRecord, type LockClass } from '../core/keyspace.js';
import { forceMac } from '../core/proof.js';
import { makeToken, tokenToString } from '../core/token.js';
import type { LockParts } from './context.js';
import { cmp, op } from './kv.js';
import { TwoPersonRequests, type PendingRequest, type Withdrawn } from './twoPerson.js';

export const FORCE_RECORD_TTL_SECONDS = 24 * 3600;

const DECIMAL = '^(0|[1-9][0-9]{0,19})$';

const ForceRequestSchema = Type.Object({
  id: Type.String(),
  key: Type.String(),
  reason: Type.String(),
  revokeSession: Type.Boolean(),
  requester: Type.String(),
  // Bounded as the hold's own fields are: a value shown to people must never fail to render (a 500).
  requestedAt: Type.Integer({ minimum: 0, maximum: WALL_TIME_MAX_MS }),
  holdCreateRevision: Type.String({ pattern: DECIMAL }),
  holdModRevision: Type.String({ pattern: DECIMAL }),
  holder: Type.String(),
  session: Type.String({ pattern: DECIMAL }),
  epoch: Type.Integer({ minimum: 0, maximum: EPOCH_MAX }),
  at: Type.Integer({ minimum: 0, maximum: WALL_TIME_MAX_MS }),
  class: Type.String(),
  enforcement: Type.Union([Type.Literal('fenced'), Type.Literal('advisory')]),
  /** The API's proof (core/proof.ts) over every field above, in this order, and the request's lease. */
  mac: Type.Optional(Type.String()),
});
export type ForceRequest = Static<typeof ForceRequestSchema>;
export { ForceRequestSchema };

const forceRequests = (parts: LockParts): TwoPersonRequests<typeof ForceRequestSchema> =>
  new TwoPersonRequests(parts, {
    kind: 'force-request',
    schema: ForceRequestSchema,
    noun: 'force-release',
    notFound: 'LOCKAUDIT_ERR_FORCE_NOT_FOUND',
    selfApproval: 'LOCKAUDIT_ERR_FORCE_SELF_APPROVAL',
    fields: forceRequestFields,
  });

/** What a force-release request's proof binds, in order (its id first). */
export function forceRequestFields(r: ForceRequest): readonly unknown[] {
  return [
    r.id,
    r.key,
    r.reason,
    r.revokeSession,
    r.requester,
    r.requestedAt,
    r.holdCreateRevision,
    r.holdModRevision,
    r.holder,
    r.session,
    r.epoch,
    r.at,
    r.class,
    r.enforcement,
  ];
}

export interface ForceRequested {
  id: string;
  status: 'pending';
  key: string;
  holder: string;
  since: string;
  class: string;
  enforcement: LockClass['enforcement'];
  /** What approving means for this class, shown before anyone approves. */
  warning: string;
  revokeSession: boolean;
  expiresAt: string;
  /** sha256 of the request: the approver names it, so only the request they were shown is carried out. */
  requestHash: string;
}

/** A pending request as listed or read: what it would release, who asked and why, and whether the API wrote it. */
export interface ForcePending extends Omit<ForceRequested, 'expiresAt'> {
  reason: string;
  requester: string;
  requestedAt: string;
  /** false: the request in etcd is not what the API wrote (edited, or written by hand); it cannot be approved. */
  proven: boolean;
}

export interface ForceApproved {
  id: string;
  status: 'approved';
  key: string;
  enforcement: LockClass['enforcement'];
  revision: string;
  revokedSession: boolean;
  requestHash: string;
}

function warningFor(enforcement: LockClass['enforcement'], revokeSession: boolean): string {
  const base =
    enforcement === 'advisory'
      ? 'advisory class: the resource does not check fencing tokens, so the current holder may keep writing after the force-release and two writers may act at once'
      : "fenced class: the resource rejects the current holder's token once a newer grant writes, so a force-release cannot let two writers in";
  return revokeSession ? `${base}; the holder's whole session (every hold it has) will be revoked` : base;
}

function pendingView(p: PendingRequest<ForceRequest>): ForcePending {
  const r = p.value;
  return {
    id: p.id,
    status: 'pending',
    key: r.key,
    holder: r.holder,
    since: new Date(r.at).toISOString(),
    class: r.class,
    enforcement: r.enforcement,
    warning: warningFor(r.enforcement, r.revokeSession),
    revokeSession: r.revokeSession,
    reason: r.reason,
    requester: r.requester,
    requestedAt: new Date(r.requestedAt).toISOString(),
    requestHash: p.requestHash,
    proven: p.proven,
  };
}

export async function requestForceRelease(
  parts: LockParts,
  identity: string,
  input: { key: string; reason: string; revokeSession: boolean },
): Promise<ForceRequested> {
  const { kv } = await parts.etcd.get(parts.keys.hold(input.key));
  const hold = kv ? decodeValue(HoldValueSchema, kv.value) : undefined;
  if (!kv || !hold) throw new LockauditError('LOCKAUDIT_ERR_LOCK_NOT_HELD', `${input.key}: nobody holds it, there is nothing to force-release`);
  let enforcement: LockClass['enforcement'];
  try {
    enforcement = (await parts.classes.get(hold.class)).value.enforcement;
  } catch {
    // A hold whose class has gone (or is unproven) is treated as unfenced: the cautious reading.
    enforcement = 'advisory';
  }
  const id = randomUUID();
  const request: ForceRequest = {
    id,
    key: input.key,
    reason: input.reason,
    revokeSession: input.revokeSession,
    requester: identity,
    requestedAt: Date.now(),
    holdCreateRevision: kv.createRevision,
    holdModRevision: kv.modRevision,
    holder: hold.holder,
    session: hold.session,
    epoch: hold.epoch,
    at: hold.at,
    class: hold.class,
    enforcement,
  };
  const { requestHash, expiresAt } = await forceRequests(parts).create(request);
  parts.logger.info({ id, key: input.key, class: hold.class, enforcement, requester: identity, requestHash }, 'force-release requested');
  return {
    id,
    status: 'pending',
    key: input.key,
    holder: hold.holder,
    since: new Date(hold.at).toISOString(),
    class: hold.class,
    enforcement,
    warning: warningFor(enforcement, input.revokeSession),
    revokeSession: input.revokeSession,
    expiresAt,
    requestHash,
  };
}

/** Every pending force-release request, oldest first, each judged (an unproven one cannot be approved). */
export async function listForceRequests(parts: LockParts): Promise<{ requests: ForcePending[]; unreadable: number }> {
  const { requests, unreadable } = await forceRequests(parts).list();
  return { requests: requests.map(pendingView), unreadable };
}

export async function readForceRequest(parts: LockParts, id: string): Promise<ForcePending> {
  return pendingView(await forceRequests(parts).readPending(id));
}

export function withdrawForceRequest(parts: LockParts, identity: string, id: string, reason: string): Promise<Withdrawn> {
  return forceRequests(parts).withdraw(identity, id, reason);
}

export async function approveForceRelease(parts: LockParts, identity: string, id: string, seenHash: string): Promise<ForceApproved> {
  const requests = forceRequests(parts);
  const pending = await requests.approvable(identity, id, seenHash);
  const { value: request, kv } = pending;
  const requestKey = kv.key;
  const holdKey = parts.keys.hold(request.key);
  const approvedAt = Date.now();
  const fields: Omit<ForceRecord, 'mac'> = {
    id,
    key: request.key,
    holder: request.holder,
    session: request.session,
    token: tokenToString(makeToken(request.epoch, request.holdCreateRevision)),
    class: request.class,
    enforcement: request.enforcement,
    requester: request.requester,
    approver: identity,
    reason: request.reason,
    requestedAt: request.requestedAt,
    approvedAt,
    revokedSession: request.revokeSession,
    requestHash: pending.requestHash,
  };
  // Proven over every field (the lock, the session, the token = the grant it ends, the request it carries
  // out): the tailer and the archiver take only a proven record as a force-release (core/proof.ts).
  const record: ForceRecord = { ...fields, mac: forceMac(parts.originSecret, fields) };
  const lease = await parts.etcd.leaseGrant(FORCE_RECORD_TTL_SECONDS);
  const res = await parts.etcd.txn(
    [cmp.created(holdKey, request.holdCreateRevision), cmp.mod(holdKey, request.holdModRevision), cmp.mod(requestKey, kv.modRevision)],
    [op.del(holdKey), op.put(parts.keys.force(id), record, lease), op.del(requestKey)],
  );
  if (!res.succeeded) {
    await parts.etcd.leaseRevoke(lease).catch(() => undefined);
    // A stale request cannot become valid again: remove it.
    await parts.etcd.txn([cmp.mod(requestKey, kv.modRevision)], [op.del(requestKey)]).catch(() => undefined);
    await requests.retire(pending);
    throw new LockauditError(
      'LOCKAUDIT_ERR_FORCE_STALE',
      `force-release ${id}: ${request.key} changed since the request (released, expired or granted again); request again if it is still needed`,
    );
  }
  await requests.retire(pending);
  await requests.approved(pending, identity, String(res.header.revision));
  parts.metrics.released(parts.classes.cached(request.class)?.value, approvedAt - request.at);
  parts.waiters.notify(request.key);
  let revokedSession = false;
  if (request.revokeSession) {
    // The holder's other holds are deleted with session-close markers before the lease goes, so the
    // log reads them as closed by this approval, not as lease expiries (a bare revoke leaves no marker).
    revokedSession = (await parts.sessions.end(request.session, identity)) !== undefined;
  }
  parts.logger.info(
    {
      id,
      key: request.key,
      class: request.class,
      enforcement: request.enforcement,
      requester: request.requester,
      approver: identity,
      revokedSession,
      requestHash: pending.requestHash,
    },
    'force-release approved',
  );
  return {
    id,
    status: 'approved',
    key: request.key,
    enforcement: request.enforcement,
    revision: String(res.header.revision),
    revokedSession,
    requestHash: pending.requestHash,
  };
}
