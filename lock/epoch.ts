// /sys/epoch and the restore seal (DESIGN.md §2). The record is created on
// first start, bound to the cluster id etcd reports. Every response header
// is compared with it: a different cluster id means the data was restored
// into another cluster, and grants stop until a two-person epoch advance
// bumps the epoch, binds the new id and deletes every restored hold.
// A restore that keeps the cluster id is caught by the revision high-water
// mark (revisionHighWater.ts): a write committed at or below a revision seen
// before it was sent, or an /sys/epoch older than one seen, means etcd was
// rewound; that seal latches until an advance to an epoch above every epoch
// seen. Every grant txn also puts the grant guard key and requires it at or
// above this process's latest grant, so a rewound etcd fails the grant txn
// itself: nothing is written before the seal (a bumped restore too).
import type { IResponseHeader } from 'etcd3';
import { decodeValue, EpochValueSchema, type EpochValue } from '../core/keyspace.js';
import { LockauditError } from '../core/errors.js';
import type { LockKeys, Kv } from './kv.js';
import { cmp, op } from './kv.js';
import type { LockEtcd } from './lockEtcd.js';
import { RevisionHighWater } from './revisionHighWater.js';

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
  readonly #highWater: RevisionHighWater | undefined;
  /** Set when etcd was seen rewound; cleared only by an advance past every epoch seen. */
  #rewind: string | undefined;

  /** `highWater` absent: only the cluster-id check (tests of the engine without a data dir). */
  constructor(etcd: LockEtcd, keys: LockKeys, onSeal: (sealed: boolean) => void = () => {}, highWater?: RevisionHighWater) {
    this.#etcd = etcd;
    this.#keys = keys;
    this.#onSeal = onSeal;
    this.#highWater = highWater;
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
    return this.#rewind !== undefined || (this.#record !== undefined && this.#clusterId !== undefined && this.#record.clusterId !== this.#clusterId);
  }

  /** The epoch an advance must go beyond: the record's, or a higher one seen before a rewind. */
  get highestEpoch(): number {
    return Math.max(this.#record?.epoch ?? 0, this.#highWater?.mark.epoch ?? 0);
  }

  observe(header: IResponseHeader): void {
    this.#clusterId = String(header.cluster_id);
    if (this.#record && this.#rewind === undefined) this.#highWater?.see(BigInt(header.revision), this.#record.epoch);
    this.#notify();
  }

  /** A grant txn requires the grant guard key's mod revision at or above this (0: no requirement yet). */
  grantGuard(): bigint {
    return this.#highWater?.mark.guard ?? 0n;
  }

  /** The grant guard key was found below this process's latest grant: etcd was rewound, nothing was granted. */
  guardBroken(found: string | undefined, guard: bigint): void {
    this.#latchRewind(`the grant guard key is at revision ${found ?? 'none (absent)'}, below revision ${guard} of a grant already made`);
  }

  /** Read before sending a write: its revision must come out above this. */
  writeFloor(): bigint {
    return this.#highWater?.mark.revision ?? 0n;
  }

  /**
   * After a write succeeded at `revision`: a revision not above the floor read
   * before sending it means etcd's history was rewound (seal); otherwise the
   * mark is made durable before the caller hands out a token at that revision.
   */
  async confirmWrite(floor: bigint, revision: bigint): Promise<void> {
    if (!this.#highWater || !this.#record) return;
    if (revision <= floor && this.#record.epoch <= this.#highWater.mark.epoch) {
      this.#latchRewind(`etcd committed a write at revision ${revision}, not above revision ${floor} it had already reported`);
      return;
    }
    this.#highWater.granted(revision);
    await this.#highWater.persist();
  }

  #latchRewind(why: string): void {
    this.#rewind ??= why;
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
        this.#checkEpoch(created.epoch, this.#modRevision);
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
    this.#checkEpoch(value.epoch, kv.modRevision);
    this.#notify();
  }

  /** An epoch below one seen: /sys/epoch itself was rolled back. Above: an advance, the mark restarts there. */
  #checkEpoch(epoch: number, modRevision: string): void {
    const hw = this.#highWater;
    if (!hw) return;
    const seen = hw.mark.epoch;
    if (epoch < seen) {
      this.#latchRewind(`/sys/epoch says epoch ${epoch} but epoch ${seen} was already seen`);
    } else if (epoch > seen) {
      hw.rebase(BigInt(modRevision), epoch);
      this.#rewind = undefined;
      hw.persist().catch(() => undefined); // confirmWrite waits for it before any token of this epoch
    }
  }

  /** Makes the high-water mark durable (after an advance, before answering). */
  persistMark(): Promise<void> {
    return this.#highWater?.persist() ?? Promise.resolve();
  }

  /** Throws the 503 a sealed cluster answers with. */
  assertUnsealed(): void {
    if (!this.sealed) return;
    if (this.#rewind !== undefined) {
      throw new LockauditError(
        'LOCKAUDIT_ERR_LOCK_SEALED',
        `grants are refused: etcd was restored from a snapshot or otherwise rewound (${this.#rewind}); tokens would go backwards, so two lock-operators must run POST /v1/epoch/advance`,
      );
    }
    throw new LockauditError(
      'LOCKAUDIT_ERR_LOCK_SEALED',
      `grants are refused: etcd reports cluster id ${this.#clusterId} but /sys/epoch is bound to ${this.#record?.clusterId} (epoch ${this.#record?.epoch}), so this data was restored into another cluster; two lock-operators must run POST /v1/epoch/advance`,
    );
  }
}
