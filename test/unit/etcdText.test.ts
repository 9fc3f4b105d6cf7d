// etcdText: the record's text of etcd bytes is reversible and the identity on
// what our API writes. Before it, Buffer#toString('utf8') mapped every
// invalid byte to U+FFFD: /l/ns/a\xff and /l/ns/a\xfe were one key.
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { etcdBytes, etcdText } from '../../core/etcdText.js';

describe('etcdText', () => {
  it('is the identity on valid UTF-8 without U+FFFD', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme' }).filter((s) => !s.includes('\uFFFD')),
        (s) => etcdText(Buffer.from(s, 'utf8')) === s,
      ),
    );
    assert.equal(etcdText(Buffer.from('/l/payments/ledger', 'utf8')), '/l/payments/ledger');
  });

  it('keeps keys that differ only in invalid bytes apart, and apart from a literal U+FFFD', () => {
    const keys = [
      Buffer.from('/l/ns/a\xff', 'latin1'),
      Buffer.from('/l/ns/a\xfe', 'latin1'),
      Buffer.from('/l/ns/a\uFFFD', 'utf8'),
      Buffer.from('/l/ns/a\uFFFDFF', 'utf8'),
    ];
    const texts = keys.map(etcdText);
    assert.equal(new Set(texts).size, 4, JSON.stringify(texts));
    assert.deepEqual(texts, ['/l/ns/a\uFFFDFF', '/l/ns/a\uFFFDFE', '/l/ns/a\uFFFD--', '/l/ns/a\uFFFD--FF']);
    for (const t of texts) assert.ok(t.startsWith('/l/ns/'), 'the prefix survives');
  });

  it('names overlong, surrogate and truncated sequences byte by byte', () => {
    assert.equal(etcdText(Buffer.from([0xc0, 0xaf])), '\uFFFDC0\uFFFDAF'); // overlong '/'
    assert.equal(etcdText(Buffer.from([0xed, 0xa0, 0x80])), '\uFFFDED\uFFFDA0\uFFFD80'); // a UTF-16 surrogate
    assert.equal(etcdText(Buffer.from([0x61, 0xe2, 0x82])), 'a\uFFFDE2\uFFFD82'); // € cut short
    assert.equal(etcdText(Buffer.from([0xf0, 0x9f, 0x94, 0x92])), '\u{1F512}');
  });

  it('round-trips any bytes to valid UTF-8 and back', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const text = etcdText(bytes);
        assert.ok(isUtf8(Buffer.from(text, 'utf8')));
        assert.deepEqual(etcdBytes(text), Buffer.from(bytes));
      }),
      { numRuns: 2000 },
    );
  });
});
