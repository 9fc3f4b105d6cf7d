import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeToken, parseToken, splitToken, tokenToString } from '../../core/token.js';

describe('token', () => {
  it('is epoch × 2^48 + revision, exact above 2^53', () => {
    const t = makeToken(40, 123_456_789n);
    assert.equal(t, 40n * 2n ** 48n + 123_456_789n);
    assert.ok(t > BigInt(Number.MAX_SAFE_INTEGER));
    assert.equal(tokenToString(t), '11258999191883029');
    assert.deepEqual(splitToken(t), { epoch: 40n, revision: 123_456_789n });
  });

  it('orders every token of a later epoch above every token of an earlier one', () => {
    assert.ok(makeToken(2, 0) > makeToken(1, 2n ** 48n - 1n));
  });

  it('parses only decimal strings below 2^64', () => {
    assert.equal(parseToken('18446744073709551615'), 2n ** 64n - 1n);
    for (const bad of ['18446744073709551616', '-1', '1e3', '0x10', ' 1', '01', '', '1.0']) assert.equal(parseToken(bad), undefined, bad);
  });

  it('rejects revisions outside 48 bits', () => {
    assert.throws(() => makeToken(1, 2n ** 48n), RangeError);
    assert.throws(() => makeToken(-1, 1), RangeError);
  });
});
