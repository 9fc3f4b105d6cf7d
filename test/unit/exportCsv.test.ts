// Counting CSV records of a compliance export as its chunks stream past
// (exporters/chunkedExport.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countCsvRecords } from '../../exporters/chunkedExport.js';

describe('CSV record count', () => {
  it('counts newlines outside quoted fields, across chunk boundaries', () => {
    const state = { inQuote: false };
    assert.equal(countCsvRecords(Buffer.from('a,b\n1,"x\ny"\n2,"q""'), state), 2);
    assert.equal(countCsvRecords(Buffer.from('z"\n'), state), 1);
  });
});
