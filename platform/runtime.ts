// The shared resources of one lockaudit process and its roles' lifecycle.
// Roles start in order and close in reverse (the tailer stops reading and
// checkpoints before clients close; leadership is given up last).
import type { Registry } from 'prom-client';
import { ApiTokenVerifier } from '../core/apiTokens.js';
import { randomBytes } from 'node:crypto';
import { AuditStore } from '../core/clickhouse.js';
import { loadConfig, maskedConfig, type Config } from '../core/config.js';
import { LockauditError } from '../core/errors.js';
import { createLogger, prettyDestination, resolveLogFormat, type LogFormat, type Logger } from '../core/logger.js';
import { createMetricsRegistry } from '../core/metrics.js';
import { migrate } from '../core/migrations.js';
import { createS3Client } from '../core/s3.js';
import { removeStoreEndpoint, writeStoreEndpoint } from '../core/embeddedOwner.js';
import { registerAlarmMetrics } from './alarmMetrics.js';
import { ensureBuckets } from './buckets.js';
import { settlesWithin } from './deadline.js';
import { HealthState } from './health.js';
import { startStoreServer } from './storeServer.js';
import type { StopSignals } from './stopSignals.js';

export interface Runtime {
  config: Config;
  logger: Logger;
  store: AuditStore;
  verifier: ApiTokenVerifier;
  health: HealthState;
  metrics: Registry;
}

export interface RoleHandle {
  name: string;
  close(): Promise<void>;
}

export async function openRuntime(
  options: { migrate?: boolean; buckets?: boolean; logEffectiveConfig?: boolean; logFormat?: LogFormat } = {},
): Promise<Runtime> {
  const config = loadConfig();
  // JSON unless asked (lockaudit start: auto, pretty on a terminal).
  const pretty = resolveLogFormat(options.logFormat ?? 'json', process.stdout.isTTY === true) === 'pretty';
  const logger = createLogger(config.logLevel, {}, pretty ? prettyDestination() : undefined);
  if (options.logEffectiveConfig !== false) logger.info({ config: maskedConfig(config) }, 'effective configuration');
  const store = new AuditStore(config.clickhouse);
  if (options.migrate !== false) {
    const result = await migrate(store, { onApply: (m) => logger.info({ migration: `${m.version}_${m.name}` }, 'migration applied') });
    logger.info({ applied: result.applied.length, alreadyApplied: result.alreadyApplied }, 'schema up to date');
  }
  if (options.buckets) await ensureBuckets(createS3Client(config.s3), config.s3);
  const metrics = createMetricsRegistry();
  const health = new HealthState();
  registerAlarmMetrics(metrics, health);
  return { config, logger, store, verifier: new ApiTokenVerifier(store), health, metrics };
}

/**
 * This process holds the embedded store (chdb: one process a data dir): it serves it to the other lockaudit
 * processes while it runs — a CLI command (verify, export, doctor, migrate, token) or another role finds it by
 * the endpoint file and talks to it as to a ClickHouse server (core/embeddedOwner.ts, storeServer.ts). On loopback,
 * any free port, a fresh password each start. Undefined when the store is a server, or served by another process.
 * Closed after every other role of the process (push it first).
 */
export async function serveHeldStore(runtime: Runtime): Promise<RoleHandle | undefined> {
  const target = runtime.store.target;
  if (target.mode !== 'embedded') return undefined;
  const password = randomBytes(24).toString('base64url');
  const server = await startStoreServer({ path: target.path, password, listen: { port: 0 } });
  writeStoreEndpoint(target.path, { url: server.address, password, pid: process.pid });
  runtime.logger.info({ url: server.address }, 'serving the embedded store to other lockaudit processes (CLI commands, roles) on loopback');
  return {
    name: 'store-server',
    close: async () => {
      removeStoreEndpoint(target.path);
      await server.close();
    },
  };
}

/** How long a shutdown past its deadline still waits for the store to close (see runUntilSignal). */
const STORE_CLOSE_AT_DEADLINE_MS = 2_000;

/**
 * Runs roles until SIGINT/SIGTERM (caught since the process began: `signals`), then closes them in reverse order, then the store — within
 * config.shutdownTimeoutMs. A client stuck on a dead dependency (etcd, Redis) must not keep the
 * process alive forever: past the deadline, or at a second signal, this throws naming what did not
 * drain, and the CLI ends the process with SIGKILL (cli/main.ts), whatever is still open.
 */
export async function runUntilSignal(runtime: Runtime, roles: RoleHandle[], signals: StopSignals): Promise<void> {
  runtime.logger.info({ signal: await signals.next() }, 'shutting down');
  const deadlineMs = runtime.config.shutdownTimeoutMs;
  const progress: CloseProgress = { closing: undefined, left: [] };
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    closeAll(runtime, roles, progress).then(() => 'drained' as const),
    new Promise<'deadline'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), deadlineMs);
    }),
    signals.next().then(() => 'signal' as const),
  ]);
  clearTimeout(timer);
  if (outcome === 'drained') return;
  const why = outcome === 'deadline' ? `shutdown did not finish within ${deadlineMs} ms (shutdownTimeoutMs)` : 'a second signal arrived during shutdown';
  const stuck = `${progress.closing ? `still closing ${progress.closing}` : 'still closing'}${progress.left.length ? `; not closed: ${progress.left.join(', ')}` : ''}`;
  runtime.logger.error({ closing: progress.closing, notClosed: progress.left, deadlineMs }, `${why}: ${stuck}`);
  // The store still closes, briefly bounded, so the engine writes what it holds before the CLI ends the process
  // (cli/main.ts: with SIGKILL — an engine left open crashed the ordinary exit).
  if (!(await settlesWithin(runtime.store.close(), STORE_CLOSE_AT_DEADLINE_MS)))
    runtime.logger.error({ waitedMs: STORE_CLOSE_AT_DEADLINE_MS }, 'the audit store did not close in time either');
  throw new LockauditError('LOCKAUDIT_ERR_SHUTDOWN_TIMEOUT', `${why}; exiting anyway: ${stuck}`);
}

/** What closeAll is doing, for the shutdown deadline's message. */
export interface CloseProgress {
  closing: string | undefined;
  left: string[];
}

export async function closeAll(runtime: Runtime, roles: RoleHandle[], progress: CloseProgress = { closing: undefined, left: [] }): Promise<void> {
  const order = [...roles].reverse();
  progress.left = [...order.map((r) => r.name), 'clickhouse'];
  for (const role of order) {
    progress.closing = progress.left.shift();
    try {
      await role.close();
      runtime.logger.info({ role: role.name }, 'role stopped');
    } catch (err) {
      runtime.logger.error({ err, role: role.name }, 'role failed to stop cleanly');
    }
  }
  progress.closing = progress.left.shift();
  await runtime.store.close();
  progress.closing = undefined;
}
