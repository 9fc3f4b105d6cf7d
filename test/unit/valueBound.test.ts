// core/valueBound.ts: what the store keeps of a value — whole up to the bound, else a prefix of whole characters
// with the whole value's size and sha256 — and the comparison of a kept value with etcd's.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { isKeptValueOf, keptColumns, keptValue } from '../../core/valueBound.js';

const sha = (t: string): string => createHash('sha256').update(t, 'utf8').digest('hex');

describe('what the store keeps of a value', () => {
  it('keeps a value up to the bound whole (its size in bytes, no sha256), one byte more as a prefix', () => {
    assert.deepEqual(keptValue('é'.repeat(8), 16), { value: 'é'.repeat(8), bytes: 16, sha256: '' });
    const over = `${'é'.repeat(8)}x`;
    assert.deepEqual(keptValue(over, 16), { value: 'é'.repeat(8), bytes: 17, sha256: sha(over) });
    assert.deepEqual(keptValue('', 16), { value: '', bytes: 0, sha256: '' });
  });

  it('cuts at a character boundary, never inside a two-, three- or four-byte character', () => {
    for (const ch of ['é', '€', '𝄞']) {
      const text = `a${ch.repeat(20)}`;
      for (let limit = 1; limit < Buffer.byteLength(text); limit++) {
        const kept = keptValue(text, limit);
        assert.ok(Buffer.byteLength(kept.value) <= limit, `${ch} at ${limit}`);
        assert.ok(text.startsWith(kept.value), `${ch} at ${limit}: a prefix of whole characters`);
        assert.ok(Buffer.byteLength(kept.value) > limit - Buffer.byteLength(ch), `${ch} at ${limit}: no more than one character short`);
        assert.equal(kept.sha256, sha(text));
      }
    }
  });

  it('compares a kept value with a value read again: whole by text, a prefix by size and sha256', () => {
    const text = 'x'.repeat(100);
    const kept = keptValue(text, 10);
    assert.equal(isKeptValueOf(kept, text), true);
    assert.equal(isKeptValueOf(kept, `${'x'.repeat(99)}y`), false, 'the same prefix and size, another value');
    assert.equal(isKeptValueOf(kept, 'x'.repeat(101)), false);
    assert.equal(isKeptValueOf({ ...kept, value: 'y'.repeat(10) }, text), false, 'another prefix kept beside the right size and sha256');
    assert.equal(isKeptValueOf(keptValue('abc', 10), 'abc'), true);
    assert.equal(isKeptValueOf(keptValue('abc', 10), 'abd'), false);
  });

  it('names the columns of a row: only the value when whole, with its size and sha256 when a prefix', () => {
    assert.deepEqual(keptColumns('prev_value', 'small'), { prev_value: 'small' });
    const big = 'z'.repeat(70_000);
    assert.deepEqual(keptColumns('value', big), { value: 'z'.repeat(65_536), value_bytes: 70_000, value_sha256: sha(big) });
  });
});
