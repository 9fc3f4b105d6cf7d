// scripts/bench.sh's two ends of a run:
//   start <facts.json>                                   records the machine (load average now)
//   finish <facts.json> <figures.jsonl> <out dir> <file=ok|failed>...   writes <out dir>/<start>.json, prints the table
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildRun, machineFacts, readFigures, readMachine, runFileName, table } from './results.js';

const [cmd, facts, figures, outDir, ...benches] = process.argv.slice(2);
if (cmd === 'start' && facts) {
  writeFileSync(facts, JSON.stringify(machineFacts()));
} else if (cmd === 'finish' && facts && figures && outDir) {
  const run = buildRun(
    readMachine(facts),
    benches.map((b) => {
      const i = b.lastIndexOf('=');
      return { file: b.slice(0, i), ok: b.slice(i + 1) === 'ok' };
    }),
    existsSync(figures) ? readFigures(readFileSync(figures, 'utf8')) : [],
  );
  mkdirSync(outDir, { recursive: true });
  const out = path.join(outDir, runFileName(run.machine));
  writeFileSync(out, `${JSON.stringify(run, null, 2)}\n`);
  process.stdout.write(`\n${table(run)}\n\nwrote ${out}\n`);
} else {
  process.stderr.write('usage: results.cli.ts start <facts.json> | finish <facts.json> <figures.jsonl> <out dir> <file=ok|failed>...\n');
  process.exit(2);
}
