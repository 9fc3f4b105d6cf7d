// `npm run chaos -- --seed N --minutes M`: a Jepsen-style fault-injection run
// against the real stack (three-member etcd, Redis, MinIO, embedded
// ClickHouse, lockaudit as a child process), checked at the end against an
// independent recorder. See test/chaos/README.md. Exits 1 on any violation.
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client as MinioClient } from 'minio';
import { projectRoot } from '../../core/paths.js';
import { ensureEtcdutl } from './buildEtcdutl.js';
import { check, exitCode, gapTable, verdictJson, type CheckResult } from './checker.js';
import { BACKGROUND_KINDS, FAULT_KINDS, faultSeconds, inject, takeSnapshot, type FaultContext, type FaultKind, type FaultRecord } from './faults.js';
import { readRecording, Recorder } from './recorder.js';
import { ChaosRng } from './rng.js';
import { Stack } from './stack.js';
import { EVENTS_FILE, GRANTS_FILE, readStoreDump, type StoreDump } from './storeDump.js';
import { Pump } from './pump.js';
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
  insiderWrites?: boolean;
  sessionLapses?: boolean;
  workers: number;
  rate: number;
  /** Throughput-pump loops (acquire, release at once): 0 in the default profile. */
  pump: number;
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
  /** Where the run's artefacts were kept (re-check them with `npm run chaos -- --check DIR`). */
  artefacts: string;
}

/** What a run leaves for the checker besides recording.jsonl, truth.jsonl and store.json (final.json). */
interface FinalState {
  finalRevision: string;
  finalHolds: Record<string, string>;
  archiveTexts: string[];
  archiveVerify: { ok: boolean; output: string };
  grantsExport?: { ok: boolean; output: string };
  caughtUp: boolean;
  seed: number;
  workloadCounts: Record<string, number>;
}

const ARTEFACTS = ['recording.jsonl', 'truth.jsonl', 'store.json', 'faults.json', 'final.json'] as const;
/** Written by store dumps that keep their events and grants beside store.json (storeDump.ts). */
const OPTIONAL_ARTEFACTS = [EVENTS_FILE, GRANTS_FILE] as const;

/** Reads a run's artefacts from `dir` and checks them: the same check a run ends with. */
export function checkDir(dir: string): { result: CheckResult; faults: FaultRecord[]; final: FinalState } {
  const read = (name: string): string => readFileSync(path.join(dir, name), 'utf8');
  const final = JSON.parse(read('final.json')) as FinalState;
  const faults = JSON.parse(read('faults.json')) as FaultRecord[];
  const truth = existsSync(path.join(dir, 'truth.jsonl'))
    ? read('truth.jsonl')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Truth)
    : [];
  const result = check({
    recording: readRecording(path.join(dir, 'recording.jsonl')),
    truth,
    store: readStoreDump(dir, read('store.json')),
    faults,
    finalRevision: BigInt(final.finalRevision),
    finalHolds: new Map(Object.entries(final.finalHolds)),
    archiveTexts: final.archiveTexts,
    archiveVerify: final.archiveVerify,
    grantsExport: final.grantsExport,
    caughtUp: final.caughtUp,
  });
  return { result, faults, final };
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
      profile: { type: 'string', default: 'default' },
      skip: { type: 'string', default: '' },
      workers: { type: 'string', default: '8' },
      pump: { type: 'string' },
      rate: { type: 'string', default: '8' },
      'mass-expiry-holds': { type: 'string', default: '5000' },
      'service-down-seconds': { type: 'string', default: '30' },
      'election-ttl': { type: 'string', default: '5' },
      keep: { type: 'boolean', default: false },
      'restore-bump': { type: 'string' },
    },
  });
  const all = [...FAULT_KINDS, ...BACKGROUND_KINDS] as string[];
  const listed = (v: string): string[] =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const chosen = values.faults === 'all' ? all : values.faults === 'none' ? [] : listed(values.faults);
  const skip = listed(values.skip);
  for (const name of [...chosen, ...skip]) if (!all.includes(name)) throw new Error(`unknown fault kind "${name}"; known: ${all.join(', ')}`);
  const enabled = chosen.filter((k) => !skip.includes(k));
  const seed = Number(values.seed);
  const portBase = Number(values['port-base']);
  // realistic: the lock API at the rate this machine allows (many workers, no pacing to speak of), so restore
  // detection, the lease witness and fail-open run under load rather than at a few operations a second.
  const profile = PROFILES[values.profile ?? 'default'];
  if (!profile) throw new Error(`unknown profile "${values.profile}"; known: ${Object.keys(PROFILES).join(', ')}`);
  return {
    seed,
    minutes: Number(values.minutes),
    portBase,
    apiPort: Number(values['api-port'] ?? portBase + 100),
    dataDir: path.resolve(values['data-dir'] ?? path.join(projectRoot, `.lockaudit-chaos-${portBase}`)),
    faults: FAULT_KINDS.filter((k) => enabled.includes(k)),
    foreignWrites: enabled.includes('foreign-writes'),
    badValues: enabled.includes('bad-values'),
    insiderWrites: enabled.includes('insider-writes'),
    sessionLapses: enabled.includes('session-lapses'),
    workers: values.profile === 'default' ? Number(values.workers) : profile.workers,
    rate: values.profile === 'default' ? Number(values.rate) : profile.rate,
    pump: values.pump !== undefined ? Number(values.pump) : profile.pump,
    massExpiryHolds: Number(values['mass-expiry-holds']),
    serviceDownSeconds: Number(values['service-down-seconds']),
    electionTtlSeconds: Number(values['election-ttl']),
    keep: values.keep ?? false,
    restoreBump: values['restore-bump'] === undefined ? undefined : Number(values['restore-bump']),
  };
}

