// How every benchmark prints a figure: beside a baseline measured in the same
// run, with their ratio. Timings never decide pass/fail: machines are noisy.
// Under scripts/bench.sh each figure is also appended as a JSON line to
// BENCH_FIGURES_FILE, from which the run's bench-results/<date>.json is made.
import { appendFileSync } from 'node:fs';
import path from 'node:path';

export interface Figure {
  /** What was measured, e.g. "ingest rows/s, batch 10000". */
  name: string;
  value: number;
  /** The same work done the plain way in this run (raw etcd watch, ClickHouse's own writer…). */
  baselineName: string;
  baseline: number;
  unit: string;
  /** true when bigger is better (throughput); false for latencies. */
  higherIsBetter: boolean;
}

const rows: Figure[] = [];

export function report(figure: Figure): void {
  rows.push(figure);
  const sink = process.env.BENCH_FIGURES_FILE;
  if (sink) appendFileSync(sink, `${JSON.stringify({ bench: path.basename(process.argv[1] ?? 'unknown'), ...figure })}\n`);
  const ratio = figure.baseline === 0 ? NaN : figure.value / figure.baseline;
  process.stdout.write(
    `${figure.name.padEnd(46)} ${fmt(figure.value).padStart(12)} ${figure.unit.padEnd(9)} | ${figure.baselineName.padEnd(34)} ${fmt(figure.baseline).padStart(12)} | ratio ${ratio.toFixed(2)}${figure.higherIsBetter ? '' : ' (lower is better)'}\n`,
  );
}

export function heading(title: string): void {
  process.stdout.write(`\n== ${title}\n`);
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2);
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

export function figures(): readonly Figure[] {
  return rows;
}
