// The API's per-caller memory is bounded and cannot be flushed by garbage:
// the token cache and the rate-limit buckets are LRU maps with a ceiling.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { RateLimiter } from '../../api/rateLimit.js';
import { ApiTokenVerifier, hashToken } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';

/** A store that knows one token and counts its lookups (a pure unit test: no ClickHouse). */
function countingStore(goodToken: string): { store: AuditStore; lookups: () => number } {
  let n = 0;
  const store = {
    rows: async (_sql: string, params: { hash?: string }) => {
      n++;
      return params.hash === hashToken(goodToken)
        ? [{ identity: 'ivy@corp', roles: ['investigator'], token_id: '0123456789ab', revoked: 0, expires_at_ms: '0' }]
        : [];
    },
    insert: async () => undefined,
  } as unknown as AuditStore;
  return { store, lookups: () => n };
}

const randomToken = () => `la_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;

describe('token cache', () => {
  it('still serves a good token from cache after 20 000 random bad tokens', async () => {
    const good = randomToken();
    const { store, lookups } = countingStore(good);
    const verifier = new ApiTokenVerifier(store);
    assert.equal((await verifier.verify(good))?.identity, 'ivy@corp');
    assert.equal(lookups(), 1);
    for (let i = 0; i < 20_000; i++) assert.equal(await verifier.verify(randomToken()), undefined);
    const before = lookups();
    assert.equal((await verifier.verify(good))?.identity, 'ivy@corp');
    assert.equal(lookups(), before, 'the good token was looked up again: bad tokens flushed it from the cache');
  });
});

describe('rate-limit buckets', () => {
  it('stay bounded however many identities call within a minute', () => {
    const now = 1_000_000;
    const rl = new RateLimiter(120, () => now);
    for (let i = 0; i < 120_000; i++) rl.take(`id-${i}`);
    assert.ok(rl.size <= 50_000, `${rl.size} buckets`);
  });
  it('keep an active caller limited while others come and go', () => {
    let now = 1_000_000;
    const rl = new RateLimiter(3, () => now);
    for (let i = 0; i < 3; i++) assert.equal(rl.take('busy'), 0);
    for (let i = 0; i < 1_000; i++) {
      rl.take(`other-${i}`);
      now += 1;
    }
    assert.ok(rl.take('busy') > 0);
  });
});
