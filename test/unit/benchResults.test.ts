// The bench run record: figures with their same-run baseline and ratio, the
// machine, one table. (The benchmarks' own timings are never tested.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildRun, machineFacts, readFigures, runFileName, table } from '../../test/bench/results.js';

const lines = [
  {
    bench: 'tailer.bench.ts',
    name: 'tailer catch-up, 8 windows',
    value: 6600,
    baselineName: 'no-op, 8 watches',
    baseline: 12800,
    unit: 'events/s',
    higherIsBetter: true,
  },
  { bench: 'reports.bench.ts', name: 'key history p95', value: 12, baselineName: 'bare SQL p95', baseline: 0, unit: 'ms', higherIsBetter: false },
  { bench: 'tailer.bench.ts', name: 'live lag p99', value: null, baselineName: 'plain watch p99', baseline: 4, unit: 'ms', higherIsBetter: false },
]
  .map((l) => JSON.stringify(l))
  .join('\n');

describe('bench results', () => {
  it('keeps every figure with its baseline and ratio; an unmeasurable ratio is null, not NaN', () => {
    const figures = readFigures(`${lines}\n\n`);
    assert.equal(figures.length, 3);
    assert.equal(figures[0]?.ratio, 0.516);
    assert.equal(figures[1]?.ratio, null); // baseline 0
    assert.ok(Number.isNaN(figures[2]?.value));
    assert.equal(figures[2]?.ratio, null);
    const run = buildRun(machineFacts(new Date('2026-11-30T12:01:02.345Z')), [{ file: 'test/bench/tailer.bench.ts', ok: true }], figures);
    const back = JSON.parse(JSON.stringify(run));
    assert.equal(back.figures[0].baseline, 12800);
    assert.equal(back.figures[0].ratio, 0.516);
  });

  it('records the machine: cores, memory, Node.js version, load average at start', () => {
    const m = machineFacts(new Date('2026-11-30T12:01:02.345Z'));
    assert.ok(m.cores >= 1);
    assert.ok(m.memoryGiB > 0);
    assert.equal(m.node, process.version);
    assert.equal(m.loadAverage.length, 3);
    assert.equal(runFileName(m), '2026-11-30T120102Z.json');
  });

  it('prints one table with a row per figure and names a failed bench', () => {
    const run = buildRun(
      machineFacts(),
      [
        { file: 'a.bench.ts', ok: true },
        { file: 'b.bench.ts', ok: false },
      ],
      readFigures(lines),
    );
    const text = table(run).split('\n');
    assert.match(text[0] ?? '', /cores .* GiB, node v\d+.*load average at start/);
    assert.equal(text.filter((l) => l.includes('tailer.bench.ts')).length, 2);
    assert.ok(text.some((l) => l.includes('tailer catch-up, 8 windows') && l.includes('0.52')));
    assert.match(text[text.length - 1] ?? '', /FAILED .*b\.bench\.ts/);
  });
});
