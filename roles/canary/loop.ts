// The canary's first stage: every interval the api role acquires a canary lock
// through its own lock engine — the same epoch, class, session, etcd txns and
// proofs a caller's acquire goes through — and releases it at once. Its grants
// live in CANARY_NAMESPACE (refused to every other caller), one key per host,
// so the stages after it (stages.ts) can find them in the store. A cycle that
// fails is counted and logged; the lock stage's age then grows until its alarm.
import { hostname } from 'node:os';
import { CANARY_CLASS, CANARY_HOLDER, CANARY_NAMESPACE, type LockClass } from '../../core/keyspace.js';
import { LockauditError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { LockService } from '../../lock/service.js';

/** The canary's class: fenced (its holder writes nothing), never open on a quorum loss, out of the risk register. */
export const CANARY_LOCK_CLASS: LockClass = {
  name: CANARY_CLASS,
  namespace: CANARY_NAMESPACE,
  purpose: 'correctness',
  enforcement: 'fenced',
  pauseTest: 'not applicable: the platform canary holds a lock for no work',
  ttlSeconds: 15,
  tier: 'coord',
  onQuorumLoss: 'closed',
  fairness: 'memory',
};

/** Field by field (the stored class's key order is etcd's JSON's), its proof aside. */
function sameClass(a: LockClass, b: LockClass): boolean {
  const fields = new Set([...Object.keys(a), ...Object.keys(b)].filter((k) => k !== 'mac'));
  return [...fields].every((k) => (a as Record<string, unknown>)[k] === (b as Record<string, unknown>)[k]);
}

/** The canary key of this host: one per host keeps the key set bounded across restarts, and apart across API replicas. */
export const canaryKey = (host = hostname()): string => `${CANARY_NAMESPACE}/${host.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+/, '') || 'host'}`;

export interface CanaryCycle {
  at: number;
  ok: boolean;
  error?: string;
}

/** A grant this loop made: the later stages follow exactly these, so another replica's, a placed row or one made before this process started is no progress of its. */
export interface CanaryGrant {
  key: string;
  /** The granting txn's revision (decimal). */
  revision: string;
  at: number;
}

export interface CanaryLoopOptions {
  lock: Pick<LockService, 'acquire' | 'release' | 'createSession' | 'keepAlive' | 'closeSession' | 'getClass' | 'putClass'>;
  intervalMs: number;
  logger: Logger;
  key?: string;
  onCycle?: (c: CanaryCycle) => void;
  /** How many of its latest grants it remembers for the stages to follow. Default 2 000. */
  keep?: number;
}

export class CanaryLoop {
  readonly key: string;
  #session: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #closed = false;
  /** The failure being repeated, said once when it starts (and once when the canary passes again). */
  #failing: string | undefined;
  readonly #grants: CanaryGrant[] = [];

  constructor(private readonly o: CanaryLoopOptions) {
    this.key = o.key ?? canaryKey();
  }

  start(): void {
    const tick = (): void => {
      if (this.#closed) return;
      this.#running = this.cycle().finally(() => {
        if (!this.#closed) this.#timer = setTimeout(tick, this.o.intervalMs);
      });
    };
    tick();
  }

  /** One acquire and release; never throws (the outcome goes to onCycle). */
  async cycle(): Promise<CanaryCycle> {
    const at = Date.now();
    let outcome: CanaryCycle;
    try {
      const ttlSeconds = await this.#ensureClass();
      // The session lives the class's TTL unless kept alive: kept at each cycle, made again once lapsed (an interval
      // longer than the TTL lets it lapse between cycles).
      if (this.#session !== undefined) await this.o.lock.keepAlive(CANARY_HOLDER, this.#session).catch(() => (this.#session = undefined));
      this.#session ??= (await this.o.lock.createSession(CANARY_HOLDER, ttlSeconds)).id;
      const grant = await this.o.lock.acquire({
        identity: CANARY_HOLDER,
        key: this.key,
        session: this.#session,
        className: CANARY_CLASS,
        waitMs: Math.min(this.o.intervalMs, 5_000),
        canary: true,
      });
      await this.o.lock.release({ identity: CANARY_HOLDER, key: this.key, session: this.#session, token: grant.token });
      this.#grants.push({ key: this.key, revision: grant.revision, at });
      if (this.#grants.length > (this.o.keep ?? 2_000)) this.#grants.shift();
      outcome = { at, ok: true };
      if (this.#failing !== undefined) this.o.logger.info({ key: this.key }, 'canary cycles pass again');
      this.#failing = undefined;
    } catch (err) {
      // A lost or expired session is made again next time.
      this.#session = undefined;
      outcome = { at, ok: false, error: err instanceof LockauditError ? `${err.code}: ${err.message}` : (err as Error).message };
      if (this.#failing !== outcome.error)
        this.o.logger.warn({ key: this.key, err: outcome.error }, 'canary cycles fail (said again only when the error changes)');
      this.#failing = outcome.error;
    }
    this.o.onCycle?.(outcome);
    return outcome;
  }

  /** The canary's grants still remembered, oldest first. */
  grants(): readonly CanaryGrant[] {
    return this.#grants;
  }

  /** The class as the canary needs it, put (again) when missing or not what it should be; its TTL. */
  async #ensureClass(): Promise<number> {
    let current;
    try {
      current = (await this.o.lock.getClass(CANARY_CLASS)).value;
    } catch (err) {
      // Missing, or written around the API (unproven): the canary puts its own (the name is reserved to it).
      if (!(err instanceof LockauditError) || !['LOCKAUDIT_ERR_CLASS_NOT_FOUND', 'LOCKAUDIT_ERR_CLASS_UNPROVEN'].includes(err.code)) throw err;
    }
    if (current && sameClass(current, CANARY_LOCK_CLASS)) return current.ttlSeconds;
    return (await this.o.lock.putClass(CANARY_LOCK_CLASS, { canary: true })).value.ttlSeconds;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#running;
    // Its lease ends now rather than at its TTL.
    if (this.#session !== undefined) await this.o.lock.closeSession(CANARY_HOLDER, this.#session).catch(() => undefined);
  }
}
