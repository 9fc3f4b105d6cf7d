// `lockaudit simulate`: flags, and the in-process setup (the lock API built
// in this process on the configured etcd, API tokens created for the fleet)
// or the remote one (--url, tokens from --tokens FILE).
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { Registry } from 'prom-client';
import { ApiTokenVerifier } from '../../core/apiTokens.js';
import { AuditStore } from '../../core/clickhouse.js';
import { loadConfig, type Config } from '../../core/config.js';
import { LockauditError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { migrate } from '../../core/migrations.js';
import { buildApp } from '../../api/app.js';
import { HealthState } from '../../platform/health.js';
import { lockApi } from '../../api/routes/lockApi.js';
import { lockCluster, startLockEngine } from '../../roles/lockEngine.js';
import { startInstance, stopInstance } from '../../services/localServices.js';
import type { RoleHandle } from '../../platform/runtime.js';
import { integer } from '../flags.js';
import { createFleetTokens } from './fleetTokens.js';
import { simulate, workerIdentity, type OutageControl, type SimTokens } from './run.js';
import { HttpTransport, InjectTransport } from './transport.js';

interface SimulateFlags {
  seed: number;
  duration: number;
  workers: number;
  rate: number;
  outage: boolean;
  url?: string;
  tokens?: string;
  tailer: boolean;
  json: boolean;
}

function parseUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return value;
  } catch {
    // fall through
  }
  throw new InvalidArgumentError(`--url must be an http(s) URL, got "${value}"`);
}

const progress = (message: string): void => {
  process.stderr.write(`lockaudit simulate: ${message}\n`);
};

function outageControl(config: Config): OutageControl {
  if (!config.etcd.local || config.local.etcdMembers !== 3) {
    throw new LockauditError(
      'LOCKAUDIT_ERR_SIMULATE_SETUP',
      '--outage needs the local three-member etcd: set LOCKAUDIT_LOCAL_ETCD_MEMBERS=3 and run lockaudit services up',
    );
  }
  return {
    stop: async () => {
      await stopInstance(config, 'etcd-2');
      await stopInstance(config, 'etcd-3');
    },
    start: async () => {
      await startInstance(config, 'etcd-2');
      await startInstance(config, 'etcd-3');
    },
  };
}

function readTokens(file: string, workers: number): SimTokens {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new LockauditError('LOCKAUDIT_ERR_SIMULATE_SETUP', `--tokens: cannot read ${file} as JSON: ${(err as Error).message}`);
  }
  const t = parsed as { admin?: unknown; operators?: unknown; clients?: unknown };
  const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
  if (typeof t.admin !== 'string' || !strings(t.operators) || t.operators.length !== 2 || !strings(t.clients) || t.clients.length < workers) {
    throw new LockauditError(
      'LOCKAUDIT_ERR_SIMULATE_SETUP',
      `--tokens: ${file} must be {"admin": "...", "operators": ["...", "..."], "clients": [at least --workers (${workers}) tokens, one per distinct identity]}`,
    );
  }
  const [a, b] = t.operators as [string, string];
  return {
    admin: t.admin,
    operators: [
      { identity: 'operator-1', token: a },
      { identity: 'operator-2', token: b },
    ],
    clients: t.clients.map((token, i) => ({ identity: workerIdentity(i), token })),
  };
}

async function run(flags: SimulateFlags): Promise<void> {
  const config = loadConfig();
  const outage = flags.outage ? outageControl(config) : undefined;
  let stats;
  if (flags.url) {
    if (!flags.tokens)
      throw new LockauditError(
        'LOCKAUDIT_ERR_SIMULATE_SETUP',
        "--url needs --tokens FILE: the fleet's API tokens (the remote API's store is not this process's)",
      );
    stats = await simulate({
      seed: flags.seed,
      durationSeconds: flags.duration,
      workers: flags.workers,
      rate: flags.rate,
      api: new HttpTransport(flags.url),
      tokens: readTokens(flags.tokens, flags.workers),
      outage,
      progress,
    });
  } else {
    // In-process: the lock API on the configured etcd, in this process.
    const logger = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ? config.logLevel : 'warn');
    const store = new AuditStore(config.clickhouse);
    const roles: RoleHandle[] = [];
    try {
      await migrate(store);
      const runtime = { config, logger, store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: new Registry() };
      const tokens = await createFleetTokens(store, flags.workers);
      if (flags.tailer) {
        const { roleSet } = await import('../../roles/index.js');
        roles.push(await roleSet.tailer(runtime));
        progress('tailer started in this process');
      }
      const engine = await startLockEngine(runtime, { cluster: lockCluster(config) });
      roles.push(engine);
      const app = await buildApp(runtime, [lockApi(engine.service)]);
      roles.push({ name: 'api', close: () => app.close() });
      stats = await simulate({
        seed: flags.seed,
        durationSeconds: flags.duration,
        workers: flags.workers,
        rate: flags.rate,
        api: new InjectTransport(app),
        tokens,
        outage,
        progress,
      });
    } finally {
      for (const role of roles.reverse()) await role.close().catch((err: Error) => progress(`${role.name} did not close cleanly: ${err.message}`));
      await store.close();
    }
  }
  process.stdout.write(flags.json ? `${JSON.stringify(stats.summary(), null, 2)}\n` : `${stats.render()}\n`);
}

export function registerSimulate(program: Command): void {
  program
    .command('simulate')
    .description(
      'drive the lock API like a fleet: workers over several namespaces and classes (fenced and advisory, waivers healthy, expiring and expired), hot keys, durable-queue waiters, crashes whose sessions expire, session closes, force-releases by two operators, optionally an etcd outage; prints a summary. The same --seed gives the same plan; outcomes depend on timing.',
    )
    .addOption(new Option('--seed <n>', 'seed of every choice').default(1).argParser(integer('--seed', 0, 2 ** 31 - 1)))
    .addOption(new Option('--duration <seconds>', 'how long to run').default(60).argParser(integer('--duration', 1, 86_400)))
    .addOption(new Option('--workers <n>', 'simulated worker processes (each its own identity)').default(24).argParser(integer('--workers', 1, 1_000)))
    .addOption(new Option('--rate <perSecond>', 'target acquires per second, whole fleet').default(20).argParser(integer('--rate', 1, 10_000)))
    .option('--outage', 'stop two of the three local etcd members for the middle third of the run (needs LOCKAUDIT_LOCAL_ETCD_MEMBERS=3)', false)
    .addOption(new Option('--url <url>', 'drive a running API over HTTP instead of an in-process one (needs --tokens)').argParser(parseUrl))
    .option('--tokens <file>', 'with --url: JSON {"admin", "operators": [2], "clients": [one per worker]}')
    .option('--tailer', 'in-process only: also run the tailer role, so the audit store fills as the fleet works', false)
    .option('--json', 'print the summary as JSON', false)
    .action((flags: SimulateFlags) => run(flags));
}
