// The tailer role: one replica per configured etcd cluster, all in this
// process. Each campaigns for its cluster's leadership; close() stops them
// in parallel, each in its own order (drain, checkpoint, resign last).
import type { RoleHandle, Runtime } from '../platform/runtime.js';
import { originSecret } from '../core/originSecret.js';
import { SHARED_TAILER_KEY_WARNING, tailerKey } from '../core/tailerSecret.js';
import { TailerReplica, type ReplicaOptions, type ReplicaStatus } from '../tailer/replica.js';
import { tailerMetrics } from '../tailer/tailerMetrics.js';

export interface TailerRoleHandle extends RoleHandle {
  replicas: readonly TailerReplica[];
  status(): ReplicaStatus[];
}

export async function startTailerRole(runtime: Runtime, overrides: ReplicaOptions = {}): Promise<TailerRoleHandle> {
  const { config } = runtime;
  const metrics = tailerMetrics(runtime.metrics);
  // The lag rules compare against it (deploy/prometheus).
  for (const c of config.etcd.clusters) metrics.compactionWindow.set({ cluster: c.name }, config.tailer.compactionWindowRevisions);
  // The origin secret first: a new deployment's creates the tailer key before it (core/originSecret.ts).
  const origin = originSecret(config);
  const tailer = tailerKey(config);
  if (tailer.source === 'origin') runtime.logger.warn(SHARED_TAILER_KEY_WARNING);
  const replicas = config.etcd.clusters.map(
    (cluster) =>
      new TailerReplica(
        { cluster, store: runtime.store, log: runtime.logger.child({ role: 'tailer', cluster: cluster.name }), metrics, health: runtime.health },
        {
          electionTtlSeconds: config.tailer.electionTtlSeconds,
          compactionWindowRevisions: config.tailer.compactionWindowRevisions,
          catchUpWindows: config.tailer.catchUpWindows,
          sink: {
            maxRows: config.tailer.batchMaxRows,
            maxDelayMs: config.tailer.batchMaxDelayMs,
            catchUp: { maxRows: config.tailer.catchUpBatchMaxRows, maxDelayMs: config.tailer.catchUpBatchMaxDelayMs },
          },
          dataDir: config.dataDir,
          originSecret: origin,
          tailerSecret: tailer.key,
          ...overrides,
        },
      ),
  );
  for (const r of replicas) r.start();
  runtime.logger.info({ clusters: config.etcd.clusters.map((c) => c.name) }, 'tailer replicas campaigning');
  let closing: Promise<void> | undefined;
  return {
    name: 'tailer',
    replicas,
    status: () => replicas.map((r) => r.status()),
    close: () => {
      closing ??= Promise.allSettled(replicas.map((r) => r.close())).then(() => undefined);
      return closing;
    },
  };
}
