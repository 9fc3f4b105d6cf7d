// Grants without quorum for classes with onQuorumLoss: open (docs/architecture.md, the lock service's rules):
// from this process's memory, token 0, each one spooled (fsync) before it is
// answered. Memory keeps these unprotected holds mutually exclusive within
// this API only; they lapse after the class TTL unless released.
//
// The end of each hold is spooled too (core/spool.ts, kind "end"), so the
// audit can close the unprotected grant instead of showing it held forever:
// - a release is spooled before it is answered; if it cannot be spooled the
//   release is refused (LOCKAUDIT_ERR_SPOOL_WRITE) and the hold stays, to be
//   released again or to lapse, so the audit never shows a hold ending
//   earlier than it did;
// - a lapse is spooled by a timer per hold (unref'd, cancelled by the
//   release) with at = grant at + TTL, even if nobody touches the key again;
//   a lapse that cannot be spooled is retried every LAPSE_RETRY_MS until it
//   is, or until close().
// Each hold gets at most one end record. If the process dies (or closes)
// while holds are live, their ends are never spooled and the audit shows
// those grants as still held: acceptable, since the reconciliation view then
// lists too many possible double holders, never too few.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockauditError } from '../core/errors.js';
import type { LockClass } from '../core/keyspace.js';
import type { Logger } from '../core/logger.js';
import type { SpoolEndHow, SpoolEndRecord, SpoolGrantRecord } from '../core/spool.js';
import type { SpoolWriter } from './spool.js';

/** How long a lapse whose end record could not be spooled waits before the next try, ms. */
export const LAPSE_RETRY_MS = 1_000;

export interface MemoryHold {
  /** The grant record as spooled: its id names this hold in its end record. */
  readonly grant: SpoolGrantRecord;
  readonly holder: string;
  readonly session: string;
  readonly class: string;
  readonly at: number;
  readonly expiresAt: number;
}

interface HoldState extends MemoryHold {
  /** The grant record is on disk (only then may an end record follow it). */
  spooled: boolean;
  /** The end record is on disk; the hold is gone. */
  ended: boolean;
  /** The end record being appended, while it is. */
  ending: Promise<void> | undefined;
  /** Fires the lapse at expiresAt (or the next retry of a failed one). */
  timer: NodeJS.Timeout | undefined;
}

export interface UnprotectedGrant {
  key: string;
  waitMs: number;
  at: number;
}

export class FailOpenGrants {
  readonly #spool: SpoolWriter;
  readonly #cluster: string;
  readonly #log: Logger | undefined;
  readonly #holds = new Map<string, HoldState>();
  /** Holds past their TTL whose expiry record is not on disk yet (possibly no longer in #holds). */
  readonly #lapsing = new Set<HoldState>();
  #closed: Promise<void> | undefined;

  constructor(spool: SpoolWriter, cluster: string, log?: Logger) {
    this.#spool = spool;
    this.#cluster = cluster;
    this.#log = log;
  }

