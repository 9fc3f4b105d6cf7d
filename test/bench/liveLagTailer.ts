// The tailer of liveLagAtLockRate.bench.ts, in a process of its own so its CPU
// and memory are its own: it tails the suite's etcd from its head into an
// embedded ClickHouse of its own and reports to its parent over IPC each
// durable watermark (with the time it became durable) and, every second, its
// CPU time, RSS and V8 heap. A `stop` message closes it.
import { createLogger } from '../../core/logger.js';
import { TailerReplica } from '../../tailer/replica.js';
import { createEtcdClient } from '../../core/etcd.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

export type TailerMessage =
  | { type: 'ready' }
  | { type: 'watermark'; revision: string; at: number }
  | { type: 'usage'; cpuMs: number; rssBytes: number; heapBytes: number; externalBytes: number; at: number }
  | { type: 'closed' };

const send = (m: TailerMessage): void => {
  process.send?.(m);
};

const endpoints = testConfig().etcd.clusters[0]?.endpoints ?? [];
const { store, close } = await tempStore();
const label = uniqueId('livelag');
const client = createEtcdClient({ name: 'bench-head', endpoints });
const head = (await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision;
client.close();
await store.insert('checkpoints', [{ cluster: label, revision: String(head), leader: 'bench' }]);
const replica = new TailerReplica(
  { cluster: { name: label, endpoints }, store, log: createLogger('warn'), onWatermark: (r) => send({ type: 'watermark', revision: r.toString(), at: Date.now() }) },
  { electionTtlSeconds: 5, checkpointIntervalMs: 250, sink: { maxDelayMs: 50 } },
);
replica.start();
const usage = (): void => {
  const cpu = process.cpuUsage();
  // RSS split: V8's heap and the buffers it tracks (external, array buffers) against the rest, which is native
  // (embedded ClickHouse's caches and merges, gRPC): which side grows says where to look.
  const m = process.memoryUsage();
  send({ type: 'usage', cpuMs: (cpu.user + cpu.system) / 1000, rssBytes: m.rss, heapBytes: m.heapUsed, externalBytes: m.external + m.arrayBuffers, at: Date.now() });
};
const sampler = setInterval(usage, 1_000);
usage();
send({ type: 'ready' });
process.on('message', (m: { type?: string }) => {
  if (m.type !== 'stop') return;
  clearInterval(sampler);
  void (async () => {
    await replica.close();
    await close();
    send({ type: 'closed' });
    process.disconnect();
  })();
});
