// The lock API's only door to etcd: raw txns, ranges and lease calls, each
// with its own deadline (a call without quorum otherwise hangs), each
// response header shown to the epoch seal, each failure shown to the quorum
// monitor. Unavailability surfaces as LOCKAUDIT_ERR_QUORUM_LOST.
import type { Etcd3, ICompare, IRequestOp, IResponseHeader, ITxnResponse } from 'etcd3';
import { EtcdLeaseInvalidError } from 'etcd3';
import { LockauditError } from '../core/errors.js';
import { op, prefixEnd, toKv, type Kv } from './kv.js';
import { isUnavailable, QuorumMonitor } from './quorum.js';

export interface LockEtcdOptions {
  /** Deadline of each call, ms. Default 2000: a lost quorum is noticed within it. */
  callTimeoutMs?: number;
  probeIntervalMs?: number;
  /** A key read by the quorum probe (linearizable). */
  probeKey: string;
  onQuorumChange?: (lost: boolean) => void;
}

export class LockEtcd {
  readonly client: Etcd3;
  readonly quorum: QuorumMonitor;
  readonly #timeoutMs: number;
  readonly #headerObservers: Array<(header: IResponseHeader) => void> = [];

  constructor(client: Etcd3, options: LockEtcdOptions) {
    this.client = client;
    this.#timeoutMs = options.callTimeoutMs ?? 2_000;
    this.quorum = new QuorumMonitor({
      probe: async () => {
        await this.client.kv.range({ key: Buffer.from(options.probeKey) }, this.#callOptions());
      },
      probeIntervalMs: options.probeIntervalMs,
      onChange: options.onQuorumChange,
    });
  }

  /** Called with every response header (the seal compares cluster ids). */
  onHeader(observer: (header: IResponseHeader) => void): void {
    this.#headerObservers.push(observer);
  }

  #callOptions(): { deadline: Date } {
    return { deadline: new Date(Date.now() + this.#timeoutMs) };
  }

  async #call<T extends { header?: IResponseHeader }>(fn: (options: { deadline: Date }) => Promise<T>): Promise<T> {
    let res: T;
    try {
      res = await fn(this.#callOptions());
    } catch (err) {
      if (this.quorum.failure(err)) {
        throw new LockauditError('LOCKAUDIT_ERR_QUORUM_LOST', `etcd has no reachable quorum (${describe(err)})`, { cause: err });
      }
      throw err;
    }
    this.quorum.success();
    if (res.header) for (const observe of this.#headerObservers) observe(res.header);
    return res;
  }

  txn(compare: ICompare[], success: IRequestOp[], failure: IRequestOp[] = []): Promise<ITxnResponse> {
    return this.#call((o) => this.client.kv.txn({ compare, success, failure }, o));
  }

  async get(key: string, options: { serializable?: boolean } = {}): Promise<{ kv: Kv | undefined; header: IResponseHeader }> {
    const res = await this.#call((o) => this.client.kv.range({ key: Buffer.from(key), serializable: options.serializable ?? false }, o));
    const first = res.kvs[0];
    return { kv: first ? toKv(first) : undefined, header: res.header };
  }

  async getPrefix(prefix: string, options: { limit?: number; countOnly?: boolean } = {}): Promise<{ kvs: Kv[]; count: number; header: IResponseHeader }> {
    const request = op.getPrefix(prefix, { countOnly: options.countOnly }).request_range ?? {};
    const res = await this.#call((o) => this.client.kv.range({ ...request, range_end: prefixEnd(prefix), limit: options.limit ?? 0 }, o));
    return { kvs: res.kvs.map(toKv), count: Number(res.count), header: res.header };
  }

  async leaseGrant(ttlSeconds: number): Promise<string> {
    const res = await this.#call((o) => this.client.leaseClient.leaseGrant({ TTL: ttlSeconds }, o));
    return String(res.ID);
  }

  /** Revokes a lease; an already-gone lease is not an error. */
  async leaseRevoke(id: string): Promise<void> {
    try {
      await this.#call((o) => this.client.leaseClient.leaseRevoke({ ID: id }, o));
    } catch (err) {
      if (!(err instanceof EtcdLeaseInvalidError)) throw err;
    }
  }

  /** Remaining TTL and attached keys; undefined when the lease is gone. */
  async leaseInfo(id: string): Promise<{ ttlSeconds: number; grantedTtlSeconds: number; keys: string[] } | undefined> {
    let res;
    try {
      res = await this.#call((o) => this.client.leaseClient.leaseTimeToLive({ ID: id, keys: true }, o));
    } catch (err) {
      if (err instanceof EtcdLeaseInvalidError) return undefined;
      throw err;
    }
    if (Number(res.TTL) <= 0) return undefined;
    return { ttlSeconds: Number(res.TTL), grantedTtlSeconds: Number(res.grantedTTL), keys: (res.keys ?? []).map((k) => k.toString()) };
  }

  /** One keepalive for a lease; the TTL it was renewed to, 0 when the lease is gone. */
  keepAlive(id: string): Promise<number> {
    return this.#call(async (o) => {
      const stream = await this.client.leaseClient.leaseKeepAlive(o);
      const res = await new Promise<{ TTL: string; header: IResponseHeader }>((resolve, reject) => {
        stream.on('data', resolve);
        stream.on('error', reject);
        stream.write({ ID: id });
      });
      stream.end();
      return res;
    }).then((res) => Number(res.TTL));
  }

  close(): void {
    this.quorum.close();
  }
}

function describe(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? 'unknown error';
}

export { isUnavailable };
