// historyDayBeforeCapture (exporters/history/parquetHistory.ts): a history day is left
// unwritten only when it ended at or before the earliest captured time; the
// day in which capture began, and every later one, may be written.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { historyDayBeforeCapture } from '../../exporters/history/parquetHistory.js';

const BEGAN = Date.UTC(2026, 2, 1, 0, 0, 1); // 2026-03-01T00:00:01Z

describe('historyDayBeforeCapture', () => {
  it('names a day that ended before capture began, with the time it began', () => {
    assert.equal(
      historyDayBeforeCapture('c2', '2026-02-28', BEGAN),
      '2026-02-28 of cluster "c2" ended before its capture began (the earliest captured time is 2026-03-01T00:00:01.000Z): nothing of it was captured, so no file is written',
    );
    assert.ok(historyDayBeforeCapture('c2', '2025-01-01', BEGAN));
  });

  it('lets the day capture began in, and later days, be written', () => {
    assert.equal(historyDayBeforeCapture('c2', '2026-03-01', BEGAN), undefined);
    assert.equal(historyDayBeforeCapture('c2', '2026-03-02', BEGAN), undefined);
    // Capture beginning exactly at midnight: the day before ended then, nothing of it was captured.
    assert.ok(historyDayBeforeCapture('c2', '2026-02-28', Date.UTC(2026, 2, 1)));
    assert.equal(historyDayBeforeCapture('c2', '2026-03-01', Date.UTC(2026, 2, 1)), undefined);
  });

  it('says nothing when nothing was captured yet, or the date is no date (other checks answer those)', () => {
    assert.equal(historyDayBeforeCapture('c2', '2026-02-28', undefined), undefined);
    assert.equal(historyDayBeforeCapture('c2', '2026-02-30', BEGAN), undefined);
  });
});
