// Raw etcd txn building blocks and the lock API's key layout. The lock
// keyspace comes from core/keyspace.ts (the tailer's contract); `root` is
// empty in production and lets a test own a complete private keyspace.
// Keys under /lockaudit/ are the API's own bookkeeping (session records,
// pending two-person requests): outside the tailed prefixes on purpose.
import { CompareResult, CompareTarget, SortOrder, SortTarget, type ICompare, type IKeyValue, type IRequestOp } from 'etcd3';
import { classKey, forceKey, holdKey, markKey, PREFIX, queueKey, queuePrefix, sessionRecordKey } from '../core/keyspace.js';

export class LockKeys {
  constructor(readonly root = '') {}
  hold = (lock: string): string => this.root + holdKey(lock);
  holdPrefix = (): string => this.root + PREFIX.hold;
  queue = (lock: string, leaseId: string): string => this.root + queueKey(lock, leaseId);
  queuePrefix = (lock: string): string => this.root + queuePrefix(lock);
  epoch = (): string => this.root + PREFIX.epoch;
  class = (name: string): string => this.root + classKey(name);
  force = (id: string): string => this.root + forceKey(id);
  mark = (id: string): string => this.root + markKey(id);
  /** The owner record of a session, on the session's lease. */
  session = (leaseId: string): string => this.root + sessionRecordKey(leaseId);
  /** (identity, TTL) → lease id, on the lease: one lease per pair. */
  sessionIndex = (identity: string, ttlSeconds: number): string => `${this.root}/lockaudit/session-by/${encodeURIComponent(identity)}/${ttlSeconds}`;
  /** Put by every grant txn: its mod revision is the latest grant's; a rewound etcd shows it lower. */
  grantGuard = (): string => `${this.root}/lockaudit/grant-guard`;
  forceRequest = (id: string): string => `${this.root}/lockaudit/force-request/${id}`;
  epochRequest = (id: string): string => `${this.root}/lockaudit/epoch-request/${id}`;
  forceRequestPrefix = (): string => `${this.root}/lockaudit/force-request/`;
  epochRequestPrefix = (): string => `${this.root}/lockaudit/epoch-request/`;
  /** The lock name of a hold key, or undefined for a key outside this root's holds. */
  lockOf = (key: string): string | undefined => (key.startsWith(this.holdPrefix()) ? key.slice(this.holdPrefix().length) : undefined);
}

const buf = (s: string): Buffer => Buffer.from(s);

/** The end of a prefix range: the prefix with its last byte incremented. */
export function prefixEnd(prefix: string): Buffer {
  const b = Buffer.from(prefix);
  for (let i = b.length - 1; i >= 0; i--) {
    if ((b[i] as number) < 0xff) {
      const end = Buffer.from(b.subarray(0, i + 1));
      end[i] = (b[i] as number) + 1;
      return end;
    }
  }
  return Buffer.from([0]);
}

export const cmp = {
  absent: (key: string): ICompare => ({ key: buf(key), target: CompareTarget.Create, result: CompareResult.Equal, create_revision: 0 }),
  exists: (key: string): ICompare => ({ key: buf(key), target: CompareTarget.Create, result: CompareResult.Greater, create_revision: 0 }),
  mod: (key: string, revision: string): ICompare => ({ key: buf(key), target: CompareTarget.Mod, result: CompareResult.Equal, mod_revision: revision }),
  /** The key's mod revision is at least `revision` (an absent key's is 0). */
  modAtLeast: (key: string, revision: bigint): ICompare => ({
    key: buf(key),
    target: CompareTarget.Mod,
    result: CompareResult.Greater,
    mod_revision: String(revision - 1n),
  }),
  created: (key: string, revision: string): ICompare => ({
    key: buf(key),
    target: CompareTarget.Create,
    result: CompareResult.Equal,
    create_revision: revision,
  }),
  lease: (key: string, leaseId: string): ICompare => ({ key: buf(key), target: CompareTarget.Lease, result: CompareResult.Equal, lease: leaseId }),
  /** True when no key under the prefix exists (etcd compares an empty range as one absent key). */
  noneUnder: (prefix: string): ICompare => ({
    key: buf(prefix),
    range_end: prefixEnd(prefix),
    target: CompareTarget.Create,
    result: CompareResult.Equal,
    create_revision: 0,
  }),
};

export const op = {
  put: (key: string, value: unknown, lease?: string): IRequestOp => ({
    request_put: { key: buf(key), value: buf(JSON.stringify(value)), ...(lease ? { lease } : {}) },
  }),
  del: (key: string): IRequestOp => ({ request_delete_range: { key: buf(key) } }),
  delPrefix: (prefix: string): IRequestOp => ({ request_delete_range: { key: buf(prefix), range_end: prefixEnd(prefix) } }),
  get: (key: string): IRequestOp => ({ request_range: { key: buf(key) } }),
  getPrefix: (prefix: string, options: { countOnly?: boolean } = {}): IRequestOp => ({
    request_range: {
      key: buf(prefix),
      range_end: prefixEnd(prefix),
      sort_order: SortOrder.Ascend,
      sort_target: SortTarget.Create,
      ...(options.countOnly ? { count_only: true } : {}),
    },
  }),
};

/** The decoded view of one key read in a txn or range. */
export interface Kv {
  key: string;
  value: string;
  createRevision: string;
  modRevision: string;
  /** The key's version: puts since it was created (1 for the creating put). */
  version: string;
  lease: string;
}

export function toKv(kv: IKeyValue): Kv {
  return {
    key: kv.key.toString(),
    value: kv.value.toString(),
    createRevision: String(kv.create_revision),
    modRevision: String(kv.mod_revision),
    version: String(kv.version),
    lease: String(kv.lease),
  };
}
