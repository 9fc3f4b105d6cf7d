// Every Redis client comes from platform/redis.ts and reports connection
// errors through the logger, never as ioredis's "Unhandled error event".
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../../core/logger.js';
import { createRedis, type RedisProfile } from '../../platform/redis.js';

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('redis clients', () => {
  for (const profile of ['worker', 'check', 'request'] as RedisProfile[]) {
    it(`${profile}: a refused connection is logged, not an unhandled error event`, async () => {
      const lines: Array<{ msg: string; redis: string; err: string }> = [];
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(JSON.parse(chunk.toString('utf8')));
          done();
        },
      });
      const unhandled: unknown[][] = [];
      const consoleError = console.error;
      console.error = (...args: unknown[]) => void unhandled.push(args);
      const client = createRedis(`redis://127.0.0.1:${await closedPort()}`, profile, createLogger('warn', {}, sink));
      try {
        if (client.status === 'wait') void client.connect().catch(() => undefined);
        const deadline = Date.now() + 10_000;
        while (lines.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      } finally {
        client.disconnect();
        console.error = consoleError;
      }
      assert.equal(lines[0]?.msg, 'redis connection error');
      assert.equal(lines[0]?.redis, profile);
      assert.match(lines[0]?.err ?? '', /ECONNREFUSED/);
      assert.deepEqual(
        unhandled.filter((a) => String(a[0]).includes('[ioredis]')),
        [],
      );
    });
  }
});
