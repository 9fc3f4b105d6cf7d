// Sessions: one etcd lease per (caller identity, TTL), every hold of that
// TTL attached to it (seeds: batched sessions). The owner record
// /lockaudit/session/<id> lives on the lease, so it vanishes with it; every
// grant txn requires it and touches it, which lets a close prove that it saw
// every hold of the session.
import Type, { type Static } from 'typebox';
import { EtcdLeaseInvalidError } from 'etcd3';
import { decodeValue, type MarkValue } from '../core/keyspace.js';
import { LockauditError } from '../core/errors.js';
import { cmp, op, type LockKeys } from './kv.js';
import type { LockEtcd } from './lockEtcd.js';
import type { MarkerLease } from './markers.js';

export const SESSION_TTL_DEFAULT = 15;
export const SESSION_TTL_MIN = 5;
export const SESSION_TTL_MAX = 300;

const SessionRecordSchema = Type.Object({
  identity: Type.String({ minLength: 1 }),
  ttlSeconds: Type.Integer({ minimum: 1 }),
  createdAt: Type.Integer({ minimum: 0 }),
});
export type SessionRecord = Static<typeof SessionRecordSchema>;

export interface SessionInfo {
  id: string;
  ttlSeconds: number;
  /** true when the caller already had a live session with this TTL. */
  reused: boolean;
}

export interface ClosedSession {
  id: string;
  /** Lock names whose holds the close deleted. */
  released: string[];
  revision: string;
}

const notFound = (id: string): LockauditError =>
  // The same answer for "expired", "closed" and "someone else's": existence does not leak.
  new LockauditError('LOCKAUDIT_ERR_SESSION_NOT_FOUND', `session ${id}: no live session of yours has this id (it expired, was closed, or never existed)`);

/**
 * How long a lapsed session stays cached past its TTL: a holder releasing just after its session
 * lapsed is told its token was fenced out (409 NOT_HOLDER), as before, rather than that the session is
 * unknown; after that it leaves the cache for good.
 */
export const SESSION_CACHE_GRACE_MS = 60_000;

interface CachedSession {
  record: SessionRecord;
  /** When the entry goes: the lease lapses a TTL after its last sign of life here (unless another process kept it alive), plus the grace. */
  aliveUntil: number;
}

export class Sessions {
  readonly #etcd: LockEtcd;
  readonly #keys: LockKeys;
  readonly #markers: MarkerLease;
  readonly #now: () => number;
  /**
   * Records are immutable for a lease's life; existence is re-checked by every txn. An entry goes
   * when its lease has had a full TTL (and the grace) without a sign of life here, so sessions that
   * expired (their callers gone without closing) do not accumulate; a session another process keeps
   * alive is just read from etcd again.
   */
  readonly #cache = new Map<string, CachedSession>();
  #sweptAt = 0;

  constructor(etcd: LockEtcd, keys: LockKeys, markers: MarkerLease, options: { now?: () => number } = {}) {
    this.#etcd = etcd;
    this.#keys = keys;
    this.#markers = markers;
    this.#now = options.now ?? Date.now;
  }

  /** Sessions held in the cache (live, or lapsed less than a TTL ago). */
  get cachedCount(): number {
    this.#sweep();
    return this.#cache.size;
  }

