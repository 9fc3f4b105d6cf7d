// A compliance export's CSV (exporters/compliance/chunkedExport.ts): chunks arrive from
// ClickHouse as JSON arrays and are written by the one CSV writer
// (grants/csv.ts) — formulas neutralised as in the API's CSV, 64-bit
// values exact, one header, rows counted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonChunkToCsv } from '../../exporters/compliance/chunkedExport.js';
import { csvLine } from '../../grants/csv.js';

const chunk = (...lines: unknown[][]): Buffer => Buffer.from(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));

describe('export CSV', () => {
  it('writes the header once, each row through the one CSV writer, and counts rows', () => {
    const names = ['cluster', 'holder', 'token', 'ended_at', 'unprotected', 'origin'];
    const hostile = '=HYPERLINK("http://evil","x")';
    const first = jsonChunkToCsv(
      chunk(names, ['c1', hostile, '11258999068426241', null, 0, 'foreign'], ['c1', 'a,b', '1', '2026-03-01 00:00:00.005', 1, 'api']),
      true,
    );
    assert.equal(first.rows, 2);
    assert.equal(
      first.csv.toString(),
      'cluster,holder,token,ended_at,unprotected,origin\r\n' +
        `c1,"'=HYPERLINK(""http://evil"",""x"")",11258999068426241,,0,foreign\r\n` +
        'c1,"a,b",1,2026-03-01 00:00:00.005,1,api\r\n',
    );
    // The same cell as the API's CSV writes for the same holder.
    assert.ok(first.csv.toString().includes(csvLine([hostile]).trimEnd()));
    for (const start of ['+1', '-1+1', '@SUM(A1)', '\tx'])
      assert.ok(
        jsonChunkToCsv(chunk(['h'], [start]), false)
          .csv.toString()
          .startsWith(`"'`) ||
          jsonChunkToCsv(chunk(['h'], [start]), false)
            .csv.toString()
            .startsWith("'"),
        start,
      );
    // A later chunk: its names line is not a row and not written again.
    const later = jsonChunkToCsv(chunk(names, ['c2', 'h', '2', null, 0, 'api']), false);
    assert.deepEqual([later.rows, later.csv.toString()], [1, 'c2,h,2,,0,api\r\n']);
    assert.deepEqual([jsonChunkToCsv(chunk(names), true).rows, jsonChunkToCsv(Buffer.alloc(0), false).rows], [0, 0]);
  });
});
