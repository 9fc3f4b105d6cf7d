// core/instant.ts: the one reading of a date-time the validator and the
// handlers share, so nothing the validator passes can fail to parse later.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { INSTANT_MAX_MS, isCalendarDate, parseInstant } from '../../core/instant.js';

describe('parseInstant', () => {
  it('reads RFC 3339 date-times with a zone', () => {
    assert.equal(parseInstant('2025-11-29T03:12:00Z'), Date.UTC(2025, 10, 29, 3, 12));
    assert.equal(parseInstant('2025-11-29t03:12:00.5z'), Date.UTC(2025, 10, 29, 3, 12, 0, 500));
    assert.equal(parseInstant('2025-11-29T05:12:00.123456789+02:00'), Date.UTC(2025, 10, 29, 3, 12, 0, 123));
    assert.equal(parseInstant('1970-01-01T00:00:00Z'), 0);
    assert.equal(parseInstant('2299-12-31T23:59:59.999Z'), INSTANT_MAX_MS);
    assert.equal(parseInstant('2016-02-29T00:00:00Z'), Date.UTC(2016, 1, 29));
  });
  it('refuses what Date cannot hold or would read another way', () => {
    for (const text of [
      '2016-12-31T23:59:60Z',
      '2020-02-30T00:00:00Z',
      '2019-02-29T00:00:00Z',
      '1',
      '2026-03-01',
      '2026-03-01T00:00:00',
      '0000-01-01T00:00:00Z',
      '1969-12-31T23:59:59Z',
      '2300-01-01T00:00:00Z',
      '+275760-09-13T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T00:00:00+24:00',
      '2026-01-01T00:00:00.1234567891Z',
      ' 2026-01-01T00:00:00Z',
      '2026-01-01T00:00:00Z\u0000',
    ]) {
      assert.equal(parseInstant(text), undefined, text);
    }
  });
  it('checks calendar dates the same way', () => {
    assert.equal(isCalendarDate('2025-11-29'), true);
    assert.equal(isCalendarDate('2025-02-29'), false);
    assert.equal(isCalendarDate('1'), false);
  });
});
