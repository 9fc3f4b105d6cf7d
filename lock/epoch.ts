// /sys/epoch and the restore seal (docs/architecture.md, the lock service's rules). The record is created on
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
// A process's own mark knows only what it saw; a new replica or a fresh
// container knows nothing. So the mark is also seeded from a shared source
// (sharedHighWater.ts: the audit store's highest captured API grant) at start,
// periodically, and after etcd was unreachable (a restore needs it down):
// never per acquire. Until that source was read once, and again after etcd
// came back, grants are refused (LOCKAUDIT_ERR_LOCK_HIGHWATER_UNKNOWN).
// /sys/epoch carries the API's proof (core/proof.ts) bound to the value it
// replaced: a value without it — put by hand, or written before proofs
// existed — seals grants until a two-person advance writes a proven one, and
// moves nothing (no token of its epoch, no high-water rebase, no unseal).
// Whether grants are sealed is one predicate (sealReason), judged on the
// same evidence by a grant txn and by probe(), which GET /v1/epoch runs: so
// /v1/epoch says sealed exactly when acquire refuses.
import type { IResponseHeader } from 'etcd3';
import { decodeValue, EpochValueSchema, type EpochValue } from '../core/keyspace.js';
import { epochMac, hasValidEpochProof } from '../core/proof.js';
import { LockauditError } from '../core/errors.js';
import { splitToken } from '../core/token.js';
import type { LockKeys, Kv } from './kv.js';
import { cmp, op, toKv } from './kv.js';
import type { LockEtcd } from './lockEtcd.js';
import { RevisionHighWater } from './revisionHighWater.js';
import type { GrantHighWaterSource } from './sharedHighWater.js';

export const FIRST_EPOCH = 1;

/** The shared high-water as read: the highest captured API grant's epoch and revision. */
export interface CapturedGrant {
  epoch: number;
  revision: bigint;
}

/** The shared high-water of one cluster: the source, and the name it knows the cluster by. */
export interface SharedHighWater {
  source: GrantHighWaterSource;
  cluster: string;
}

export class EpochState {
  readonly #etcd: LockEtcd;
  readonly #keys: LockKeys;
  readonly #secret: Buffer;
  #record: EpochValue | undefined;
  /** The last proven record taken: the epoch of every token this API has issued and still honours. */
  #proven: EpochValue | undefined;
  /** Set while the record in force carries no valid proof: why grants are sealed. */
  #unproven: string | undefined;
  /** /sys/epoch holds no epoch record at all (`record` is the last one that was). */
  #undecodable = false;
  /** The highest epoch of a proven record taken (0: none yet). */
  #provenEpoch = 0;
  #modRevision = '0';
  #clusterId: string | undefined;
  #loading: Promise<void> | undefined;
  readonly #onSeal: (sealed: boolean) => void;
  #wasSealed = false;
  readonly #highWater: RevisionHighWater | undefined;
  /** Set when etcd was seen rewound; cleared only by an advance past every epoch seen. */
  #rewind: string | undefined;
  readonly #shared: SharedHighWater | undefined;
  /** The shared high-water was read since start and since etcd was last unreachable. */
  #sharedFresh = false;
  /** Counts sharedStale() calls: a read that started before the latest one does not make the mark fresh. */
  #staleCount = 0;
  #sharing: Promise<CapturedGrant | undefined> | undefined;
  /** Counts records taken (accept): a read sent before another record was taken is stale and judges nothing. */
  #generation = 0;

  /**
   * `highWater` absent: only the cluster-id check (tests of the engine without a data dir).
   * `shared` absent: only this process's own mark (a keyspace the audit store does not capture).
   */
  constructor(
    etcd: LockEtcd,
    keys: LockKeys,
    originSecret: Buffer,
    onSeal: (sealed: boolean) => void = () => {},
    highWater?: RevisionHighWater,
    shared?: SharedHighWater,
  ) {
    this.#etcd = etcd;
    this.#keys = keys;
    this.#secret = originSecret;
    this.#onSeal = onSeal;
    this.#highWater = highWater;
    this.#shared = highWater ? shared : undefined;
    etcd.onHeader((h) => this.observe(h));
  }

