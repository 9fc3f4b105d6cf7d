// A tailer replica as a child process, for tests that kill -9 it or run two
// replicas (chdb binds one data dir per process). Configured by the JSON in
// LOCKAUDIT_TEST_TAILER; reports on stdout, one JSON object per line:
// {"event":"leader"}, {"event":"checkpoint","revision":"…"}, {"event":"closed"},
// and every 100 ms while it grew: {"event":"durable","events":n} (events the sink made durable).
// SIGTERM: stop the watch, drain, final checkpoint, resign, exit 0.
import { Registry } from 'prom-client';
import { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { migrate } from '../../core/migrations.js';
import { TailerReplica, type ReplicaOptions } from '../../tailer/replica.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { tailerMetrics } from '../../tailer/tailerMetrics.js';

export interface ChildSpec {
  /** The embedded store's data dir (this child then owns it), unless `store` is given. */
  chdbPath?: string;
  /** The store process (platform/storeServer.ts) to talk to over HTTP instead, as every role does to a shared store. */
  store?: { url: string; password: string };
  cluster: { name: string; endpoints: string[] };
  /** Written when the store has no checkpoint for the cluster yet. */
  initialCheckpoint?: string;
  replicaId?: string;
  options?: ReplicaOptions;
  /** The lock API's proof-of-origin key (utf8): holds without a valid proof are then foreign. */
  originSecret?: string;
}

const say = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};

const spec = JSON.parse(process.env.LOCKAUDIT_TEST_TAILER ?? '{}') as ChildSpec;
const log = createLogger(process.env.LOCKAUDIT_TEST_TAILER_LOG ?? 'warn', { child: spec.replicaId ?? process.pid });
const store = spec.store
  ? new AuditStore({ mode: 'server', url: spec.store.url, password: spec.store.password, user: 'lockaudit', database: 'lockaudit' })
  : new AuditStore({ mode: 'embedded', path: spec.chdbPath ?? '', database: 'lockaudit' });
await migrate(store);
if (spec.initialCheckpoint !== undefined && (await readCheckpoint(store, spec.cluster.name)) === 0n) {
  await store.insert('checkpoints', [{ cluster: spec.cluster.name, revision: spec.initialCheckpoint, leader: 'test-setup' }]);
}
const metrics = tailerMetrics(new Registry());
let durable = 0;
setInterval(() => {
  void metrics.events.get().then((m) => {
    const n = m.values.reduce((sum, v) => sum + v.value, 0);
    if (n !== durable) say({ event: 'durable', events: (durable = n) });
  });
}, 100).unref();
const replica = new TailerReplica(
  {
    cluster: spec.cluster,
    store,
    log,
    metrics,
    replicaId: spec.replicaId,
    onLeader: (leader) => say({ event: leader ? 'leader' : 'follower', at: Date.now() }),
    onCheckpoint: (revision) => say({ event: 'checkpoint', revision: revision.toString() }),
  },
  { ...spec.options, ...(spec.originSecret === undefined ? {} : { originSecret: Buffer.from(spec.originSecret, 'utf8') }) },
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
