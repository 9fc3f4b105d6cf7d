// The shared resources of one lockaudit process and its roles' lifecycle.
// Roles start in order and close in reverse (the tailer stops reading and
// checkpoints before clients close; leadership is given up last).
import type { Registry } from 'prom-client';
import { ApiTokenVerifier } from '../core/apiTokens.js';
import { AuditStore } from '../core/clickhouse.js';
import { loadConfig, maskedConfig, type Config } from '../core/config.js';
import { createLogger, type Logger } from '../core/logger.js';
import { createMetricsRegistry } from '../core/metrics.js';
import { migrate } from '../core/migrations.js';
import { createS3Client } from '../core/s3.js';
import { ensureBuckets } from './buckets.js';
import { HealthState } from './health.js';

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

export async function openRuntime(options: { migrate?: boolean; buckets?: boolean; logEffectiveConfig?: boolean } = {}): Promise<Runtime> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  if (options.logEffectiveConfig !== false) logger.info({ config: maskedConfig(config) }, 'effective configuration');
  const store = new AuditStore(config.clickhouse);
  if (options.migrate !== false) {
    const result = await migrate(store, { onApply: (m) => logger.info({ migration: `${m.version}_${m.name}` }, 'migration applied') });
    logger.info({ applied: result.applied.length, alreadyApplied: result.alreadyApplied }, 'schema up to date');
  }
  if (options.buckets) await ensureBuckets(createS3Client(config.s3), config.s3);
  const metrics = createMetricsRegistry();
  return { config, logger, store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics };
}

/** Runs roles until SIGINT/SIGTERM, then closes them in reverse order, then the store. */
export async function runUntilSignal(runtime: Runtime, roles: RoleHandle[]): Promise<void> {
  await new Promise<void>((resolve) => {
    const stop = (signal: string): void => {
      runtime.logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await closeAll(runtime, roles);
}

export async function closeAll(runtime: Runtime, roles: RoleHandle[]): Promise<void> {
  for (const role of [...roles].reverse()) {
    try {
      await role.close();
      runtime.logger.info({ role: role.name }, 'role stopped');
    } catch (err) {
      runtime.logger.error({ err, role: role.name }, 'role failed to stop cleanly');
    }
  }
  await runtime.store.close();
}