/** Load profiles: the simulator's workers and the fleet's acquires a second (each followed by its release). */
const PROFILES: Record<string, { workers: number; rate: number; pump: number }> = {
  default: { workers: 8, rate: 8, pump: 0 },
  // The simulated fleet (holds of ~150 ms to seconds, hot keys) plus the pump's loops at the API's own pace.
  realistic: { workers: 64, rate: 1500, pump: 48 },
};

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
  const client = new MinioClient({
    endPoint: url.hostname,
    port: Number(url.port),
    useSSL: url.protocol === 'https:',
    accessKey: s3.accessKey,
    secretKey: s3.secretKey,
    region: s3.region,
  });
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

/**
 * The tailer reached `head` of the current etcd — and recorded every restore the run made first: a restore it has not
 * recorded yet leaves the old timeline's checkpoint above the restored head, which alone would read as caught up
 * (the 30-minute run, seed 7: a fifth restore interrupted by a tailer pause, never recorded, passed as caught up).
 */
async function waitCaughtUp(stack: Stack, token: string, head: bigint, restores: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const res = await stack.api('GET', '/v1/tailers', token);
    const items = (res.body.items ?? []) as Array<{ checkpoint?: string }>;
    const gaps = await stack.api('GET', '/v1/gaps?limit=1000', token);
    const recorded = ((gaps.body.items ?? []) as Array<{ kind?: string }>).filter((g) => g.kind === 'restore').length;
    if (recorded >= restores && items.some((t) => t.checkpoint !== undefined && BigInt(t.checkpoint) >= head)) return true;
    await sleep(1_000);
  }
  return false;
}

