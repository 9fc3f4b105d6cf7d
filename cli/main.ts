// The lockaudit command line. Each subcommand validates its flags and
// answers bad input with a message naming the flag and exit code 2.
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { AuditStore } from '../core/clickhouse.js';
import { loadConfig, maskedConfig, type Config } from '../core/config.js';
import { createLogger } from '../core/logger.js';
import { assertDependenciesAnswer, checkAll } from '../platform/dependencyChecks.js';
import { isLockauditError, LockauditError } from '../core/errors.js';
import { originSecret, standaloneSecretProblem } from '../core/originSecret.js';
import { migrate } from '../core/migrations.js';
import { createS3Client } from '../core/s3.js';
import { ensureBuckets } from '../platform/buckets.js';
import { ensureAll } from '../services/install.js';
import { SERVICE_NAMES, servicesDown, servicesStatus, servicesUp, type ServiceName } from '../services/localServices.js';
import { roleSet, type RoleName } from '../roles/index.js';
import { lockCluster } from '../roles/lockEngine.js';
import { registerSimulate } from './simulate/command.js';
import { registerSpool } from './spool.js';
import { registerExportCommands } from './exportCommands.js';
import { registerDigestCommands } from './digestCommands.js';
import { registerKeyCommands } from './keyCommands.js';
import { registerTokenCommands } from './tokenCommands.js';
import { registerInvestigateCommands } from './investigateCommands.js';
import { startDemoWorkload, type DemoOptions } from './demo.js';
import { LOG_FORMATS, type LogFormat } from '../core/logger.js';
import { integer } from './flags.js';
import { assertPortFree, isAddressInUse, portInUse } from './portCheck.js';
import { closeAll, openRuntime, runUntilSignal, serveHeldStore, type RoleHandle } from '../platform/runtime.js';
import { reportToSupervisor } from '../platform/roleStatus.js';
import { servedStore } from '../core/embeddedOwner.js';
import { supervise } from './supervisor.js';
import { withStore } from './store.js';
import { followSupervisor } from './followSupervisor.js';
import { catchStopSignals } from '../platform/stopSignals.js';

const progress = (message: string): void => {
  process.stderr.write(`lockaudit: ${message}\n`);
};

function parseServices(value: string): ServiceName[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(SERVICE_NAMES as readonly string[]).includes(n));
  if (names.length === 0 || unknown.length > 0) throw new InvalidArgumentError(`expected a comma-separated list of ${SERVICE_NAMES.join(', ')}`);
  return names as ServiceName[];
}

async function runRoles(names: RoleName[], options: { buckets: boolean; demo?: DemoOptions; logFormat?: LogFormat }): Promise<void> {
  // A stop asked for while the process still starts ends it cleanly too: before the runtime opens, at once;
  // after, once the step under way is done, closing what started (platform/stopSignals.ts).
  const signals = catchStopSignals();
  // Under `lockaudit start` (cli/supervisor.ts) it stops when the supervisor goes, from the first moment.
  followSupervisor();
  // A role on its own (no supervisor, not all roles in one process) takes no generated key that no other role shares.
  if (typeof process.send !== 'function' && names.length === 1) {
    const problem = standaloneSecretProblem(loadConfig(), names[0] as string);
    if (problem) throw new LockauditError('LOCKAUDIT_ERR_ORIGIN_SECRET', problem);
  }
  // The api alone never uses the tailer's key: one given to it (a config file shared with the tailer) is one more copy to steal.
  if (names.length === 1 && names[0] === 'api' && loadConfig().tailerSecret)
    process.stderr.write(
      "lockaudit: warning: the api process was given the tailer's key (LOCKAUDIT_TAILER_SECRET or tailerSecret) and never uses it: remove it from this process's environment and config file (docs/keys.md)\n",
    );
  if (names.includes('api')) {
    const config = loadConfig();
    lockCluster(config); // an ambiguous lock cluster is refused before anything opens
    await signals.unlessStopped(assertPortFree(config.host, config.port));
  }
  {
    // Every role campaigns or grants through etcd; a role that creates the buckets needs S3 at once. Redis is not
    // asked: its clients reconnect by themselves, and a process refusing to start while it restarts would stop capture.
    const config = loadConfig();
    await signals.unlessStopped(assertDependenciesAnswer(config, { etcd: true, s3: options.buckets, redis: false }, createLogger('silent')));
  }
  if (signals.received) return;
  const runtime = await openRuntime({ buckets: options.buckets, logFormat: options.logFormat });
  const handles: RoleHandle[] = [];
  try {
    // First, so it closes last: CLI commands and other roles reach the embedded store through this process.
    const served = signals.received ? undefined : await serveHeldStore(runtime);
    if (served) handles.push(served);
    for (const name of names) if (!signals.received) handles.push(await roleSet[name](runtime));
    const api = handles.find((h): h is RoleHandle & { url: string } => 'url' in h);
    if (options.demo && api && !signals.received) handles.push(await startDemoWorkload(runtime, api.url, options.demo));
  } catch (err) {
    await closeAll(runtime, handles);
    // Taken between the check above and the listen: the same one line.
    throw isAddressInUse(err) ? portInUse(runtime.config.host, runtime.config.port, err) : err;
  }
  // Under `lockaudit start`: its status goes to the supervisor (the API is where the statuses go).
  const stopReporting = names.includes('api') ? () => undefined : reportToSupervisor(names.join('+'), runtime.metrics, runtime.health);
  try {
    await runUntilSignal(runtime, handles, signals);
  } finally {
    stopReporting();
  }
}

