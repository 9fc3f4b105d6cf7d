// A tailer replica as a child process, for tests that kill -9 it or run two
// replicas (chdb binds one data dir per process). Configured by the JSON in
// LOCKAUDIT_TEST_TAILER; reports on stdout, one JSON object per line:
// {"event":"leader"}, {"event":"checkpoint","revision":"…"}, {"event":"closed"}.
// SIGTERM: stop the watch, drain, final checkpoint, resign, exit 0.
import { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { migrate } from '../../core/migrations.js';
import { TailerReplica, type ReplicaOptions } from '../../tailer/replica.js';
import { readCheckpoint } from '../../tailer/offsets.js';

export interface ChildSpec {
  chdbPath: string;
  cluster: { name: string; endpoints: string[] };
  /** Written when the store has no checkpoint for the cluster yet. */
  initialCheckpoint?: string;
  replicaId?: string;
  options?: ReplicaOptions;
}

const say = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};

const spec = JSON.parse(process.env.LOCKAUDIT_TEST_TAILER ?? '{}') as ChildSpec;
const log = createLogger(process.env.LOCKAUDIT_TEST_TAILER_LOG ?? 'warn', { child: spec.replicaId ?? process.pid });
const store = new AuditStore({ mode: 'embedded', path: spec.chdbPath, database: 'lockaudit' });
await migrate(store);
if (spec.initialCheckpoint !== undefined && (await readCheckpoint(store, spec.cluster.name)) === 0n) {
  await store.insert('checkpoints', [{ cluster: spec.cluster.name, revision: spec.initialCheckpoint, leader: 'test-setup' }]);
}
const replica = new TailerReplica(
  {
    cluster: spec.cluster,
    store,
    log,
    replicaId: spec.replicaId,
    onLeader: (leader) => say({ event: leader ? 'leader' : 'follower', at: Date.now() }),
    onCheckpoint: (revision) => say({ event: 'checkpoint', revision: revision.toString() }),
  },
  spec.options ?? {},
);
replica.start();
say({ event: 'started', pid: process.pid });
process.once('SIGTERM', () => {
  void replica
    .close()
    .then(() => store.close())
    .then(() => {
      say({ event: 'closed' });
      process.exit(0);
    });
});