function renderReport(
  options: Pick<ChaosOptions, 'seed' | 'minutes' | 'foreignWrites' | 'badValues' | 'insiderWrites' | 'sessionLapses'>,
  faults: FaultRecord[],
  r: CheckResult,
  seconds: number,
  caughtUp: boolean,
  workloadCounts: Map<string, number>,
): string {
  const lines: string[] = [];
  const row = (a: string, b: string | number): void => {
    lines.push(`  ${a.padEnd(44)} ${String(b)}`);
  };
  lines.push(`chaos run: seed ${options.seed}, ${options.minutes} min planned, ${Math.round(seconds)} s taken`);
  lines.push('faults injected');
  for (const kind of FAULT_KINDS) {
    const mine = faults.filter((f) => f.kind === kind);
    if (mine.length)
      row(kind, `${mine.filter((f) => f.ok).length}${mine.some((f) => !f.ok) ? ` (+${mine.filter((f) => !f.ok).length} failed to inject)` : ''}`);
  }
  const background: Record<(typeof BACKGROUND_KINDS)[number], boolean | undefined> = {
    'foreign-writes': options.foreignWrites,
    'bad-values': options.badValues,
    'insider-writes': options.insiderWrites,
    'session-lapses': options.sessionLapses,
  };
  for (const kind of BACKGROUND_KINDS) row(`${kind} (background)`, background[kind] ? 'on' : 'off');
  lines.push('workload');
  for (const [k, v] of [...workloadCounts.entries()].sort()) row(k, v);
  lines.push('record');
  row('eras (1 + restores)', r.eras);
  row('restores without a gap of their own', r.byKind.get('restore-unrecorded') ?? 0);
  row('holds granted by the API (recorded)', r.apiGrants);
  row('hand-put epochs (no API grant until the advance)', r.handEpochs);
  row('changes checked', r.changesChecked);
  row('  captured (current timeline)', r.captured);
  row('  captured, kept as rolled back', r.capturedRolledBack);
  row('  quarantined', r.quarantined);
  row('  excused by an earned gap', r.inGaps);
  row('lost', r.byKind.get('lost') ?? 0);
  row('rolled back and lost from the record', r.byKind.get('rolled-back-lost') ?? 0);
  row('misrecorded (another value at that revision)', r.byKind.get('misrecorded') ?? 0);
  row('flips (one change, two contents)', r.byKind.get('flip') ?? 0);
  row('phantom rows', r.phantoms);
  row('rolled-back rows above the recording (unverifiable)', r.unverifiableTail);
  row('hand deletes no tailer could witness (put, deleted, lease revoked while none ran)', r.unwitnessable);
  row('misclassified', r.byKind.get('misclassified') ?? 0);
  row('protected grants checked', r.grantsChecked);
  row('overlapping protected grants', r.byKind.get('overlap') ?? 0);
  row('token order violations', r.byKind.get('token-order') ?? 0);
  row('open grants not held in etcd at the end', r.byKind.get('ghost-open-grant') ?? 0);
  row('force records / not archived', `${r.forceRecords} / ${r.byKind.get('not-archived') ?? 0}`);
  row('forged force records archived as genuine', r.byKind.get('forged-archived') ?? 0);
  row(
    'gaps unexplained / too wide / shared',
    `${r.byKind.get('gap-unexplained') ?? 0} / ${r.byKind.get('gap-too-wide') ?? 0} / ${r.byKind.get('gap-shared') ?? 0}`,
  );
  row('archive verify', r.byKind.has('archive-verify') ? 'FAILED' : 'ok');
  row('grants export (every grant checked against its events)', r.byKind.has('grants-export') ? 'REFUSED' : 'ok');
  row('tailer caught up at the end', caughtUp ? 'yes' : 'NO');
  lines.push(...gapTable(r));
  if (r.violations.length) {
    lines.push(`VIOLATIONS: ${r.violations.length} (${[...r.byKind.entries()].map(([k, n]) => `${k} ${n}`).join(', ')}); first of each kind:`);
    for (const kind of r.byKind.keys())
      for (const v of r.violations.filter((x) => x.kind === kind).slice(0, 3))
        lines.push(`  ${v.kind}: ${v.key} @ ${v.revision || '-'} (era ${v.era}): expected ${v.expected}; got ${v.got}`);
  } else lines.push('no violations');
  for (const reason of r.invalid) lines.push(`INVALID RUN: ${reason}`);
  lines.push(`verdict: ${r.status} (exit ${exitCode(r)})`);
  return lines.join('\n');
}

