// A per-caller token bucket for the report routes (@fastify/rate-limit is not
// a dependency): each identity may make LOCKAUDIT_RATE_LIMIT_PER_MINUTE
// requests a minute, refilled continuously. It runs after auth, so the bucket
// is the caller's identity (an unauthenticated call never reaches it). One
// limiter per app, shared by every route that uses it. In-process: behind a
// load balancer each API replica grants its own budget.
import type { FastifyReply, FastifyRequest, preValidationHookHandler } from 'fastify';
import { LRUCache } from 'lru-cache';
import { LockauditError } from '../core/errors.js';

interface Bucket {
  tokens: number;
  at: number;
}

/** Most buckets kept: beyond it the least recently used is forgotten (it then starts full again). */
export const MAX_BUCKETS = 50_000;

export class RateLimiter {
  readonly #perWindow: number;
  readonly #windowMs: number;
  // Bounded LRU: many identities cannot grow memory without limit, and an active caller is the last to go.
  readonly #buckets = new LRUCache<string, Bucket>({ max: MAX_BUCKETS });
  readonly #now: () => number;

  /** `perWindow` requests per `windowMs` (a minute unless given), refilled continuously. */
  constructor(perWindow: number, now: () => number = Date.now, windowMs = 60_000) {
    this.#perWindow = perWindow;
    this.#windowMs = windowMs;
    this.#now = now;
  }

  get size(): number {
    return this.#buckets.size;
  }

  /** Takes one request from `who`'s bucket; returns 0 when allowed, else the seconds until one is. */
  take(who: string): number {
    const now = this.#now();
    const ratePerMs = this.#perWindow / this.#windowMs;
    const b = this.#buckets.get(who) ?? { tokens: this.#perWindow, at: now };
    b.tokens = Math.min(this.#perWindow, b.tokens + (now - b.at) * ratePerMs);
    b.at = now;
    this.#buckets.set(who, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / ratePerMs / 1000));
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The report routes' rate-limit hook: one limiter per app, shared by every route that uses it. */
    reportRateLimit: preValidationHookHandler;
  }
}

/** A report rate-limit hook with a limiter of its own (buildApp decorates the app with one). */
export function reportRateLimitHook(perMinute: number): preValidationHookHandler {
  const limiter = new RateLimiter(perMinute);
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const who = request.identity?.identity ?? `ip:${request.ip}`;
    const retryAfter = limiter.take(who);
    if (retryAfter === 0) return;
    reply.header('retry-after', String(retryAfter));
    throw new LockauditError(
      'LOCKAUDIT_ERR_LIMIT_RATE',
      `more than LOCKAUDIT_RATE_LIMIT_PER_MINUTE (${perMinute}) report requests in a minute; retry in ${retryAfter} s`,
    );
  };
}
