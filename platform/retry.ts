// The one retry policy: bounded, jittered exponential backoff, and a
// `classify` hook that says whether an error is worth another attempt
// (network, timeouts, an overloaded server) or permanent (bad data, access
// denied), which is thrown at once. `backoffDelay`/`Backoff` give the delay
// alone for loops that are not a single awaited call (a watch reopened from
// an event handler, an election campaign).
// Why not p-retry / exponential-backoff: p-retry's current major needs
// Node ≥ 22 (we run on 20) and, like exponential-backoff, only wraps a
// promise-returning call, so two of our four users would still compute delays
// by hand; exponential-backoff cannot cut its sleep short on an AbortSignal.

export interface BackoffPolicy {
  /** First delay. */
  initialMs: number;
  /** Delays double up to this. */
  maxMs: number;
  /** Spread around each delay, as a fraction: 0.5 → 50 %…150 %. Default 0.5. */
  jitter?: number;
}

/** The delay before attempt `attempt + 1` (attempt counts from 1). */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(Math.max(0, attempt - 1), 30));
  const jitter = policy.jitter ?? 0.5;
  return Math.round(base * (1 - jitter + 2 * jitter * random()));
}

/** Consecutive failures and the next delay; reset on success. */
export class Backoff {
  readonly #policy: BackoffPolicy;
  #attempts = 0;

  constructor(policy: BackoffPolicy) {
    this.#policy = policy;
  }

  /** Failures since the last reset. */
  get attempts(): number {
    return this.#attempts;
  }

  /** Counts a failure and returns how long to wait before the next attempt. */
  next(): number {
    this.#attempts += 1;
    return backoffDelay(this.#policy, this.#attempts);
  }

  reset(): void {
    this.#attempts = 0;
  }
}

export type Verdict = 'retry' | 'permanent';

export interface RetryOptions extends BackoffPolicy {
  /** Default: every error is retried. */
  classify?: (err: unknown) => Verdict;
  /** Attempts in all (undefined: no limit). */
  maxAttempts?: number;
  /** Give up when the next wait would end later than this many ms after the first attempt. */
  deadlineMs?: number;
  /** Stops waiting and attempting: the signal's reason is thrown. */
  signal?: AbortSignal;
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

function aborted(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

/** Calls `fn` until it succeeds, the error is permanent, attempts or time run out (the last error is thrown), or the signal aborts. */
export async function retry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt += 1) {
    if (options.signal?.aborted) throw aborted(options.signal);
    try {
      return await fn(attempt);
    } catch (err) {
      if (options.signal?.aborted) throw aborted(options.signal);
      if ((options.classify?.(err) ?? 'retry') === 'permanent') throw err;
      if (options.maxAttempts !== undefined && attempt >= options.maxAttempts) throw err;
      const delay = backoffDelay(options, attempt);
      if (options.deadlineMs !== undefined && Date.now() + delay - started > options.deadlineMs) throw err;
      options.onRetry?.(err, attempt, delay);
      await sleep(delay, options.signal);
    }
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
