// In-memory waiters per key (seeds: "Is the wait queue durable state?").
// FIFO tickets queue in arrival order and only the head attempts a grant;
// durable-class tickets (ordered by etcd under /q/) are all woken instead.
// A wake-up is only a hint: the woken waiter still runs a full grant txn.

import { LockauditError } from '../core/errors.js';

export type WaitMode = 'fifo' | 'broadcast';

interface Waker {
  wake: () => void;
}

export class Ticket {
  readonly #queue: KeyQueue;
  readonly mode: WaitMode;
  #waker: Waker | undefined;
  #hinted = false;
  #left = false;

  constructor(queue: KeyQueue, mode: WaitMode) {
    this.#queue = queue;
    this.mode = mode;
  }

  get isHead(): boolean {
    return this.mode === 'broadcast' || this.#queue.fifo[0] === this;
  }

  /** Resolves true when this ticket heads the queue, false when `deadline` (ms) passes or `signal` aborts first. */
  async turn(deadline: number, signal?: AbortSignal): Promise<boolean> {
    while (!this.isHead) {
      if (Date.now() >= deadline || signal?.aborted) return false;
      await this.#sleep(deadline - Date.now());
    }
    return true;
  }

  /** Waits for a hint (a release seen, or the waiter ahead leaving) or `ms`, whichever is first. */
  async hint(ms: number): Promise<void> {
    if (this.#hinted) {
      this.#hinted = false;
      return;
    }
    await this.#sleep(ms);
    this.#hinted = false;
  }

  /** Wakes this ticket; a hint that arrives while it is not sleeping is kept for its next wait. */
  wake(): void {
    if (this.#waker) this.#waker.wake();
    else this.#hinted = true;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#waker = undefined;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.#waker = { wake: done };
    });
  }

  leave(): void {
    if (this.#left) return;
    this.#left = true;
    this.#queue.remove(this);
  }
}

class KeyQueue {
  readonly fifo: Ticket[] = [];
  readonly broadcast = new Set<Ticket>();

  constructor(
    private readonly onEmpty: () => void,
    private readonly onLeave: () => void,
  ) {}

  add(ticket: Ticket): void {
    if (ticket.mode === 'fifo') this.fifo.push(ticket);
    else this.broadcast.add(ticket);
  }

  remove(ticket: Ticket): void {
    const wasHead = this.fifo[0] === ticket;
    const i = this.fifo.indexOf(ticket);
    if (i >= 0) this.fifo.splice(i, 1);
    if (i >= 0 || this.broadcast.delete(ticket)) this.onLeave();
    // The next in line attempts at once: the key may be free now.
    if (wasHead) this.fifo[0]?.wake();
    if (this.fifo.length === 0 && this.broadcast.size === 0) this.onEmpty();
  }

  get size(): number {
    return this.fifo.length + this.broadcast.size;
  }

  notify(): void {
    this.fifo[0]?.wake();
    for (const t of this.broadcast) t.wake();
  }
}

/** How many acquires may be in flight (waiting, or attempting) at once: per key, and in this process. */
export interface WaiterLimits {
  perKey: number;
  total: number;
}

export const DEFAULT_WAITER_LIMITS: WaiterLimits = { perKey: 256, total: 10_000 };

export class Waiters {
  readonly #queues = new Map<string, KeyQueue>();
  readonly #limits: WaiterLimits;
  #total = 0;

  constructor(limits: WaiterLimits = DEFAULT_WAITER_LIMITS) {
    this.#limits = limits;
  }

  /**
   * Joins the key's queue; the caller must `leave()` the ticket when done. Past a limit it throws
   * LOCKAUDIT_ERR_LIMIT_WAITERS (429): each acquire holds a request open up to its waitMs, and a watch.
   */
  enter(key: string, mode: WaitMode = 'fifo'): Ticket {
    let queue = this.#queues.get(key);
    if ((queue?.size ?? 0) >= this.#limits.perKey) {
      throw new LockauditError(
        'LOCKAUDIT_ERR_LIMIT_WAITERS',
        `${key}: ${this.#limits.perKey} acquires already wait for this lock (LOCKAUDIT_MAX_WAITERS_PER_KEY); retry later`,
      );
    }
    if (this.#total >= this.#limits.total) {
      throw new LockauditError('LOCKAUDIT_ERR_LIMIT_WAITERS', `${this.#total} acquires already wait in this API process (LOCKAUDIT_MAX_WAITERS); retry later`);
    }
    if (!queue) {
      const created: KeyQueue = new KeyQueue(
        () => {
          if (this.#queues.get(key) === created) this.#queues.delete(key);
        },
        () => (this.#total -= 1),
      );
      queue = created;
      this.#queues.set(key, queue);
    }
    this.#total += 1;
    const ticket = new Ticket(queue, mode);
    queue.add(ticket);
    return ticket;
  }

  /** A hint that the key may be free: wakes the head (and every durable waiter). */
  notify(key: string): void {
    this.#queues.get(key)?.notify();
  }

  /** Acquires in flight in this process. */
  get total(): number {
    return this.#total;
  }

  waiting(key: string): number {
    return this.#queues.get(key)?.size ?? 0;
  }

  keys(): string[] {
    return [...this.#queues.keys()];
  }
}