  #current(key: string): HoldState | undefined {
    const hold = this.#holds.get(key);
    if (hold && hold.expiresAt <= Date.now()) {
      // Normally the timer got there first; timers can run late.
      this.#lapse(hold);
      return undefined;
    }
    return hold;
  }

  async grant(req: {
    key: string;
    namespace: string;
    holder: string;
    session: string;
    lockClass: LockClass;
    waitMs: number;
    epoch: number;
  }): Promise<UnprotectedGrant> {
    const started = Date.now();
    const deadline = started + req.waitMs;
    for (;;) {
      const hold = this.#current(req.key);
      if (!hold) break;
      if (hold.session === req.session) {
        throw new LockauditError('LOCKAUDIT_ERR_LOCK_ALREADY_HELD', `${req.key}: this session already holds it (unprotected grant)`);
      }
      if (Date.now() >= deadline) {
        throw new LockauditError('LOCKAUDIT_ERR_LOCK_NOT_GRANTED', `${req.key}: held by another unprotected grant; not free within waitMs ${req.waitMs}`);
      }
      await sleep(Math.min(50, Math.max(1, deadline - Date.now())));
    }
    const at = Date.now();
    const waitMs = at - started;
    const record: SpoolGrantRecord = {
      v: 1,
      kind: 'grant',
      id: randomUUID(),
      cluster: this.#cluster,
      key: req.key,
      namespace: req.namespace,
      class: req.lockClass.name,
      holder: req.holder,
      session: req.session,
      token: '0',
      waitMs,
      at,
      epoch: req.epoch,
    };
    const hold: HoldState = {
      grant: record,
      holder: req.holder,
      session: req.session,
      class: req.lockClass.name,
      at,
      expiresAt: at + req.lockClass.ttlSeconds * 1000,
      spooled: false,
      ended: false,
      ending: undefined,
      timer: undefined,
    };
    // Claimed before the fsync so a second caller cannot slip in meanwhile.
    this.#holds.set(req.key, hold);
    try {
      await this.#spool.append(record);
    } catch (err) {
      if (this.#holds.get(req.key) === hold) this.#holds.delete(req.key);
      throw new LockauditError(
        'LOCKAUDIT_ERR_SPOOL_WRITE',
        `${req.key}: the unprotected grant could not be spooled, so it is not granted (${(err as Error).message})`,
        { cause: err },
      );
    }
    hold.spooled = true;
    this.#arm(hold, hold.expiresAt - Date.now());
    return { key: req.key, waitMs, at };
  }

  /**
   * Releases an unprotected hold of this session once its end record is on
   * disk; returns the hold, or undefined when this session does not hold the
   * key (or its release is already under way). Throws
   * LOCKAUDIT_ERR_SPOOL_WRITE, the hold kept, when the end cannot be spooled.
   */
  async release(key: string, session: string): Promise<MemoryHold | undefined> {
    const hold = this.#current(key);
    if (!hold || hold.session !== session || !hold.spooled || hold.ending) return undefined;
    try {
      await this.#end(hold, 'release', Date.now());
    } catch (err) {
      // Still held; if its TTL ran out meanwhile, the lapse takes over.
      if (hold.expiresAt <= Date.now()) this.#lapse(hold);
      throw new LockauditError(
        'LOCKAUDIT_ERR_SPOOL_WRITE',
        `${key}: the release of the unprotected grant could not be spooled, so it is still held until released again or its TTL runs out (${(err as Error).message})`,
        { cause: err },
      );
    }
    return hold;
  }

  holding(key: string): MemoryHold | undefined {
    return this.#current(key);
  }

  /**
   * Idempotent. Cancels the lapse timers, gives lapses already due one last
   * try, then flushes and closes the spool. Live holds are left open in the
   * audit (see the header).
   */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      const now = Date.now();
      const due = new Set<HoldState>();
      for (const hold of [...this.#holds.values(), ...this.#lapsing]) {
        clearTimeout(hold.timer);
        hold.timer = undefined;
        if (hold.spooled && !hold.ended && hold.expiresAt <= now) due.add(hold);
      }
      const results = await Promise.allSettled([...due].map((hold) => hold.ending ?? this.#end(hold, 'expiry', hold.expiresAt)));
      const failed = results.filter((r) => r.status === 'rejected').length;
      if (failed > 0)
        this.#log?.error({ holds: failed }, 'unprotected holds lapsed but their end could not be spooled before close; the audit shows them as still held');
      await this.#spool.close();
    })();
    return this.#closed;
  }

  #arm(hold: HoldState, delayMs: number): void {
    if (this.#closed || hold.ended) return;
    clearTimeout(hold.timer);
    hold.timer = setTimeout(
      () => {
        hold.timer = undefined;
        this.#lapse(hold);
      },
      Math.max(0, delayMs),
    );
    hold.timer.unref();
  }

  /** Spools the expiry of a hold past its TTL (at = expiresAt), retrying until it is on disk. */
  #lapse(hold: HoldState): void {
    if (!hold.spooled || hold.ended || hold.ending || this.#closed) return;
    this.#lapsing.add(hold);
    this.#end(hold, 'expiry', hold.expiresAt).catch((err: Error) => {
      this.#log?.error(
        { key: hold.grant.key, grantId: hold.grant.id, err: err.message },
        `the lapse of an unprotected hold could not be spooled; retrying in ${LAPSE_RETRY_MS} ms`,
      );
      this.#arm(hold, LAPSE_RETRY_MS);
    });
  }

  /** Appends the one end record of a hold; once it is on disk the hold is gone. Callers check `ending` and `ended` first. */
  async #end(hold: HoldState, how: SpoolEndHow, at: number): Promise<void> {
    const record: SpoolEndRecord = {
      v: 1,
      kind: 'end',
      id: randomUUID(),
      grantId: hold.grant.id,
      cluster: this.#cluster,
      key: hold.grant.key,
      how,
      at,
      grant: hold.grant,
    };
    const appended = this.#spool.append(record);
    hold.ending = appended;
    try {
      await appended;
    } finally {
      hold.ending = undefined;
    }
    hold.ended = true;
    clearTimeout(hold.timer);
    hold.timer = undefined;
    this.#lapsing.delete(hold);
    if (this.#holds.get(hold.grant.key) === hold) this.#holds.delete(hold.grant.key);
  }
}
