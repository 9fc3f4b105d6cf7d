// /sys/epoch and the restore seal (DESIGN.md §2). The record is created on
// first start, bound to the cluster id etcd reports. Every response header
// is compared with it: a different cluster id means the data was restored
// into another cluster, and grants stop until a two-person epoch advance
// bumps the epoch, binds the new id and deletes every restored hold.
import type { IResponseHeader } from 'etcd3';
import { decodeValue, EpochValueSchema, type EpochValue } from '../core/keyspace.js';
import { LockauditError } from '../core/errors.js';
import type { LockKeys, Kv } from './kv.js';
import { cmp, op } from './kv.js';
import type { LockEtcd } from './lockEtcd.js';

export const FIRST_EPOCH = 1;

export class EpochState {
  readonly #etcd: LockEtcd;
  readonly #keys: LockKeys;
  #record: EpochValue | undefined;
  #modRevision = '0';
  #clusterId: string | undefined;
  #loading: Promise<void> | undefined;
  readonly #onSeal: (sealed: boolean) => void;
  #wasSealed = false;

  constructor(etcd: LockEtcd, keys: LockKeys, onSeal: (sealed: boolean) => void = () => {}) {
    this.#etcd = etcd;
    this.#keys = keys;
    this.#onSeal = onSeal;
    etcd.onHeader((h) => this.observe(h));
  }

  /** The cluster id of the latest response. */
  get clusterId(): string | undefined {
    return this.#clusterId;
  }

  get record(): EpochValue | undefined {
    return this.#record;
  }

  get modRevision(): string {
    return this.#modRevision;
  }

  get sealed(): boolean {
    return this.#record !== undefined && this.#clusterId !== undefined && this.#record.clusterId !== this.#clusterId;
  }

  observe(header: IResponseHeader): void {
    this.#clusterId = String(header.cluster_id);
    this.#notify();
  }

  #notify(): void {
    const sealed = this.sealed;
    if (sealed !== this.#wasSealed) {
      this.#wasSealed = sealed;
      this.#onSeal(sealed);
    }
  }

  /** Loads the record once (creating it on first start); later calls reuse it. */
  ready(): Promise<void> {
    if (this.#record) return Promise.resolve();
    this.#loading ??= this.reload().finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }

  /** Reads /sys/epoch, creating it bound to this cluster when absent. */
  async reload(): Promise<void> {
    for (;;) {
      const { kv, header } = await this.#etcd.get(this.#keys.epoch());
      if (kv) return this.accept(kv);
      const created: EpochValue = { epoch: FIRST_EPOCH, clusterId: String(header.cluster_id) };
      const res = await this.#etcd.txn([cmp.absent(this.#keys.epoch())], [op.put(this.#keys.epoch(), created)]);
      if (res.succeeded) {
        this.#record = created;
        this.#modRevision = String(res.header.revision);
        this.#notify();
        return;
      }
    }
  }

  /** Takes a freshly read /sys/epoch kv as the current record. */
  accept(kv: Kv): void {
    const value = decodeValue(EpochValueSchema, kv.value);
    if (!value) throw new LockauditError('LOCKAUDIT_ERR_INTERNAL', `${this.#keys.epoch()} holds a value that is not an epoch record`);
    this.#record = value;
    this.#modRevision = kv.modRevision;
    this.#notify();
  }

  /** Throws the 503 a sealed cluster answers with. */
  assertUnsealed(): void {
    if (!this.sealed) return;
    throw new LockauditError(
      'LOCKAUDIT_ERR_LOCK_SEALED',
      `grants are refused: etcd reports cluster id ${this.#clusterId} but /sys/epoch is bound to ${this.#record?.clusterId} (epoch ${this.#record?.epoch}), so this data was restored into another cluster; two lock-operators must run POST /v1/epoch/advance`,
    );
  }
}