  #remember(id: string, record: SessionRecord, ttlSeconds = record.ttlSeconds): void {
    this.#sweep();
    this.#cache.set(id, { record, aliveUntil: this.#now() + ttlSeconds * 1000 + SESSION_CACHE_GRACE_MS });
  }

  #lookup(id: string): SessionRecord | undefined {
    const entry = this.#cache.get(id);
    if (entry && entry.aliveUntil <= this.#now()) {
      this.#cache.delete(id);
      return undefined;
    }
    return entry?.record;
  }

  /** Drops lapsed entries, at most once per shortest TTL (so a busy API does not scan on every call). */
  #sweep(): void {
    const now = this.#now();
    if (now - this.#sweptAt < SESSION_TTL_MIN * 1000) return;
    this.#sweptAt = now;
    for (const [id, entry] of this.#cache) if (entry.aliveUntil <= now) this.#cache.delete(id);
  }

  /** The caller's session for this TTL: the live one when there is one, else a new lease. */
  async create(identity: string, ttlSeconds: number): Promise<SessionInfo> {
    const indexKey = this.#keys.sessionIndex(identity, ttlSeconds);
    for (let attempt = 0; attempt < 5; attempt++) {
      const existing = await this.#etcd.get(indexKey);
      if (existing.kv) {
        const id = existing.kv.lease;
        // Refresh it so the caller starts with a full TTL; 0 means it just lapsed.
        if ((await this.#keepAliveQuiet(id)) > 0) return { id, ttlSeconds, reused: true };
        continue;
      }
      const id = await this.#etcd.leaseGrant(ttlSeconds);
      const record: SessionRecord = { identity, ttlSeconds, createdAt: Date.now() };
      const res = await this.#etcd.txn([cmp.absent(indexKey)], [op.put(indexKey, id, id), op.put(this.#keys.session(id), record, id)]);
      if (res.succeeded) {
        this.#remember(id, record);
        return { id, ttlSeconds, reused: false };
      }
      // Another request of the same caller won the race: use its lease.
      await this.#etcd.leaseRevoke(id);
    }
    throw new LockauditError('LOCKAUDIT_ERR_INTERNAL', 'could not create a session after 5 attempts');
  }

  async #keepAliveQuiet(id: string): Promise<number> {
    try {
      return await this.#etcd.keepAlive(id);
    } catch (err) {
      if (err instanceof EtcdLeaseInvalidError) return 0;
      throw err;
    }
  }

  /** The caller's session record; SESSION_NOT_FOUND when absent or someone else's. */
  async get(identity: string, id: string, options: { serializable?: boolean } = {}): Promise<SessionRecord> {
    let record = this.#lookup(id);
    if (!record) {
      const { kv } = await this.#etcd.get(this.#keys.session(id), options);
      record = kv ? decodeValue(SessionRecordSchema, kv.value) : undefined;
      if (!record) throw notFound(id);
      this.#remember(id, record);
    }
    if (record.identity !== identity) throw notFound(id);
    return record;
  }

  /** Cached owner record, for paths that cannot reach etcd (fail-open grants). */
  cached(id: string): SessionRecord | undefined {
    return this.#lookup(id);
  }

  forget(id: string): void {
    this.#cache.delete(id);
  }

  async keepAlive(identity: string, id: string): Promise<{ id: string; ttlSeconds: number }> {
    const record = await this.get(identity, id);
    const ttl = await this.#keepAliveQuiet(id);
    if (ttl <= 0) {
      this.#cache.delete(id);
      throw notFound(id);
    }
    this.#remember(id, record, ttl);
    return { id, ttlSeconds: record.ttlSeconds };
  }

  /**
   * Close: the session's own records go first (every grant txn requires the
   * owner record, so no hold can be added after), then its holds and durable
   * waiters are deleted in txns that each carry a `session-close` marker and
   * fit etcd's default limits, then the lease is revoked — so every hold
   * reads as closed, none as an expiry, however many the session had.
   */
  async close(identity: string, id: string): Promise<ClosedSession> {
    await this.get(identity, id);
    const closed = await this.end(id, identity);
    if (!closed) throw notFound(id);
    return closed;
  }

  /**
   * Ends a session whoever asks (its owner closing it, or a force-release
   * revoking it): records, then holds in marked batches, then the lease.
   * undefined when the lease is already gone.
   */
  async end(id: string, by: string): Promise<ClosedSession | undefined> {
    this.#cache.delete(id);
    let revision = await this.#dropRecords(id);
    if (revision === undefined) return undefined;
    const released: string[] = [];
    for (let attempt = 0; attempt < 10; attempt++) {
      const info = await this.#etcd.leaseInfo(id);
      if (!info) break; // the lease ran out meanwhile: what is left expired
      const keys = info.keys.filter((k) => this.#keys.lockOf(k) !== undefined || k.startsWith(`${this.#keys.root}/q/`));
      if (keys.length === 0) break;
      let raced = false;
      for (const batch of closeBatches(keys)) {
        const res = await this.#markedTxn(id, by, batch);
        if (!res) {
          raced = true; // a key left the lease meanwhile (released by its holder): read the lease again
          break;
        }
        revision = res;
        for (const k of batch) {
          const lock = this.#keys.lockOf(k);
          if (lock !== undefined) released.push(lock);
        }
      }
      if (!raced) break;
    }
    try {
      await this.#etcd.leaseRevoke(id);
    } catch (err) {
      if (!(err instanceof EtcdLeaseInvalidError)) throw err;
    }
    return { id, released, revision };
  }

  /** Deletes the owner record and its index; the revision, or undefined when the session is gone. */
  async #dropRecords(id: string): Promise<string | undefined> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const { kv, header } = await this.#etcd.get(this.#keys.session(id));
      if (!kv) return (await this.#etcd.leaseInfo(id)) ? String(header.revision) : undefined;
      const record = decodeValue(SessionRecordSchema, kv.value);
      const success = [op.del(this.#keys.session(id))];
      if (record) success.push(op.del(this.#keys.sessionIndex(record.identity, record.ttlSeconds)));
      // Every grant touches the record: a grant racing us makes this retry, and none can follow it.
      const res = await this.#etcd.txn([cmp.mod(this.#keys.session(id), kv.modRevision)], success);
      if (res.succeeded) return String(res.header.revision);
    }
    throw new LockauditError('LOCKAUDIT_ERR_INTERNAL', `session ${id}: the close kept racing grants; try again`);
  }

  /** One batch: each key still on this lease → delete them all with one session-close marker. */
  async #markedTxn(id: string, by: string, batch: readonly string[]): Promise<string | undefined> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const mark: MarkValue = { kind: 'session-close', by, at: Date.now(), session: id };
      try {
        const res = await this.#etcd.txn(
          batch.map((k) => cmp.lease(k, id)),
          [...batch.map((k) => op.del(k)), await this.#markers.put(mark)],
        );
        return res.succeeded ? String(res.header.revision) : undefined;
      } catch (err) {
        if (!(err instanceof EtcdLeaseInvalidError) || attempt > 0) throw err;
        this.#markers.invalidate(); // the marker lease is gone (e.g. after a restore): a new one
      }
    }
    return undefined;
  }
}

/**
 * etcd's defaults allow 128 ops in each part of a txn and 1.5 MiB a request;
 * a batch of 100 deletes (keys ≤ ~600 bytes) plus its marker stays well
 * inside both.
 */
export const CLOSE_BATCH_KEYS = 100;

export function closeBatches(keys: readonly string[], size = CLOSE_BATCH_KEYS): string[][] {
  const batches: string[][] = [];
  for (let i = 0; i < keys.length; i += size) batches.push(keys.slice(i, i + size));
  return batches;
}
