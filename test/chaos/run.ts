// `npm run chaos -- --seed N --minutes M`: a Jepsen-style fault-injection run
// against the real stack (three-member etcd, Redis, MinIO, embedded
// ClickHouse, lockaudit as a child process), checked at the end against an
// independent recorder. See test/chaos/README.md. Exits 1 on any violation.
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client as MinioClient } from 'minio';
import { projectRoot } from '../../core/paths.js';
import { ensureEtcdutl } from './buildEtcdutl.js';
import { check, type CheckResult } from './checker.js';
import { BACKGROUND_KINDS, FAULT_KINDS, faultSeconds, inject, takeSnapshot, type FaultContext, type FaultKind, type FaultRecord } from './faults.js';
import { readRecording, Recorder } from './recorder.js';
import { ChaosRng } from './rng.js';
import { Stack } from './stack.js';
import type { StoreDump } from './storeDump.js';
import { Workload, type Truth } from './workload.js';

const execFileP = promisify(execFile);

export interface ChaosOptions {
  seed: number;
  minutes: number;
  portBase: number;
  apiPort: number;
  dataDir: string;
  faults: FaultKind[];
  foreignWrites: boolean;
  badValues: boolean;
  workers: number;
  rate: number;
  massExpiryHolds: number;
  serviceDownSeconds: number;
  electionTtlSeconds: number;
  keep: boolean;
  restoreBump?: number;
}

export interface ChaosOutcome {
  result: CheckResult;
  faults: FaultRecord[];
  gaps: StoreDump['gaps'];
  seconds: number;
  caughtUp: boolean;
  report: string;
}

function parseOptions(argv: string[]): ChaosOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: 'string', default: '1' },
      minutes: { type: 'string', default: '5' },
      'port-base': { type: 'string', default: '28000' },
      'api-port': { type: 'string' },
      'data-dir': { type: 'string' },
      faults: { type: 'string', default: 'all' },
      skip: { type: 'string', default: '' },
      workers: { type: 'string', default: '8' },
      rate: { type: 'string', default: '8' },
      'mass-expiry-holds': { type: 'string', default: '5000' },
      'service-down-seconds': { type: 'string', default: '30' },
      'election-ttl': { type: 'string', default: '5' },
      keep: { type: 'boolean', default: false },
      'restore-bump': { type: 'string' },
    },
  });
  const all = [...FAULT_KINDS, ...BACKGROUND_KINDS] as string[];
  const listed = (v: string): string[] => v.split(',').map((s) => s.trim()).filter(Boolean);
  const chosen = values.faults === 'all' ? all : values.faults === 'none' ? [] : listed(values.faults);
  const skip = listed(values.skip);
  for (const name of [...chosen, ...skip]) if (!all.includes(name)) throw new Error(`unknown fault kind "${name}"; known: ${all.join(', ')}`);
  const enabled = chosen.filter((k) => !skip.includes(k));
  const seed = Number(values.seed);
  const portBase = Number(values['port-base']);
  return {
    seed,
    minutes: Number(values.minutes),
    portBase,
    apiPort: Number(values['api-port'] ?? portBase + 100),
    dataDir: path.resolve(values['data-dir'] ?? path.join(projectRoot, `.lockaudit-chaos-${portBase}`)),
    faults: FAULT_KINDS.filter((k) => enabled.includes(k)),
    foreignWrites: enabled.includes('foreign-writes'),
    badValues: enabled.includes('bad-values'),
    workers: Number(values.workers),
    rate: Number(values.rate),
    massExpiryHolds: Number(values['mass-expiry-holds']),
    serviceDownSeconds: Number(values['service-down-seconds']),
    electionTtlSeconds: Number(values['election-ttl']),
    keep: values.keep ?? false,
    restoreBump: values['restore-bump'] === undefined ? undefined : Number(values['restore-bump']),
  };
}

/** The seeded schedule: cycles of every enabled kind in a seeded order, `restore` never first (its snapshot needs history after it). */
export function schedule(options: ChaosOptions, rng: ChaosRng): FaultKind[][] {
  if (options.faults.length === 0) return [[]];
  const per = options.faults.reduce((s, k) => s + faultSeconds(k, options), 0);
  const budget = options.minutes * 60 - 35;
  const cycles = Math.max(1, Math.floor(budget / (per * 1.5)));
  return Array.from({ length: cycles }, () => {
    const order = rng.shuffle(options.faults);
    if (order[0] === 'restore' && order.length > 1) [order[0], order[1]] = [order[1] as FaultKind, 'restore'];
    return order;
  });
}

