#!/usr/bin/env node
// Sums a V8 .cpuprofile by self time: the top functions, and the same time by
// where the code lives (a package under node_modules, a project folder, node's
// own internals, or V8's (idle)/(program)/(garbage collector)).
// usage: node scripts/cpuprofileTop.mjs FILE.cpuprofile [top=25]
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node scripts/cpuprofileTop.mjs FILE.cpuprofile [top]\n');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
// Self time per node: each sample is attributed to one node; the interval to the next sample is its time.
const selfUs = new Map();
const { samples, timeDeltas } = profile;
for (let i = 0; i < samples.length; i += 1) {
  const dt = timeDeltas[i + 1] ?? 0;
  selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + dt);
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

function where(url) {
  if (!url) return '';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return 'node internals';
  const m = /\/(core|platform|tailer|lock|reports|exporters|api|roles|cli|test)\/[^/]+$/.exec(url);
  return m ? `${m[1]}/${url.slice(url.lastIndexOf('/') + 1)}` : url;
}

const byFunction = new Map();
const byPlace = new Map();
for (const [id, us] of selfUs) {
  const n = byId.get(id);
  const cf = n.callFrame;
  const place = where(cf.url) || (cf.functionName.startsWith('(') ? cf.functionName : '(native)');
  const fn = `${cf.functionName || '(anonymous)'}  ${cf.url ? `${where(cf.url)}:${cf.lineNumber + 1}` : ''}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  byPlace.set(place, (byPlace.get(place) ?? 0) + us);
}
const pct = (us) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
const ms = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
process.stdout.write(`${file}: ${(total / 1e6).toFixed(1)} s sampled\n\nself time by place\n`);
for (const [p, us] of [...byPlace].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${ms(us)} ${pct(us)}  ${p}\n`);
process.stdout.write(`\nself time by function (top ${top})\n`);
for (const [f, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${ms(us)} ${pct(us)}  ${f}\n`);