  /** The cluster id of the latest response. */
  get clusterId(): string | undefined {
    return this.#clusterId;
  }

  /**
   * The last record with the API's proof. Tokens are issued and honoured under it only: a /sys/epoch put by hand
   * (record, unproven) seals grants and moves no token — a holder of this epoch can still release.
   */
  get provenRecord(): EpochValue | undefined {
    return this.#proven;
  }

  get record(): EpochValue | undefined {
    return this.#record;
  }

  get modRevision(): string {
    return this.#modRevision;
  }

  /** Take it before sending a read of /sys/epoch and give it to accept(): see accept. */
  get generation(): number {
    return this.#generation;
  }

  /**
   * Why grants are refused as sealed, or undefined when they are not: the one predicate behind acquire's
   * LOCKAUDIT_ERR_LOCK_SEALED and GET /v1/epoch's `sealed`.
   */
  sealReason(): string | undefined {
    if (this.#unproven !== undefined) return this.#unproven;
    if (this.#rewind !== undefined) {
      return `etcd was restored from a snapshot or otherwise rewound (${this.#rewind}); tokens would go backwards, so two lock-operators must run POST /v1/epoch/advance`;
    }
    if (this.#record !== undefined && this.#clusterId !== undefined && this.#record.clusterId !== this.#clusterId) {
      return `etcd reports cluster id ${this.#clusterId} but /sys/epoch is bound to ${this.#record.clusterId} (epoch ${this.#record.epoch}), so this data was restored into another cluster; two lock-operators must run POST /v1/epoch/advance`;
    }
    return undefined;
  }

  get sealed(): boolean {
    return this.sealReason() !== undefined;
  }

  /** The record in force carries no valid proof (put by hand, or written before proofs existed). */
  get unproven(): boolean {
    return this.#unproven !== undefined;
  }

  /** /sys/epoch holds a value that is no epoch record at all (only an advance gets past it). */
  get undecodable(): boolean {
    return this.#undecodable;
  }

  /** etcd was seen rewound (a latched seal only an advance clears). */
  get rewound(): boolean {
    return this.#rewind !== undefined;
  }

  /** The epoch an advance must go beyond: the highest proven record's, or a higher one seen before a rewind (never an unproven one's). */
  get highestEpoch(): number {
    return Math.max(this.#provenEpoch, this.#highWater?.mark.epoch ?? 0);
  }

  observe(header: IResponseHeader): void {
    this.#clusterId = String(header.cluster_id);
    // An unproven record's epoch is nobody's: it never enters the mark; the highest proven one keeps watching for a rewind.
    const epoch = this.#unproven === undefined ? this.#record?.epoch : this.#provenEpoch || undefined;
    if (epoch !== undefined && this.#rewind === undefined) this.#highWater?.see(BigInt(header.revision), epoch);
    this.#notify();
  }

  /** A grant txn requires the grant guard key's mod revision at or above this (0: no requirement yet). */
  grantGuard(): bigint {
    return this.#highWater?.mark.guard ?? 0n;
  }

  /**
   * The grant guard key as etcd holds it (its mod revision; undefined: absent), judged against `guard`, the
   * guard a grant txn requires: below it, etcd was rewound (a grant txn requiring it fails, nothing is written).
   */
  judgeGuard(found: string | undefined, guard: bigint): void {
    if (guard > 0n && (found === undefined || BigInt(found) < guard)) {
      this.#latchRewind(`the grant guard key is at revision ${found ?? 'none (absent)'}, below revision ${guard} of a grant already made`);
    }
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
    if (this.#judgeWrite(await this.#freshFloor(floor), revision, 'committed a write')) return;
    this.#highWater.granted(revision);
    await this.#highWater.persist();
  }

  /** A write at `revision` (or etcd's next one), not above `floor` read before it, in the mark's epoch: a rewind. True when so. */
  #judgeWrite(floor: bigint, revision: bigint, what: string): boolean {
    if (!this.#highWater || !this.#record) return false;
    if (revision <= floor && this.#record.epoch <= this.#highWater.mark.epoch) {
      this.#latchRewind(`etcd ${what} at revision ${revision}, not above revision ${floor} already reported or granted at`);
      return true;
    }
    return false;
  }

  /**
   * Reads /sys/epoch and the grant guard key in one linearizable txn and judges them as a grant txn would be
   * judged (the guard it would require, the revision it would land at): what GET /v1/epoch reports, and what a
   * sealed acquire re-checks before refusing (an advance made through another process unseals).
   */
  async probe(): Promise<void> {
    await this.ready();
    const before = this.#record?.epoch;
    const floor = this.writeFloor();
    const guard = this.grantGuard();
    const generation = this.#generation;
    const res = await this.#etcd.txn([], [op.get(this.#keys.epoch()), op.get(this.#keys.grantGuard())]);
    // An advance (or another read) took a record while this read was out: what it read is older, and would
    // read as /sys/epoch rolled back below the epoch just advanced to — a seal latched by our own advance.
    if (generation !== this.#generation) return;
    const [epochKv, guardKv] = [0, 1].map((i) => {
      const kv = res.responses[i]?.response_range.kvs[0];
      return kv ? toKv(kv) : undefined;
    });
    if (!epochKv) return this.reload(); // deleted by hand: recreated bound to this cluster, as at first start
    if (epochKv.modRevision !== this.#modRevision) this.accept(epochKv, generation);
    // A new epoch restarts the mark at its advance: the guard and floor read before belong to the old one.
    if (this.#record?.epoch !== before) return;
    const fresh = await this.#freshFloor(floor);
    const judged = this.grantGuard() > guard ? this.grantGuard() : guard; // a seed read just now may raise it
    this.judgeGuard(guardKv?.modRevision, judged);
    this.#judgeWrite(fresh, BigInt(res.header.revision) + 1n, 'would commit the next write');
  }

  /**
   * `floor` (read before a write or a read), raised to the shared high-water when that went stale meanwhile —
   * the response itself may show etcd restarted — so a write is judged against what others granted too.
   */
  async #freshFloor(floor: bigint): Promise<bigint> {
    if (!this.#shared || this.#sharedFresh) return floor;
    const captured = await this.refreshShared();
    return captured && captured.epoch === this.#record?.epoch && captured.revision > floor ? captured.revision : floor;
  }

  /** Reads the shared high-water now (coalesced) and raises the mark to it; throws when it cannot be read. */
  refreshShared(): Promise<CapturedGrant | undefined> {
    const shared = this.#shared;
    if (!shared) return Promise.resolve(undefined);
    this.#sharing ??= (async () => {
      const staleCount = this.#staleCount;
      try {
        const token = await shared.source.highestGrantToken(shared.cluster);
        if (staleCount === this.#staleCount) this.#sharedFresh = true;
        return this.#applyShared(token);
      } catch (err) {
        throw new LockauditError(
          'LOCKAUDIT_ERR_LOCK_HIGHWATER_UNKNOWN',
          `grants are refused: the highest token already issued on cluster ${shared.cluster} could not be read from the audit store (${(err as Error).message}); a token could go backwards`,
          { cause: err },
        );
      } finally {
        this.#sharing = undefined;
      }
    })();
    return this.#sharing;
  }

  /** etcd was unreachable (it may have been restored meanwhile): the next grant waits for a fresh read of the shared high-water. */
  sharedStale(): void {
    if (!this.#shared) return;
    this.#sharedFresh = false;
    this.#staleCount++;
  }

  #applyShared(token: bigint): CapturedGrant | undefined {
    const hw = this.#highWater;
    if (!hw || token === 0n) return undefined;
    const split = splitToken(token);
    const captured = { epoch: Number(split.epoch), revision: split.revision };
    hw.raise(captured.revision, captured.epoch);
    const record = this.#record;
    if (record && record.epoch < hw.mark.epoch) {
      this.#latchRewind(`/sys/epoch says epoch ${record.epoch} but token ${token} of epoch ${captured.epoch} was already issued`);
    }
    this.#notify();
    return captured;
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

  /** Loads the record once (creating it on first start) and the shared high-water when not fresh; later calls reuse both. */
  async ready(): Promise<void> {
    if (!this.#record) {
      this.#loading ??= this.reload().finally(() => {
        this.#loading = undefined;
      });
      await this.#loading;
    }
    // Twice at most: a read in flight when etcd went away again does not count; a grant's own check reads again if need be.
    for (let i = 0; i < 2 && this.#shared && !this.#sharedFresh; i++) await this.refreshShared();
  }

  /** Reads /sys/epoch, creating it bound to this cluster when absent. */
  async reload(): Promise<void> {
    for (;;) {
      const generation = this.#generation;
      const { kv, header } = await this.#etcd.get(this.#keys.epoch());
      if (kv) return void this.accept(kv, generation);
      const unsigned = { epoch: FIRST_EPOCH, clusterId: String(header.cluster_id), from: '0' };
      const created: EpochValue = { ...unsigned, mac: epochMac(this.#secret, unsigned) };
      const res = await this.#etcd.txn([cmp.absent(this.#keys.epoch())], [op.put(this.#keys.epoch(), created)]);
      if (res.succeeded) {
        this.#record = created;
        this.#proven = created;
        this.#modRevision = String(res.header.revision);
        this.#generation++;
        this.#unproven = undefined;
        this.#provenEpoch = Math.max(this.#provenEpoch, created.epoch);
        this.#checkEpoch(created.epoch, this.#modRevision);
        this.#notify();
        return;
      }
    }
  }

  /**
   * Takes a freshly read /sys/epoch kv as the current record. `generation`: the generation taken before the read
   * was sent; when another record was taken since (an advance by this process while the read was out), the read
   * is older than the record and is ignored — judged, it would latch a seal right after a good advance (the
   * 30-minute chaos run: every grant refused for minutes after a restore's approved advance). False: ignored.
   */
  accept(kv: Kv, generation?: number): boolean {
    if (generation !== undefined && generation !== this.#generation) return false;
    const value = decodeValue(EpochValueSchema, kv.value);
    this.#modRevision = kv.modRevision;
    this.#generation++;
    if (!value) {
      // Sealed with its reason, never a 500: the advance that gets past it must stay possible.
      this.#undecodable = true;
      this.#unproven =
        `${this.#keys.epoch()} (written at revision ${kv.modRevision}) is not an epoch record: it was written around the API; ` +
        'nothing is granted until two lock-operators advance past it (POST /v1/epoch/advance)';
      this.#notify();
      return true;
    }
    this.#undecodable = false;
    this.#record = value;
    if (hasValidEpochProof(this.#secret, value)) {
      this.#proven = value;
      this.#unproven = undefined;
      this.#provenEpoch = Math.max(this.#provenEpoch, value.epoch);
      this.#checkEpoch(value.epoch, kv.modRevision);
    } else {
      this.#unproven =
        `${this.#keys.epoch()} (epoch ${value.epoch}, written at revision ${kv.modRevision}) does not carry the lock API's proof: it was put by hand, or written before proofs existed; ` +
        'nothing of it is used: two lock-operators check it and adopt it as it is (POST /v1/epoch/advance with adopt: true — deletes no hold), or advance past it (POST /v1/epoch/advance)';
    }
    this.#notify();
    return true;
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

  /** Throws the 503 a sealed cluster answers with (sealReason). */
  assertUnsealed(): void {
    const why = this.sealReason();
    if (why !== undefined) throw new LockauditError('LOCKAUDIT_ERR_LOCK_SEALED', `grants are refused: ${why}`);
  }
}