async function listArchive(stack: Stack): Promise<string[]> {
  const s3 = stack.config.s3;
  const url = new URL(s3.endpoint);
  const client = new MinioClient({ endPoint: url.hostname, port: Number(url.port), useSSL: url.protocol === 'https:', accessKey: s3.accessKey, secretKey: s3.secretKey, region: s3.region });
  const texts: string[] = [];
  if (!(await client.bucketExists(s3.archiveBucket))) return texts;
  for await (const item of client.listObjectsV2(s3.archiveBucket, '', true) as AsyncIterable<{ name?: string }>) {
    if (!item.name) continue;
    const stream = await client.getObject(s3.archiveBucket, item.name);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    texts.push(Buffer.concat(chunks).toString('utf8'));
  }
  return texts;
}

async function waitCaughtUp(stack: Stack, token: string, head: bigint, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const res = await stack.api('GET', '/v1/tailers', token);
    const items = (res.body.items ?? []) as Array<{ checkpoint?: string }>;
    if (items.some((t) => t.checkpoint !== undefined && BigInt(t.checkpoint) >= head)) return true;
    await sleep(1_000);
  }
  return false;
}

function renderReport(options: ChaosOptions, faults: FaultRecord[], r: CheckResult, gaps: StoreDump['gaps'], seconds: number, caughtUp: boolean, workloadCounts: Map<string, number>): string {
  const lines: string[] = [];
  const row = (a: string, b: string | number): void => {
    lines.push(`  ${a.padEnd(44)} ${String(b)}`);
  };
  lines.push(`chaos run: seed ${options.seed}, ${options.minutes} min planned, ${Math.round(seconds)} s taken`);
  lines.push('faults injected');
  for (const kind of FAULT_KINDS) {
    const mine = faults.filter((f) => f.kind === kind);
    if (mine.length) row(kind, `${mine.filter((f) => f.ok).length}${mine.some((f) => !f.ok) ? ` (+${mine.filter((f) => !f.ok).length} failed to inject)` : ''}`);
  }
  for (const kind of BACKGROUND_KINDS) row(`${kind} (background)`, (kind === 'foreign-writes' ? options.foreignWrites : options.badValues) ? 'on' : 'off');
  lines.push('workload');
  for (const [k, v] of [...workloadCounts.entries()].sort()) row(k, v);
  lines.push('record');
  row('eras (1 + restores)', r.eras);
  row('restores the log does not name', r.byKind.get('restore-unrecorded') ?? 0);
  row('holds granted by the API (recorded)', r.apiGrants);
  row('changes checked', r.changesChecked);
  row('  captured once under FINAL', r.captured);
  row('  quarantined', r.quarantined);
  row('  inside a recorded gap', r.inGaps);
  row('lost', r.lost);
  row('duplicated (or phantom rows)', r.duplicated);
  row('misrecorded (another value at that revision)', r.misrecorded);
  row('misclassified', r.misclassified);
  row('protected grants checked', r.grantsChecked);
  row('overlapping protected grants', r.byKind.get('overlap') ?? 0);
  row('token order violations', r.byKind.get('token-order') ?? 0);
  row('open grants not held in etcd at the end', r.byKind.get('ghost-open-grant') ?? 0);
  row('force records / not archived', `${r.forceRecords} / ${r.byKind.get('not-archived') ?? 0}`);
  row('archive verify', r.byKind.has('archive-verify') ? 'FAILED' : 'ok');
  row('tailer caught up at the end', caughtUp ? 'yes' : 'NO');
  lines.push(`gaps recorded: ${gaps.length}`);
  for (const g of gaps) lines.push(`  ${g.from_revision}–${g.to_revision}  ${g.reason}`);
  if (r.violations.length) {
    lines.push(`VIOLATIONS: ${r.violations.length} (${[...r.byKind.entries()].map(([k, n]) => `${k} ${n}`).join(', ')}); first of each kind:`);
    for (const kind of r.byKind.keys()) for (const v of r.violations.filter((x) => x.kind === kind).slice(0, 3)) lines.push(`  ${v.kind}: ${v.detail}`);
  } else lines.push('no violations');
  for (const f of faults.filter((x) => !x.ok)) lines.push(`INJECTION FAILED: ${f.kind}: ${f.detail}`);
  return lines.join('\n');
}

