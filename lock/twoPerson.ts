// Pending two-person requests (force-release, epoch advance): one person requests, a different
// lock-operator approves exactly the request they were shown. A request lives in etcd outside the tailed
// prefixes (/lockaudit/<kind>/<id>, on its own lease of PENDING_REQUEST_TTL_SECONDS), so any API replica
// can approve it — and so anyone with write access to etcd can edit it. Hence every request carries the
// API's proof (core/proof.ts) over its id, every field in a fixed order, the lease it rides on and its key's
// create revision (a request is written in two steps to learn it: a lease id can be granted again by anyone
// once it is gone, a create revision never recurs), and its hash (the same message, sha256) is what an
// approver is shown and must name:
// - an edited request, or one written by hand (say with a colleague as requester), is refused with
//   LOCKAUDIT_ERR_REQUEST_UNPROVEN and alarmed (LOCKAUDIT_ALARM_FOREIGN_WRITE);
// - a request that is not the one the approver saw is refused with LOCKAUDIT_ERR_REQUEST_CHANGED;
// - a copy put back after a rejection, an approval or its expiry is another put of the key, so proves nothing;
//   an expired request (older than its lease's TTL) is refused whatever it carries.
// The approval's own txn then compares the request's mod revision, so nothing changes between check and act.
import type Type from 'typebox';
import type { Static } from 'typebox';
import { LockauditError, type ErrorCode } from '../core/errors.js';
import { decodeValue } from '../core/keyspace.js';
import { hasValidRequestProof, requestHash, requestMac } from '../core/proof.js';
import type { LockParts, TwoPersonAct } from './context.js';
import { cmp, op, type Kv } from './kv.js';

export const PENDING_REQUEST_TTL_SECONDS = 3600;

export type RequestKind = 'force-request' | 'epoch-request';

/** What one kind of request is: its schema (the proof's field `mac` aside) and its fields in proof order. */
export interface RequestSpec<S extends Type.TObject> {
  kind: RequestKind;
  /** The schema of the stored value; must allow an optional `mac`. */
  schema: S;
  /** The bound fields, id first, in a fixed order. */
  fields: (r: Static<S>) => readonly unknown[];
  /** Human name in messages, e.g. "force-release"; also the kind the audit log records (sql/200). */
  noun: 'force-release' | 'epoch advance';
  notFound: ErrorCode;
  selfApproval: ErrorCode;
}

/** A request as read from etcd, judged. */
export interface PendingRequest<T> {
  id: string;
  value: T;
  /** sha256 (hex) of the request as the API wrote it: what an approver names. */
  requestHash: string;
  /** The value carries the API's proof for every field, its id and its lease. */
  proven: boolean;
  requester: string;
  /** When it was requested, ms: older than its lease's TTL, it is expired whatever etcd still holds. */
  requestedAt: number;
  lease: string;
  kv: Kv;
}

/** A request removed without being carried out: rejected by another lock-operator, or cancelled by its requester. */
export interface Withdrawn {
  id: string;
  status: 'rejected' | 'cancelled';
  /** Absent when the value under the request's key was no request at all. */
  requestHash?: string;
  proven: boolean;
}

type Stored = { id: string; requester: string; requestedAt: number; reason: string; key?: string; mac?: string };

export class TwoPersonRequests<S extends Type.TObject> {
  readonly #parts: LockParts;
  readonly #spec: RequestSpec<S>;

  constructor(parts: LockParts, spec: RequestSpec<S>) {
    this.#parts = parts;
    this.#spec = spec;
  }

