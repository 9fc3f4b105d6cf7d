// The per-identity report rate limit (api/rateLimit.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RateLimiter } from '../../api/rateLimit.js';

describe('rate limiter', () => {
  it('gives each identity its own bucket of N a minute, refilled continuously', () => {
    let now = 0;
    const rl = new RateLimiter(3, () => now);
    assert.deepEqual([rl.take('a'), rl.take('a'), rl.take('a')], [0, 0, 0]);
    assert.equal(rl.take('a'), 20); // one request per 20 s
    assert.equal(rl.take('b'), 0);
    now += 20_000;
    assert.equal(rl.take('a'), 0);
    assert.ok(rl.take('a') > 0);
  });
});
