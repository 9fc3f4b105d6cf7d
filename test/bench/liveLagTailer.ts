// The tailer of liveLagAtLockRate.bench.ts, in a process of its own so its CPU
// and memory are its own: it tails the suite's etcd from its head into an
// embedded ClickHouse of its own and reports to its parent over IPC each
// durable watermark (with the time it became durable) and, every second, its
// CPU time, RSS (V8's heap, anonymous and file-backed pages), every 5 s what
// its embedded ClickHouse holds. A `purge` message purges the engine's
// allocator and reports what it freed; a `stop` message closes it.
import { readFileSync } from 'node:fs';
import { createLogger } from '../../core/logger.js';
import { TailerReplica } from '../../tailer/replica.js';
import { createEtcdClient } from '../../core/etcd.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

export type TailerMessage =
  | { type: 'ready' }
  | { type: 'watermark'; revision: string; at: number }
  | {
      type: 'usage';
      cpuMs: number;
      rssBytes: number;
      heapBytes: number;
      heapTotalBytes: number;
      externalBytes: number;
      anonBytes: number;
      fileBytes: number;
      at: number;
    }
  | { type: 'purged'; before: number; after: number }
  | { type: 'engine'; metrics: Record<string, number>; at: number }
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
  {
    cluster: { name: label, endpoints },
    store,
    log: createLogger('warn'),
    onWatermark: (r) => send({ type: 'watermark', revision: r.toString(), at: Date.now() }),
  },
  { electionTtlSeconds: 5, checkpointIntervalMs: 250, sink: { maxDelayMs: 50 } },
);
replica.start();
/** Resident anonymous and file-backed bytes (/proc/self/status): mapped code (libchdb) is file-backed and shared. */
const resident = (): { anonBytes: number; fileBytes: number } => {
  let status = '';
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    return { anonBytes: 0, fileBytes: 0 };
  }
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { anonBytes: kb('RssAnon'), fileBytes: kb('RssFile') };
};
const usage = (): void => {
  const cpu = process.cpuUsage();
  // RSS split: V8's heap and the buffers it tracks (external, array buffers) against the rest, which is native
  // (embedded ClickHouse's caches and merges, gRPC): which side grows says where to look.
  const m = process.memoryUsage();
  send({
    type: 'usage',
    cpuMs: (cpu.user + cpu.system) / 1000,
    rssBytes: m.rss,
    heapBytes: m.heapUsed,
    heapTotalBytes: m.heapTotal,
    externalBytes: m.external + m.arrayBuffers,
    ...resident(),
    at: Date.now(),
  });
};
// What embedded ClickHouse says it holds (its memory tracker, caches, merges): the native side, named.
const ENGINE_METRICS = [
  'MemoryTracking',
  'MergesMutationsMemoryTracking',
  'MarkCacheBytes',
  'PrimaryIndexCacheBytes',
  'UncompressedCacheBytes',
  'QueryConditionCacheBytes',
  'PageCacheBytes',
  'CompiledExpressionCacheBytes',
];
const engine = async (): Promise<void> => {
  const rows = await store.rows<{ metric: string; value: string }>(
    'SELECT metric, toString(value) AS value FROM system.metrics WHERE metric IN {names:Array(String)}',
    { names: ENGINE_METRICS },
  );
  send({ type: 'engine', metrics: Object.fromEntries(rows.map((r) => [r.metric, Number(r.value)])), at: Date.now() });
};
let engineBusy = false;
let ticks = 0;
const sampler = setInterval(() => {
  usage();
  // Every 5 s: a query on the tailer's own engine, kept rare beside its inserts.
  if (engineBusy || ticks++ % 5 !== 0) return;
  engineBusy = true;
  engine()
    .catch(() => undefined)
    .finally(() => (engineBusy = false));
}, 1_000);
usage();
send({ type: 'ready' });
process.on('message', (m: { type?: string }) => {
  if (m.type === 'purge') {
    // What of the native side is memory the engine's allocator keeps for reuse (jemalloc's dirty pages), not held.
    void (async () => {
      const before = resident().anonBytes;
      // A build without jemalloc refuses it: nothing freed, and the bench goes on.
      await store.command('SYSTEM JEMALLOC PURGE').catch(() => undefined);
      send({ type: 'purged', before, after: resident().anonBytes });
    })();
    return;
  }
  if (m.type !== 'stop') return;
  clearInterval(sampler);
  void (async () => {
    await replica.close();
    await close();
    send({ type: 'closed' });
    process.disconnect();
  })();
});