  #key(id: string): string {
    return this.#spec.kind === 'force-request' ? this.#parts.keys.forceRequest(id) : this.#parts.keys.epochRequest(id);
  }

  #prefix(): string {
    return this.#spec.kind === 'force-request' ? this.#parts.keys.forceRequestPrefix() : this.#parts.keys.epochRequestPrefix();
  }

  /**
   * Writes a new request on a lease of its own, proven; returns its hash and when it expires. Two steps: the
   * first put creates the key (unproven for a moment) and tells its create revision, the second proves it.
   */
  async create(value: Static<S>): Promise<{ requestHash: string; expiresAt: string }> {
    const key = this.#key((value as Stored).id);
    await this.#assertRoom(value as Stored);
    const lease = await this.#parts.etcd.leaseGrant(PENDING_REQUEST_TTL_SECONDS);
    const created = await this.#parts.etcd.txn([cmp.absent(key)], [op.put(key, value, lease)]);
    const at = { lease, createRevision: String(created.header.revision) };
    const fields = this.#spec.fields(value);
    const stored = { ...(value as object), mac: requestMac(this.#parts.originSecret, this.#spec.kind, fields, at) };
    const written = created.succeeded ? await this.#parts.etcd.txn([cmp.mod(key, at.createRevision)], [op.put(key, stored, lease)]) : undefined;
    if (!written?.succeeded) {
      await this.#parts.etcd.leaseRevoke(lease).catch(() => undefined);
      throw new LockauditError(
        'LOCKAUDIT_ERR_REQUEST_UNPROVEN',
        `${this.#spec.noun} request ${(value as Stored).id}: its key was written by someone else while the API wrote it; request again`,
      );
    }
    const hash = requestHash(this.#spec.kind, fields, at);
    const v = value as Stored;
    await this.#log('requested', { id: v.id, hash, actor: v.requester, value: v, revision: String(written.header.revision) });
    return { requestHash: hash, expiresAt: new Date(Date.now() + PENDING_REQUEST_TTL_SECONDS * 1000).toISOString() };
  }

  /**
   * Each pending request is a lease and a key for an hour: past the limits a new one is refused with
   * LOCKAUDIT_ERR_LIMIT_REQUESTS (429), in all and (force requests) per lock. Values written around the API count too:
   * they take the same room in etcd. Checked before writing, so two requests at the same moment may pass one over.
   */
  async #assertRoom(value: Stored): Promise<void> {
    const { total, perKey } = this.#parts.pendingRequestLimits;
    // One read: etcd counts every key under the prefix whatever the limit, and below the limit returns them all.
    const { count, kvs } = await this.#parts.etcd.getPrefix(this.#prefix(), value.key === undefined ? { countOnly: true } : { limit: total });
    if (count >= total) {
      throw new LockauditError(
        'LOCKAUDIT_ERR_LIMIT_REQUESTS',
        `${count} ${this.#spec.noun} requests are pending, the most LOCKAUDIT_MAX_PENDING_REQUESTS (${total}) allows; approve, reject or let some expire first`,
      );
    }
    if (value.key === undefined) return;
    const forKey = kvs.filter((kv) => (decodeValue(this.#spec.schema, kv.value) as Stored | undefined)?.key === value.key).length;
    if (forKey >= perKey) {
      throw new LockauditError(
        'LOCKAUDIT_ERR_LIMIT_REQUESTS',
        `${value.key}: ${forKey} ${this.#spec.noun} requests for this lock are pending, the most LOCKAUDIT_MAX_PENDING_REQUESTS_PER_KEY (${perKey}) allows; approve or reject one first`,
      );
    }
  }

  #judge(id: string, kv: Kv): PendingRequest<Static<S>> | undefined {
    const value = decodeValue(this.#spec.schema, kv.value);
    if (!value) return undefined;
    const stored = value as Stored;
    const fields = this.#spec.fields(value);
    const at = { lease: kv.lease, createRevision: kv.createRevision };
    const proven = stored.id === id && hasValidRequestProof(this.#parts.originSecret, this.#spec.kind, fields, at, stored.mac);
    return {
      id,
      value,
      requestHash: requestHash(this.#spec.kind, fields, at),
      proven,
      requester: stored.requester,
      requestedAt: stored.requestedAt,
      lease: kv.lease,
      kv,
    };
  }

  /** The request with this id, judged; undefined when there is none. A value that is no request at all reads unproven. */
  async read(id: string): Promise<PendingRequest<Static<S>> | { id: string; kv: Kv; proven: false; unreadable: true } | undefined> {
    const { kv } = await this.#parts.etcd.get(this.#key(id));
    if (!kv) return undefined;
    return this.#judge(id, kv) ?? { id, kv, proven: false, unreadable: true };
  }

  /** The request with this id, judged, to show: LOCKAUDIT_ERR_*_NOT_FOUND when there is none, REQUEST_UNPROVEN when its value is no request. */
  async readPending(id: string): Promise<PendingRequest<Static<S>>> {
    const found = await this.read(id);
    const noun = this.#spec.noun;
    if (!found) throw new LockauditError(this.#spec.notFound, `${noun} ${id}: no pending request with this id`);
    if ('unreadable' in found)
      throw new LockauditError('LOCKAUDIT_ERR_REQUEST_UNPROVEN', `${noun} ${id}: the value under its key is not a ${noun} request (written around the API)`);
    return found;
  }

  /** Every pending request, judged (at most `limit`, oldest first); values that are no request are counted, not shown. */
  async list(limit = 500): Promise<{ requests: PendingRequest<Static<S>>[]; unreadable: number }> {
    const { kvs } = await this.#parts.etcd.getPrefix(this.#prefix(), { limit });
    const requests: PendingRequest<Static<S>>[] = [];
    let unreadable = 0;
    for (const kv of kvs) {
      const judged = this.#judge(kv.key.slice(this.#prefix().length), kv);
      if (judged) requests.push(judged);
      else unreadable++;
    }
    return { requests, unreadable };
  }

  /**
   * The request an approver may act on: present, proven, not theirs, and the very one they saw (its hash).
   * An unproven one is alarmed before the refusal.
   */
  async approvable(identity: string, id: string, seenHash: string): Promise<PendingRequest<Static<S>>> {
    const found = await this.read(id);
    const noun = this.#spec.noun;
    if (!found)
      throw new LockauditError(
        this.#spec.notFound,
        `${noun} ${id}: no pending request with this id (approved, rejected, stale, expired after 1 h, or never made)`,
      );
    if (!found.proven) {
      this.#refuse(found.kv, 'approve');
      await this.#log('refused-unproven', {
        id,
        hash: 'requestHash' in found ? found.requestHash : '',
        actor: identity,
        value: 'value' in found ? (found.value as Stored) : undefined,
        revision: found.kv.modRevision,
      });
      throw new LockauditError(
        'LOCKAUDIT_ERR_REQUEST_UNPROVEN',
        `${noun} ${id}: the pending request in etcd does not carry the lock API's proof for what it says (edited, or written around the API); it is refused and alarmed — request again through the API`,
      );
    }
    const seen = { id, hash: found.requestHash, actor: identity, value: found.value as Stored, revision: found.kv.modRevision };
    if (Date.now() - found.requestedAt > PENDING_REQUEST_TTL_SECONDS * 1000) {
      await this.#log('refused-expired', seen);
      throw new LockauditError(
        this.#spec.notFound,
        `${noun} ${id}: the request expired (made ${new Date(found.requestedAt).toISOString()}, valid ${PENDING_REQUEST_TTL_SECONDS / 3600} h); request again`,
      );
    }
    if (found.requester === identity) {
      await this.#log('refused-self', seen);
      throw new LockauditError(this.#spec.selfApproval, `${noun} ${id}: you requested it; a different lock-operator must approve`);
    }
    if (found.requestHash !== seenHash) {
      await this.#log('refused-changed', seen);
      throw new LockauditError(
        'LOCKAUDIT_ERR_REQUEST_CHANGED',
        `${noun} ${id}: requestHash is not the hash of this request (${found.requestHash}); read it again (GET) and approve what it says now`,
      );
    }
    return found;
  }

  /**
   * Rejects (another lock-operator) or cancels (its requester) a pending request: deletes it and, when it is
   * the API's, revokes its lease. An unproven request is only deleted (its lease may be anyone's) and alarmed.
   */
  async withdraw(identity: string, id: string, reason: string): Promise<Withdrawn> {
    const found = await this.read(id);
    if (!found) throw new LockauditError(this.#spec.notFound, `${this.#spec.noun} ${id}: no pending request with this id`);
    const status: Withdrawn['status'] = 'requester' in found && found.requester === identity ? 'cancelled' : 'rejected';
    const deleted = await this.#parts.etcd.txn([], [op.del(found.kv.key)]);
    // Only a proven request's own lease: an unproven value may ride on anyone's (a session's) lease.
    if (found.proven && found.kv.lease !== '0') await this.#parts.etcd.leaseRevoke(found.kv.lease).catch(() => undefined);
    if (!found.proven) this.#refuse(found.kv, status);
    const hash = 'requestHash' in found ? found.requestHash : undefined;
    await this.#log(status, {
      id,
      hash: hash ?? '',
      actor: identity,
      value: 'value' in found ? (found.value as Stored) : undefined,
      revision: String(deleted.header.revision),
      reason,
    });
    this.#parts.logger.info(
      { kind: this.#spec.kind, id, status, by: identity, reason, proven: found.proven, ...(hash ? { requestHash: hash } : {}) },
      `${this.#spec.noun} request ${status}`,
    );
    return { id, status, ...(hash ? { requestHash: hash } : {}), proven: found.proven };
  }

  /** After an approval: the request's lease goes too, so a copy of it cannot be put back on it. */
  async retire(request: PendingRequest<unknown>): Promise<void> {
    await this.#parts.etcd.leaseRevoke(request.lease).catch(() => undefined);
  }

  /** Records a carried-out approval (the txn's revision) in the audit log. */
  approved(request: PendingRequest<Static<S>>, approver: string, revision: string): Promise<void> {
    return this.#log('approved', { id: request.id, hash: request.requestHash, actor: approver, value: request.value as Stored, revision });
  }

  #log(
    action: TwoPersonAct['action'],
    act: { id: string; hash: string; actor: string; value: Stored | undefined; revision: string; reason?: string },
  ): Promise<void> {
    return (
      this.#parts.twoPersonLog?.record({
        kind: this.#spec.noun === 'force-release' ? 'force-release' : 'epoch-advance',
        action,
        requestId: act.id,
        requestHash: act.hash,
        actor: act.actor,
        requester: act.value?.requester ?? '',
        key: act.value?.key ?? '',
        reason: act.reason ?? act.value?.reason ?? '',
        revision: act.revision,
      }) ?? Promise.resolve()
    );
  }

  #refuse(kv: Kv, action: string): void {
    this.#parts.logger.error(
      { kind: this.#spec.kind, key: kv.key, modRevision: kv.modRevision, action },
      `${this.#spec.noun} request without the lock API's proof: edited or written around the API`,
    );
    this.#parts.alarms?.foreignWrite({
      what: `${this.#spec.noun} request (edited, or written around the API)`,
      key: kv.key,
      revision: kv.modRevision,
      where: 'the API log',
    });
  }
}
