// Reason markers (/sys/mark/<id>) ride on a short shared lease: they only
// have to outlive the txn they explain (the tailer reads them from the log),
// so one 60 s lease serves every marker written in a 30 s window. Every
// marker is signed here with the origin secret (core/proof.ts): the
// tailer lets only a proven marker explain a delete, and only the delete it
// is bound to.
import { randomUUID } from 'node:crypto';
import { markMac } from '../core/proof.js';
import type { MarkValue } from '../core/keyspace.js';
import type { IRequestOp } from 'etcd3';
import { op, type LockKeys } from './kv.js';
import type { LockEtcd } from './lockEtcd.js';

export const MARKER_LEASE_TTL_SECONDS = 60;
const REUSE_MS = 30_000;

export class MarkerLease {
  readonly #etcd: LockEtcd;
  readonly #keys: LockKeys;
  #current: { id: string; grantedAt: number } | undefined;
  #granting: Promise<string> | undefined;
  readonly #secret: Buffer;

  constructor(etcd: LockEtcd, keys: LockKeys, originSecret: Buffer) {
    this.#etcd = etcd;
    this.#keys = keys;
    this.#secret = originSecret;
  }

  /** A lease id with at least 30 s left. */
  async leaseId(): Promise<string> {
    const current = this.#current;
    if (current && Date.now() - current.grantedAt < REUSE_MS) return current.id;
    this.#granting ??= this.#etcd
      .leaseGrant(MARKER_LEASE_TTL_SECONDS)
      .then((id) => {
        this.#current = { id, grantedAt: Date.now() };
        return id;
      })
      .finally(() => {
        this.#granting = undefined;
      });
    return this.#granting;
  }

  /** Forget the lease (a txn said it is gone, e.g. after a restore). */
  invalidate(): void {
    this.#current = undefined;
  }

  /** The put of a new marker, signed, for the txn that does the delete it explains. */
  async put(value: Omit<MarkValue, 'mac'>): Promise<IRequestOp> {
    const signed: MarkValue = { ...value, mac: markMac(this.#secret, value) };
    return op.put(this.#keys.mark(randomUUID()), signed, await this.leaseId());
  }
}
