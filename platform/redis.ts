// The one place Redis clients are made. A profile says how a client behaves
// while Redis is away; every client reports its connection errors through
// the logger (never ioredis's "[ioredis] Unhandled error event").
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../core/logger.js';

export type RedisProfile = 'worker' | 'check' | 'request';

const profiles: Record<RedisProfile, RedisOptions> = {
  // Long-lived workers keep reconnecting (capped backoff) through an outage, so
  // jobs resume when Redis returns; BullMQ workers need maxRetriesPerRequest null.
  worker: { maxRetriesPerRequest: null, lazyConnect: true, connectTimeout: 3_000, retryStrategy: (times) => Math.min(200 * times, 5_000) },
  // A dependency check gives up after a few tries: it must answer, not wait.
  check: { maxRetriesPerRequest: null, lazyConnect: true, connectTimeout: 3_000, retryStrategy: (times) => (times > 3 ? null : 200) },
  // On a request's path a command fails fast while Redis is away; the caller answers 503.
  request: { maxRetriesPerRequest: 1, connectTimeout: 3_000, retryStrategy: (times) => Math.min(times * 200, 2_000) },
};

/** A Redis client of one profile; its errors are logged once per distinct message until it is ready again. */
export function createRedis(url: string, profile: RedisProfile, logger: Logger): Redis {
  const client = new Redis(url, profiles[profile]);
  let last: string | undefined;
  client.on('error', (err: Error) => {
    if (err.message === last) return;
    last = err.message;
    logger.warn({ redis: profile, err: err.message }, 'redis connection error');
  });
  client.on('ready', () => {
    last = undefined;
  });
  return client;
}
