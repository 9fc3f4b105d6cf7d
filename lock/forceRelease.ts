// Force-release (DESIGN.md §2): a lock-operator requests with a reason and
// sees the class's enforcement first (advisory: two writers may follow); a
// *different* lock-operator approves. Approval is one txn: hold unchanged
// since the request → delete it and put /sys/force/<id> (24 h lease).
// Pending requests live in etcd (outside the tailed prefixes) on a 1 h lease,
// so any API replica can approve them. With revokeSession the holder's
// session is then ended like a close (sessions.ts): its other holds deleted
// with session-close markers, then the lease revoked.
import { randomUUID } from 'node:crypto';
import Type, { type Static } from 'typebox';
import { LockauditError } from '../core/errors.js';
import { decodeValue, HoldValueSchema, type ForceRecord, type LockClass } from '../core/keyspace.js';
import { forceMac } from '../core/proof.js';
import { makeToken, tokenToString } from '../core/token.js';
import type { LockParts } from './context.js';
import { cmp, op } from './kv.js';

export const FORCE_RECORD_TTL_SECONDS = 24 * 3600;
export const PENDING_REQUEST_TTL_SECONDS = 3600;

const ForceRequestSchema = Type.Object({
  id: Type.String(),
  key: Type.String(),
  reason: Type.String(),
  revokeSession: Type.Boolean(),
  requester: Type.String(),
  requestedAt: Type.Integer(),
  holdCreateRevision: Type.String(),
  holdModRevision: Type.String(),
  holder: Type.String(),
  session: Type.String(),
  epoch: Type.Integer(),
  at: Type.Integer(),
  class: Type.String(),
  enforcement: Type.Union([Type.Literal('fenced'), Type.Literal('advisory')]),
});
type ForceRequest = Static<typeof ForceRequestSchema>;

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
}

export interface ForceApproved {
  id: string;
  status: 'approved';
  key: string;
  enforcement: LockClass['enforcement'];
  revision: string;
  revokedSession: boolean;
}

function warningFor(enforcement: LockClass['enforcement'], revokeSession: boolean): string {
  const base =
    enforcement === 'advisory'
      ? 'advisory class: the resource does not check fencing tokens, so the current holder may keep writing after the force-release and two writers may act at once'
      : 'fenced class: the resource rejects the current holder\'s token once a newer grant writes, so a force-release cannot let two writers in';
  return revokeSession ? `${base}; the holder's whole session (every hold it has) will be revoked` : base;
}

export async function requestForceRelease(parts: LockParts, identity: string, input: { key: string; reason: string; revokeSession: boolean }): Promise<ForceRequested> {
  const { kv } = await parts.etcd.get(parts.keys.hold(input.key));
  const hold = kv ? decodeValue(HoldValueSchema, kv.value) : undefined;
  if (!kv || !hold) throw new LockauditError('LOCKAUDIT_ERR_LOCK_NOT_HELD', `${input.key}: nobody holds it, there is nothing to force-release`);
  let enforcement: LockClass['enforcement'];
  try {
    enforcement = (await parts.classes.get(hold.class)).value.enforcement;
  } catch {
    // A hold whose class has gone is treated as unfenced: the cautious reading.
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
  const lease = await parts.etcd.leaseGrant(PENDING_REQUEST_TTL_SECONDS);
  await parts.etcd.txn([], [op.put(parts.keys.forceRequest(id), request, lease)]);
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
    expiresAt: new Date(request.requestedAt + PENDING_REQUEST_TTL_SECONDS * 1000).toISOString(),
  };
}

export async function approveForceRelease(parts: LockParts, identity: string, id: string): Promise<ForceApproved> {
  const requestKey = parts.keys.forceRequest(id);
  const { kv } = await parts.etcd.get(requestKey);
  const request = kv ? decodeValue(ForceRequestSchema, kv.value) : undefined;
  if (!kv || !request) throw new LockauditError('LOCKAUDIT_ERR_FORCE_NOT_FOUND', `force-release ${id}: no pending request with this id (approved, stale, expired after 1 h, or never made)`);
  if (request.requester === identity) {
    throw new LockauditError('LOCKAUDIT_ERR_FORCE_SELF_APPROVAL', `force-release ${id}: you requested it; a different lock-operator must approve`);
  }
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
  };
  // Signed over every field (the lock, the session, the token = the grant it ends): the tailer and the
  // archiver take only a proven record as a force-release (core/proof.ts).
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
    throw new LockauditError('LOCKAUDIT_ERR_FORCE_STALE', `force-release ${id}: ${request.key} changed since the request (released, expired or granted again); request again if it is still needed`);
  }
  parts.metrics.released(parts.classes.cached(request.class)?.value, approvedAt - request.at);
  parts.waiters.notify(request.key);
  let revokedSession = false;
  if (request.revokeSession) {
    // The holder's other holds are deleted with session-close markers before the lease goes, so the
    // log reads them as closed by this approval, not as lease expiries (a bare revoke leaves no marker).
    revokedSession = (await parts.sessions.end(request.session, identity)) !== undefined;
  }
  parts.logger.info({ id, key: request.key, class: request.class, enforcement: request.enforcement, requester: request.requester, approver: identity, revokedSession }, 'force-release approved');
  return { id, status: 'approved', key: request.key, enforcement: request.enforcement, revision: String(res.header.revision), revokedSession };
}