export function buildCli(): Command {
  const program = new Command('lockaudit')
    .description(
      'Audit and reporting for an etcd-backed distributed lock service.\nConfiguration: LOCKAUDIT_* environment variables and an optional YAML file (LOCKAUDIT_CONFIG); see docs/configuration.md.',
    )
    .version('0.1.0')
    .showHelpAfterError()
    // Throw instead of exiting so bad flags get exit code 2 (set in main()); inherited by every subcommand.
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(`lockaudit: ${str}`) });

  const demoOptions = (command: Command): Command =>
    command
      .option('--demo', 'also drive the API with the simulator (a demo workload) until stopped', false)
      .addOption(new Option('--demo-workers <n>', 'simulated workers for --demo').default(12).argParser(integer('--demo-workers', 1, 500)))
      .addOption(new Option('--demo-rate <perSecond>', 'acquires per second for --demo').default(8).argParser(integer('--demo-rate', 1, 5_000)));
  const logFormatOption = (command: Command): Command =>
    command.addOption(
      new Option('--log-format <format>', 'auto: human-readable (pino-pretty) when stdout is a terminal, JSON lines otherwise')
        .choices(LOG_FORMATS)
        .default('auto'),
    );
  type DemoFlags = { demo: boolean; demoWorkers: number; demoRate: number; logFormat: LogFormat };
  const demoOf = (opts: DemoFlags): DemoOptions | undefined => (opts.demo ? { workers: opts.demoWorkers, rate: opts.demoRate, roundSeconds: 120 } : undefined);

  logFormatOption(demoOptions(program.command('start')))
    .description(
      'run the platform: the store (embedded ClickHouse), the tailer (one replica per cluster), the worker and the lock/report API, each a supervised process of its own (--one-process: all in this one)',
    )
    .option('--one-process', "run every role in this one process instead (less memory; the catch-up then shares the API's event loop)", false)
    .action(async (opts: DemoFlags & { oneProcess: boolean }) => {
      if (opts.oneProcess) return runRoles(['tailer', 'api', 'worker'], { buckets: true, logFormat: opts.logFormat, demo: demoOf(opts) });
      const config = loadConfig();
      lockCluster(config);
      await assertPortFree(config.host, config.port);
      await assertDependenciesAnswer(config, { etcd: true, s3: true, redis: false }, createLogger('silent'));
      const log = ['--log-format', opts.logFormat];
      const demo = opts.demo ? ['--demo', '--demo-workers', String(opts.demoWorkers), '--demo-rate', String(opts.demoRate)] : [];
      const embedded = config.clickhouse.mode === 'embedded' && !servedStore(config.clickhouse.path);
      // A new deployment's proof keys before any role starts: its tailer key first (core/originSecret.ts).
      originSecret(config);
      const roles = [
        ...(embedded ? [{ name: 'store', args: log }] : []),
        { name: 'tailer', args: log },
        { name: 'worker', args: log },
        { name: 'api', args: [...log, ...demo] },
      ];
      process.exitCode = await supervise(config, roles, progress);
    });

  logFormatOption(demoOptions(program.command('api')))
    .description('run the API role (lock API, reports, exports, /metrics, /docs)')
    .action((opts: DemoFlags) => runRoles(['api'], { buckets: true, logFormat: opts.logFormat, demo: demoOf(opts) }));
  logFormatOption(program.command('tailer'))
    .description('run one tailer replica per configured etcd cluster (it campaigns for leadership)')
    .action((opts: { logFormat: LogFormat }) => runRoles(['tailer'], { buckets: false, logFormat: opts.logFormat }));
  logFormatOption(program.command('worker'))
    .description('run the job worker role (scheduled reports, exports, archiving)')
    .action((opts: { logFormat: LogFormat }) => runRoles(['worker'], { buckets: true, logFormat: opts.logFormat }));

  logFormatOption(program.command('store'))
    .description(
      'hold the embedded ClickHouse store and serve it to the other lockaudit processes (roles, CLI commands) until stopped: run it first, then `api`, `tailer` and `worker` in processes of their own',
    )
    .action(async (opts: { logFormat: LogFormat }) => {
      const signals = catchStopSignals();
      followSupervisor();
      const runtime = await openRuntime({ buckets: false, logFormat: opts.logFormat });
      if (signals.received) return runtime.store.close();
      const served = await serveHeldStore(runtime).catch(async (err: unknown) => {
        await runtime.store.close();
        throw err;
      });
      if (!served) {
        await runtime.store.close();
        throw new LockauditError(
          'LOCKAUDIT_ERR_VALIDATION',
          'lockaudit store serves the embedded store only: this configuration names a ClickHouse server (LOCKAUDIT_CLICKHOUSE_URL), or another process serves it already',
        );
      }
      const stopReporting = reportToSupervisor('store', runtime.metrics, runtime.health);
      try {
        await runUntilSignal(runtime, [served], signals);
      } finally {
        stopReporting();
      }
    });

  program
    .command('migrate')
    .description('apply the ClickHouse schema migrations in sql/ (idempotent) and create the S3 buckets')
    .option('--no-buckets', 'do not create the S3 buckets')
    .action(async (opts: { buckets: boolean }) => {
      const config = loadConfig();
      await withStore(config, async (store) => {
        const result = await migrate(store, { onApply: (m) => progress(`applied ${String(m.version).padStart(3, '0')}_${m.name}`) });
        progress(`schema up to date (${result.applied.length} applied, ${result.alreadyApplied} already applied)`);
      });
      if (opts.buckets) {
        await ensureBuckets(createS3Client(config.s3), config.s3);
        progress(`buckets ready: ${config.s3.historyBucket} (365-day lifecycle), ${config.s3.archiveBucket} (object lock, COMPLIANCE 7 years)`);
      }
    });

  program
    .command('sql')
    .description(
      "run one SQL statement on the audit store, for the runbook's hand procedures (operations.md): rows as JSON lines; tables are in the configured database, written {db:Identifier}.<table> or <database>.<table>. While the platform runs on embedded ClickHouse, it goes through the running process",
    )
    .argument('<statement>', 'the statement, e.g. "SHOW CREATE TABLE {db:Identifier}.events"')
    .action(async (statement: string) => {
      const config = loadConfig();
      await withStore(config, async (store) => {
        // A statement that answers rows prints them; any other (ALTER, INSERT, OPTIMIZE) runs as a command.
        try {
          if (/^\s*(SELECT|WITH|SHOW|DESCRIBE|DESC|EXPLAIN|EXISTS)\b/i.test(statement)) {
            for (const row of await store.rows<Record<string, unknown>>(statement)) process.stdout.write(`${JSON.stringify(row)}\n`);
          } else {
            await store.command(statement);
            progress('done');
          }
        } catch (err) {
          if (isLockauditError(err)) throw err;
          throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', `sql: ${((err as Error).message ?? String(err)).split('\n')[0]}`);
        }
      });
    });

  const services = program.command('services').description("manage the local servers (etcd, Redis, MinIO) on the project's own ports");
  services
    .command('install')
    .description('install what is missing: etcd and MinIO built from the Go module proxy into .tools/bin, redis-server from Debian')
    .action(async () => {
      await ensureAll(progress);
      progress('all local service binaries are installed');
    });
  services
    .command('up')
    .description('install what is missing, start what is not running, wait until each answers (twice is a no-op)')
    .option('--only <services>', `comma-separated subset of ${SERVICE_NAMES.join(',')}`, parseServices)
    .action(async (opts: { only?: ServiceName[] }) => {
      const config = loadConfig();
      const status = await servicesUp(config, { only: opts.only, progress });
      printStatus(status);
    });
  services
    .command('down')
    .description('stop the local servers this project started (by pid file)')
    .option('--only <services>', `comma-separated subset of ${SERVICE_NAMES.join(',')}`, parseServices)
    .action(async (opts: { only?: ServiceName[] }) => {
      const stopped = await servicesDown(loadConfig(), { only: opts.only, progress });
      progress(stopped.length ? `stopped ${stopped.join(', ')}` : 'nothing was running');
    });
  services
    .command('status')
    .description('say what runs where')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const status = await servicesStatus(loadConfig());
      if (opts.json) process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
      else printStatus(status);
    });

  program
    .command('doctor')
    .description('check every dependency the way the platform uses it; exits 1 when anything is wrong')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig();
      const store = new AuditStore(config.clickhouse);
      let results;
      try {
        // A missing schema is reported by the ClickHouse check; doctor never changes it.
        // Redis connection errors go to stderr: stdout carries the report (or its JSON).
        results = await checkAll(config, store, { deep: true, logger: createLogger(config.logLevel, { command: 'doctor' }, process.stderr) });
      } finally {
        await store.close();
      }
      if (opts.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
      else {
        for (const r of results) {
          process.stdout.write(`${r.ok ? 'ok  ' : 'FAIL'}  ${r.name.padEnd(16)} ${r.detail} (${r.ms} ms)\n`);
          if (!r.ok && r.fix) process.stdout.write(`      ${''.padEnd(16)} fix: ${r.fix}\n`);
        }
      }
      if (results.some((r) => !r.ok)) process.exitCode = 1;
    });

  program
    .command('config')
    .description('print the effective configuration (secrets masked) or the problems with it')
    .action(() => {
      process.stdout.write(`${JSON.stringify(maskedConfig(loadConfig()), null, 2)}\n`);
    });

  registerTokenCommands(program);
  registerInvestigateCommands(program);
  registerSimulate(program);
  registerSpool(program);
  registerExportCommands(program);
  registerDigestCommands(program);
  registerKeyCommands(program);

  return program;
}

function printStatus(status: Awaited<ReturnType<typeof servicesStatus>>): void {
  for (const s of status) {
    const state = s.running ? (s.answering ? 'running' : 'running, not answering') : s.answering ? 'answering (not started by us)' : 'stopped';
    process.stdout.write(`${s.instance.padEnd(8)} ${state.padEnd(24)} ${s.address}${s.pid ? `  pid ${s.pid}` : ''}\n`);
  }
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and --version end with code 0; a usage error (already printed) with 2.
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    if (isLockauditError(err)) {
      process.stderr.write(`lockaudit: ${err.message}\n`);
      // A shutdown past its deadline leaves clients open, the embedded engine among them: its native threads race
      // the process's exit handlers (libchdb segfaulted in about 1 exit in 10). End at once, without running them.
      if (err.code === 'LOCKAUDIT_ERR_SHUTDOWN_TIMEOUT') process.kill(process.pid, 'SIGKILL');
      process.exitCode = err.code.startsWith('LOCKAUDIT_ERR_CONFIG') ? 2 : 1;
      return;
    }
    throw err;
  }
}
