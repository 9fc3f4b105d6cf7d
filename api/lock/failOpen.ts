// Grants without quorum for classes with onQuorumLoss: open (DESIGN.md §2):
// from this process's memory, token 0, each one spooled (fsync) before it is
// answered. Memory keeps these unprotected holds mutually exclusive within
// this API only; they lapse after the class TTL unless released.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockauditError } from '../../core/errors.js';
import type { LockClass } from '../../core/keyspace.js';
import type { SpoolRecord } from '../../core/spool.js';
import type { SpoolWriter } from './spool.js';

interface MemoryHold {
  holder: string;
  session: string;
  class: string;
  at: number;
  expiresAt: number;
}

export interface UnprotectedGrant {
  key: string;
  waitMs: number;
  at: number;
}

export class FailOpenGrants {
  readonly #spool: SpoolWriter;
  readonly #cluster: string;
  readonly #holds = new Map<string, MemoryHold>();

  constructor(spool: SpoolWriter, cluster: string) {
    this.#spool = spool;
    this.#cluster = cluster;
  }

  #current(key: string): MemoryHold | undefined {
    const hold = this.#holds.get(key);
    if (hold && hold.expiresAt <= Date.now()) {
      this.#holds.delete(key);
      return undefined;
    }
    return hold;
  }

  async grant(req: { key: string; namespace: string; holder: string; session: string; lockClass: LockClass; waitMs: number; epoch: number }): Promise<UnprotectedGrant> {
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
    // Claimed before the fsync so a second caller cannot slip in meanwhile.
    this.#holds.set(req.key, { holder: req.holder, session: req.session, class: req.lockClass.name, at, expiresAt: at + req.lockClass.ttlSeconds * 1000 });
    const record: SpoolRecord = {
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
    try {
      await this.#spool.append(record);
    } catch (err) {
      this.#holds.delete(req.key);
      throw new LockauditError('LOCKAUDIT_ERR_SPOOL_WRITE', `${req.key}: the unprotected grant could not be spooled, so it is not granted (${(err as Error).message})`, { cause: err });
    }
    return { key: req.key, waitMs, at };
  }

  /** Releases an unprotected hold of this session; returns whether there was one. */
  release(key: string, session: string): MemoryHold | undefined {
    const hold = this.#current(key);
    if (!hold || hold.session !== session) return undefined;
    this.#holds.delete(key);
    return hold;
  }

  holding(key: string): MemoryHold | undefined {
    return this.#current(key);
  }

  close(): Promise<void> {
    return this.#spool.close();
  }
}
