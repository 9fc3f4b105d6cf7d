// One bench run's results: the machine it ran on (taken at the start, load
// average included: on a shared machine absolute figures mean little, the
// ratios to same-run baselines more), then every figure with its baseline and
// ratio. Written to bench-results/<start time>.json, one file per run, and
// printed as one table. Each *.bench.ts appends its figures as JSON lines to
// BENCH_FIGURES_FILE (see report.ts); scripts/bench.sh drives both ends.
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { readFileSync } from 'node:fs';
import type { Figure } from './report.js';

export interface MachineFacts {
  startedAt: string;
  cores: number;
  cpuModel: string;
  memoryGiB: number;
  freeMemoryGiB: number;
  node: string;
  platform: string;
  /** 1, 5 and 15-minute load averages when the run started. */
  loadAverage: [number, number, number];
}

export interface RecordedFigure extends Figure {
  /** The bench file that measured it. */
  bench: string;
  /** value / baseline (NaN as null when the baseline is 0). */
  ratio: number | null;
}

export interface BenchRun {
  machine: MachineFacts;
  finishedAt: string;
  /** Load averages when the run ended: a run that ended far busier than it began is suspect. */
  loadAverageAtEnd: [number, number, number];
  benches: { file: string; ok: boolean }[];
  figures: RecordedFigure[];
}

const round = (n: number, digits = 2): number => Math.round(n * 10 ** digits) / 10 ** digits;
const load = (): [number, number, number] => loadavg().map((l) => round(l)) as [number, number, number];

export function machineFacts(now = new Date()): MachineFacts {
  const cpu = cpus();
  return {
    startedAt: now.toISOString(),
    cores: cpu.length,
    cpuModel: cpu[0]?.model ?? 'unknown',
    memoryGiB: round(totalmem() / 2 ** 30),
    freeMemoryGiB: round(freemem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    loadAverage: load(),
  };
}

export function ratioOf(f: Pick<Figure, 'value' | 'baseline'>): number | null {
  const r = f.value / f.baseline;
  return Number.isFinite(r) ? round(r, 3) : null;
}

/** Reads the JSON lines the benches appended (blank lines skipped). */
export function readFigures(text: string): RecordedFigure[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      // JSON has no NaN: a figure that could not be measured arrives as null.
      const raw = JSON.parse(l) as Omit<Figure, 'value' | 'baseline'> & { bench: string; value: number | null; baseline: number | null };
      const f = { ...raw, value: raw.value ?? NaN, baseline: raw.baseline ?? NaN };
      return { ...f, ratio: ratioOf(f) };
    });
}

export function buildRun(machine: MachineFacts, benches: { file: string; ok: boolean }[], figures: RecordedFigure[], end = new Date()): BenchRun {
  return { machine, finishedAt: end.toISOString(), loadAverageAtEnd: load(), benches, figures };
}

/** The file name of a run: its start time, sortable and safe in a path. */
export function runFileName(machine: MachineFacts): string {
  return `${machine.startedAt.replace(/:/g, '').replace(/\.\d+Z$/, 'Z')}.json`;
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2);
}

/** One plain-text table of every figure, with the machine line above it. */
export function table(run: BenchRun): string {
  const m = run.machine;
  const head = `bench run ${m.startedAt}: ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB} GiB, node ${m.node}, load average at start ${m.loadAverage.join(' / ')}, at end ${run.loadAverageAtEnd.join(' / ')}`;
  const rows = [['bench', 'figure', 'value', 'unit', 'baseline (same run)', 'baseline', 'ratio']];
  for (const f of run.figures) {
    rows.push([
      f.bench,
      f.name,
      fmt(f.value),
      f.unit,
      f.baselineName,
      fmt(f.baseline),
      f.ratio === null ? '-' : `${f.ratio.toFixed(2)}${f.higherIsBetter ? '' : ' (lower better)'}`,
    ]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: string[]): string =>
    r
      .map((cell, c) => (c === 2 || c === 5 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join(' | ')
      .trimEnd();
  const failed = run.benches.filter((b) => !b.ok).map((b) => b.file);
  return [
    head,
    line(rows[0]!),
    widths.map((w) => '-'.repeat(w)).join('-|-'),
    ...rows.slice(1).map(line),
    ...(failed.length ? [`FAILED (figures incomplete): ${failed.join(', ')}`] : []),
  ].join('\n');
}

export function readMachine(path: string): MachineFacts {
  return JSON.parse(readFileSync(path, 'utf8')) as MachineFacts;
}