export async function runChaos(options: ChaosOptions, log: (m: string) => void): Promise<ChaosOutcome> {
  const began = Date.now();
  const stamp = (m: string): void => log(`[${String(Math.round((Date.now() - began) / 1000)).padStart(4)} s] ${m}`);
  if (options.faults.includes('restore')) await ensureEtcdutl(stamp);
  const stack = new Stack({
    dataDir: options.dataDir,
    portBase: options.portBase,
    apiPort: options.apiPort,
    electionTtlSeconds: options.electionTtlSeconds,
    log: stamp,
  });
  await stack.servicesDown().catch(() => {});
  rmSync(options.dataDir, { recursive: true, force: true });
  mkdirSync(path.join(options.dataDir, 'logs'), { recursive: true });
  const rng = new ChaosRng(options.seed);
  const recordingFile = path.join(options.dataDir, 'recording.jsonl');
  const recorder = new Recorder(stack.endpoints, recordingFile);
  let workload: Workload | undefined;
  let pump: Pump | undefined;
  const faults: FaultRecord[] = [];
  try {
    await stack.servicesUp();
    recorder.start(); // before lockaudit writes anything: the recording starts at revision 1
    const tokens = await stack.createTokens(options.workers);
    await stack.startPlatform();
    stamp(`lockaudit running (pid ${stack.platformPid}) on ${stack.apiUrl}; etcd ${stack.endpoints.join(',')}`);
    const etcd = stack.etcdClient();
    workload = new Workload(stack, tokens, etcd, rng, {
      seed: options.seed,
      workers: options.workers,
      rate: options.rate,
      until: Number.MAX_SAFE_INTEGER,
      foreignWrites: options.foreignWrites,
      badValues: options.badValues,
      insiderWrites: options.insiderWrites,
      sessionLapses: options.sessionLapses,
      log: stamp,
    });
    workload.start();
    const ctx: FaultContext = {
      stack,
      recorder,
      workload,
      rng,
      electionTtlSeconds: options.electionTtlSeconds,
      serviceDownSeconds: options.serviceDownSeconds,
      massExpiryHolds: options.massExpiryHolds,
      restoreBump: options.restoreBump,
      log: stamp,
    };
    const plan = schedule(options, rng);
    stamp(`schedule: ${plan.map((c) => c.join(' → ')).join(' ‖ ')}`);
    // --minutes is the workload's time, from the moment lockaudit answers (set-up under load can take a while).
    const end = Date.now() + options.minutes * 60_000 - 15_000;
    await sleep(15_000); // warm-up: classes registered, history to snapshot
    if (options.pump > 0) {
      pump = new Pump(stack, tokens.pumpClients, { seed: options.seed, loops: options.pump });
      pump.start();
      stamp(`throughput pump: ${options.pump} loops of acquire → release`);
    }
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
    await Promise.all([workload.stop(), pump?.stop()]);
    if (pump) {
      workload.inc('pump: acquire+release cycles', pump.cycles);
      workload.inc('pump: refused or failed', pump.refused);
      workload.inc('pump: cycles a second (mean over the run)', Math.round(pump.rate));
      stamp(`pump: ${pump.cycles} cycles, ${pump.rate.toFixed(1)} a second`);
    }
    await sleep(3_000);
    const head = BigInt((await etcd.get('/sys/epoch').exec()).header.revision);
    const caughtUp = await waitCaughtUp(stack, tokens.investigator, head, faults.filter((f) => f.kind === 'restore').length, 90_000);
    stamp(`final revision ${head}; tailer ${caughtUp ? 'caught up' : 'did NOT catch up within 90 s'}`);
    const finalHolds: Record<string, string> = {};
    for (const kv of (await etcd.getAll().prefix('/l/').revision(String(head)).exec()).kvs) finalHolds[kv.key.toString('utf8')] = kv.create_revision;
    await stack.stopPlatform('SIGTERM');
    // Everything lockaudit wrote (its last clock ticks too) is in the recording before it stops: the checker then names
    // any row of the store the recording lacks.
    const last = BigInt((await etcd.get('/sys/epoch').exec()).header.revision);
    if (!(await recorder.waitFor(last, 30_000))) stamp(`the recorder did not reach ${last}: the check will say the run is invalid`);
    etcd.close();
    await recorder.stop();
    let archiveVerify: { ok: boolean; output: string };
    try {
      const out = await stack.cli(['archive', 'verify']);
      archiveVerify = { ok: true, output: out.stdout };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      archiveVerify = { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` || e.message };
    }
    // The run's grants exported as an auditor would: the export checks every grant against its events (grantsCheck.ts).
    let grantsExport: { ok: boolean; output: string };
    try {
      const range = ['--from', new Date(began - 3_600_000).toISOString(), '--to', new Date(Date.now() + 60_000).toISOString()];
      const out = await stack.cli(['export', 'grants', ...range, '--format', 'csv', '--out', path.join(options.dataDir, 'grants.csv')], 600_000);
      grantsExport = { ok: true, output: out.stdout };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      grantsExport = { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` || e.message };
    }
    stamp(`grants export: ${grantsExport.ok ? 'written' : `REFUSED: ${grantsExport.output.slice(0, 300)}`}`);
    const archiveTexts = await listArchive(stack);
    // What the run knows goes to disk before the store is dumped: a dump that fails can be made again by hand
    // (`node --import tsx test/chaos/storeDump.ts DATA_DIR`) and the run re-checked, instead of lost.
    if (!existsSync(workload.truthFile)) writeFileSync(workload.truthFile, '');
    const final: FinalState = {
      finalRevision: String(head),
      finalHolds,
      archiveTexts,
      archiveVerify,
      grantsExport,
      caughtUp,
      seed: options.seed,
      workloadCounts: Object.fromEntries(workload.counts),
    };
    writeFileSync(path.join(options.dataDir, 'faults.json'), JSON.stringify(faults, null, 1));
    writeFileSync(path.join(options.dataDir, 'final.json'), JSON.stringify(final));
    // A realistic 30-minute run's rows outgrow V8's default heap (4 GB: the dump died in JSON.parse at 3.3 M revisions).
    await execFileP(process.execPath, ['--max-old-space-size=16384', '--import', 'tsx', path.join('test', 'chaos', 'storeDump.ts'), options.dataDir], {
      cwd: projectRoot,
      env: stack.env,
      timeout: 600_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    // Kept outside the data dir (the next run wipes that): re-check with `npm run chaos -- --check DIR`.
    const artefacts = path.join(projectRoot, 'test-artifacts', 'chaos', `${new Date(began).toISOString().replace(/[:.]/g, '')}-seed${options.seed}`);
    mkdirSync(artefacts, { recursive: true });
    for (const name of ARTEFACTS) copyFileSync(path.join(options.dataDir, name), path.join(artefacts, name));
    for (const name of OPTIONAL_ARTEFACTS)
      if (existsSync(path.join(options.dataDir, name))) copyFileSync(path.join(options.dataDir, name), path.join(artefacts, name));
    const { result } = checkDir(artefacts);
    writeFileSync(path.join(artefacts, 'verdict.json'), verdictJson(result));
    const seconds = (Date.now() - began) / 1000;
    const report = `${renderReport(options, faults, result, seconds, caughtUp, workload.counts)}\nartefacts: ${artefacts}`;
    writeFileSync(path.join(artefacts, 'report.txt'), `${report}\n`);
    const store = JSON.parse(readFileSync(path.join(artefacts, 'store.json'), 'utf8')) as StoreDump;
    return { result, faults, gaps: store.gaps, seconds, caughtUp, report, artefacts };
  } finally {
    await workload?.stop().catch(() => {});
    await pump?.stop().catch(() => {});
    await stack.stopPlatform('SIGKILL').catch(() => {});
    await recorder.stop().catch(() => {});
    if (!options.keep) await stack.servicesDown().catch(() => {});
  }
}

/** `--check DIR`: the verdict on kept artefacts, without a new run. */
function recheck(dir: string): number {
  const { result, faults, final } = checkDir(dir);
  writeFileSync(path.join(dir, 'verdict.json'), verdictJson(result));
  const counts = new Map(Object.entries(final.workloadCounts ?? {}));
  process.stdout.write(
    `${renderReport({ seed: final.seed ?? 0, minutes: 0, foreignWrites: true, badValues: true, insiderWrites: true, sessionLapses: true }, faults, result, 0, final.caughtUp, counts)}\nverdict written to ${path.join(dir, 'verdict.json')}\n`,
  );
  return exitCode(result);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const argv = process.argv.slice(2);
  const at = argv.indexOf('--check');
  if (at >= 0) {
    const dir = argv[at + 1];
    if (!dir) throw new Error("usage: npm run chaos -- --check DIR (a run's artefacts: recording.jsonl, truth.jsonl, store.json, faults.json, final.json)");
    process.exit(recheck(path.resolve(dir)));
  }
  const options = parseOptions(argv);
  const outcome = await runChaos(options, (m) => process.stderr.write(`chaos: ${m}\n`));
  process.stdout.write(`${outcome.report}\n`);
  // 0 clean, 1 violations, 2 invalid (the checker was blind, or a fault was not injected as planned).
  process.exit(exitCode(outcome.result));
}