export async function runChaos(options: ChaosOptions, log: (m: string) => void): Promise<ChaosOutcome> {
  const began = Date.now();
  const stamp = (m: string): void => log(`[${String(Math.round((Date.now() - began) / 1000)).padStart(4)} s] ${m}`);
  if (options.faults.includes('restore')) await ensureEtcdutl(stamp);
  const stack = new Stack({ dataDir: options.dataDir, portBase: options.portBase, apiPort: options.apiPort, electionTtlSeconds: options.electionTtlSeconds, log: stamp });
  await stack.servicesDown().catch(() => {});
  rmSync(options.dataDir, { recursive: true, force: true });
  mkdirSync(path.join(options.dataDir, 'logs'), { recursive: true });
  const rng = new ChaosRng(options.seed);
  const recordingFile = path.join(options.dataDir, 'recording.jsonl');
  const recorder = new Recorder(stack.endpoints, recordingFile);
  let workload: Workload | undefined;
  const faults: FaultRecord[] = [];
  try {
    await stack.servicesUp();
    recorder.start(); // before lockaudit writes anything: the recording starts at revision 1
    const tokens = await stack.createTokens(options.workers);
    await stack.startPlatform();
    stamp(`lockaudit running (pid ${stack.platformPid}) on ${stack.apiUrl}; etcd ${stack.endpoints.join(',')}`);
    const etcd = stack.etcdClient();
    workload = new Workload(stack, tokens, etcd, rng, { seed: options.seed, workers: options.workers, rate: options.rate, until: Number.MAX_SAFE_INTEGER, foreignWrites: options.foreignWrites, badValues: options.badValues, log: stamp });
    workload.start();
    const ctx: FaultContext = { stack, recorder, workload, rng, electionTtlSeconds: options.electionTtlSeconds, serviceDownSeconds: options.serviceDownSeconds, massExpiryHolds: options.massExpiryHolds, restoreBump: options.restoreBump, log: stamp };
    const plan = schedule(options, rng);
    stamp(`schedule: ${plan.map((c) => c.join(' → ')).join(' ‖ ')}`);
    // --minutes is the workload's time, from the moment lockaudit answers (set-up under load can take a while).
    const end = Date.now() + options.minutes * 60_000 - 15_000;
    await sleep(15_000); // warm-up: classes registered, history to snapshot
    for (const cycle of plan) {
      if (options.faults.includes('restore')) await takeSnapshot(ctx);
      for (let i = 0; i < cycle.length; i++) {
        const kind = cycle[i] as FaultKind;
        faults.push(await inject(kind, ctx));
        // The rest of the time, spread over what is left, with seeded jitter.
        const left = cycle.length - i - 1 + plan.slice(plan.indexOf(cycle) + 1).reduce((n, c) => n + c.length, 0);
        const rest = left > 0 ? (end - Date.now() - left * 15_000) / left : 0;
        await sleep(Math.max(2_000, Math.min(60_000, rest * (0.7 + 0.6 * rng.next()))));
      }
    }
    if (Date.now() < end) await sleep(end - Date.now());
    stamp('workload stopping');
    await workload.stop();
    await sleep(3_000);
    const head = BigInt((await etcd.get('/sys/epoch').exec()).header.revision);
    const caughtUp = await waitCaughtUp(stack, tokens.investigator, head, 90_000);
    stamp(`final revision ${head}; tailer ${caughtUp ? 'caught up' : 'did NOT catch up within 90 s'}`);
    await recorder.waitFor(head, 30_000);
    const finalHolds = new Map<string, string>();
    for (const kv of (await etcd.getAll().prefix('/l/').revision(String(head)).exec()).kvs) finalHolds.set(kv.key.toString('utf8'), kv.create_revision);
    etcd.close();
    await stack.stopPlatform('SIGTERM');
    await recorder.stop();
    let archiveVerify: { ok: boolean; output: string };
    try {
      const out = await stack.cli(['archive', 'verify']);
      archiveVerify = { ok: true, output: out.stdout };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      archiveVerify = { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` || e.message };
    }
    const archiveTexts = await listArchive(stack);
    await execFileP(process.execPath, ['--import', 'tsx', path.join('test', 'chaos', 'storeDump.ts'), options.dataDir], { cwd: projectRoot, env: stack.env, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });
    const store = JSON.parse(readFileSync(path.join(options.dataDir, 'store.json'), 'utf8')) as StoreDump;
    const truthFile = workload.truthFile;
    const truth = existsSync(truthFile) ? readFileSync(truthFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Truth) : [];
    const result = check({ recording: readRecording(recordingFile), truth, store, finalRevision: head, finalHolds, archiveTexts, archiveVerify });
    const seconds = (Date.now() - began) / 1000;
    const report = renderReport(options, faults, result, store.gaps, seconds, caughtUp, workload.counts);
    return { result, faults, gaps: store.gaps, seconds, caughtUp, report };
  } finally {
    await workload?.stop().catch(() => {});
    await stack.stopPlatform('SIGKILL').catch(() => {});
    await recorder.stop().catch(() => {});
    if (!options.keep) await stack.servicesDown().catch(() => {});
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const options = parseOptions(process.argv.slice(2));
  const outcome = await runChaos(options, (m) => process.stderr.write(`chaos: ${m}\n`));
  process.stdout.write(`${outcome.report}\n`);
  // A fault that could not be injected is no pass either: the run did not test what it says.
  process.exit(outcome.result.violations.length > 0 || outcome.faults.some((f) => !f.ok) ? 1 : 0);
}
