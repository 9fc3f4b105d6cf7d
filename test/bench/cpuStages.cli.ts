// The cost model of one saved profile: `node --import tsx test/bench/cpuStages.cli.ts lock|tailer FILE.cpuprofile UNITS [UNIT]`
// prints its main thread's CPU per unit by stage over the whole profile (cpuStages.ts).
import { formatStages, LOCK_API_STAGES, readProfile, stageTables, TAILER_STAGES } from './cpuStages.js';

const [model, file, units, unit = model === 'lock' ? 'cycle' : 'event'] = process.argv.slice(2);
if ((model !== 'lock' && model !== 'tailer') || !file || !Number(units)) {
  process.stderr.write('usage: cpuStages.cli.ts lock|tailer FILE.cpuprofile UNITS [UNIT]\n');
  process.exit(2);
}
const tables = stageTables(readProfile(file), model === 'lock' ? LOCK_API_STAGES : TAILER_STAGES, [
  { name: file.slice(file.lastIndexOf('/') + 1), startUs: 0, endUs: Number.MAX_SAFE_INTEGER, units: Number(units) },
]);
process.stdout.write(`${formatStages(tables, unit)}\n`);
