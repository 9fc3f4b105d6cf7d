// Abort listeners stay bounded. A catch-up in many windows against a held
// sink (the events table detached: inserts retried, windows blocked on a full
// buffer) used to hang 2-3 abort listeners per window on the run's one
// AbortSignal: MaxListenersExceededWarning at 8 windows. Here: no such warning, and
// the sink's waits and retries leave at most one listener on the caller's
// signal while it waits and none after. Real etcd (the test services) and an
// embedded ClickHouse of this file's own.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { Registry } from 'prom-client';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { TailerReplica } from '../../tailer/replica.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { sleep } from '../../platform/retry.js';
import { BatchSink } from '../../tailer/sink/clickhouseSink.js';
import { tailerMetrics } from '../../tailer/tailerMetrics.js';
import { assertExactCapture, waitFor } from '../support/capture.js';
import { otherEventBatch } from '../support/eventBatch.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { Workload } from '../support/workload.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger('fatal'); // the detached table makes every insert fail: expected here, not news

let store: AuditStore;
let closeStore: () => Promise<void>;
let client: Etcd3;
const warnings: Error[] = [];
const onWarning = (w: Error): void => {
  if (w.name === 'MaxListenersExceededWarning') warnings.push(w);
};

before(async () => {
  ({ store, close: closeStore } = await tempStore());
  client = createEtcdClient({ name: 'test', endpoints });
  process.on('warning', onWarning);
});

after(async () => {
  process.off('warning', onWarning);
  client.close();
  await closeStore();
});

async function head(): Promise<bigint> {
  return BigInt((await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
}

/**
 * Detaches the grants table for `fn`, attaching it again whatever happens: every batch's
 * grant insert then fails and is retried. (Not `events`: the leader reads it at start to
 * check for an etcd restore, so without it no run would reach the sink.)
 */
async function withGrantsDetached<T>(fn: () => Promise<T>): Promise<T> {
  await store.command('DETACH TABLE {db:Identifier}.grants');
  try {
    return await fn();
  } finally {
    await store.command('ATTACH TABLE {db:Identifier}.grants');
  }
}

/** Detaches the events table for `fn` (a sink alone: nothing reads it at start), attaching it again whatever happens. */
async function withEventsDetached<T>(fn: () => Promise<T>): Promise<T> {
  await store.command('DETACH TABLE {db:Identifier}.events');
  try {
    return await fn();
  } finally {
    await store.command('ATTACH TABLE {db:Identifier}.events');
  }
}

describe('tailer: abort listeners stay bounded', () => {
  it(
    '8 catch-up windows (as in the benchmark) against a held sink, hundreds of retries: no MaxListenersExceededWarning; exact capture after',
    { timeout: 120_000 },
    async () => {
      const label = uniqueId('c');
      const w = new Workload(client, uniqueId('ns'));
      const from = (await head()) + 1n;
      await w.mixed(20); // ~220 revisions: 8 windows of ≥ 10
      const end = BigInt(await w.clock());
      await store.insert('checkpoints', [{ cluster: label, revision: (from - 1n).toString(), leader: 'test' }]);
      const registry = new Registry();
      const retries = async (): Promise<number> =>
        (await registry.getSingleMetric('lockaudit_tailer_sink_retries_total')?.get())?.values.find((v) => v.labels.cluster === label)?.value ?? 0;
      const replica = new TailerReplica(
        { cluster: { name: label, endpoints }, store, log, metrics: tailerMetrics(registry) },
        {
          electionTtlSeconds: 3,
          catchUpWindows: 8,
          splitMinRevisions: 10,
          checkpointIntervalMs: 100,
          // A buffer of a few rows: every window soon waits in sink.add while the inserts are retried.
          sink: { maxRows: 4, maxBufferedRows: 4, maxDelayMs: 5, initialBackoffMs: 5, maxBackoffMs: 20 },
        },
      );
      try {
        await withGrantsDetached(async () => {
          replica.start();
          await waitFor('200 insert retries', async () => ((await retries()) >= 200 ? true : undefined), 60_000, 100);
          assert.equal(await readCheckpoint(store, label), from - 1n, 'nothing checkpointed while the sink is held');
        });
        await waitFor(`checkpoint ≥ ${end}`, async () => ((await readCheckpoint(store, label)) >= end ? true : undefined), 60_000, 200);
        await assertExactCapture(store, label, client, from, end, w.expected);
      } finally {
        await replica.close();
      }
      await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
      assert.deepEqual(
        warnings.map((x) => x.message),
        [],
      );
    },
  );

  it("a sink held by failing inserts: one caller's waits and the retries leave ≤ 1 listener on its signal, none after", { timeout: 60_000 }, async () => {
    const cluster = uniqueId('c');
    let retried = 0;
    let durable = 0;
    const sink = new BatchSink(store, log, {
      maxRows: 5,
      maxBufferedRows: 5,
      maxDelayMs: 5,
      initialBackoffMs: 5,
      maxBackoffMs: 10,
      onRetry: () => (retried += 1),
    });
    const stop = new AbortController();
    const listeners = (): number => getEventListeners(stop.signal, 'abort').length;
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, listeners())), 2);
    try {
      // One caller adding in order (as a window does) blocks at the 6th row until inserts succeed again.
      let next = 1;
      let caller: Promise<void> | undefined;
      await withEventsDetached(async () => {
        caller = (async () => {
          for (; next <= 300; next += 1) assert.equal(await sink.add(otherEventBatch(cluster, next), () => (durable += 1), stop.signal), true);
        })();
        await waitFor('100 insert retries', () => (retried >= 100 ? true : undefined), 30_000, 10);
        assert.equal(next, 6, 'the caller waits for space');
        assert.equal(listeners(), 1, 'the waiting add listens once');
      });
      await caller; // inserts succeed again: the caller adds the rest, waiting for space many times
      await sink.drain();
      assert.equal(durable, 300);
      assert.equal(listeners(), 0, 'no listener left once the waits are over');
      assert.ok(most <= 1, `at most one listener at a time, saw ${most}`);
      // sleep() on a shared signal: each one removes its listener whether its timer or the signal ends it.
      for (let i = 0; i < 200; i += 1) await sleep(0, stop.signal);
      assert.equal(listeners(), 0);
      const early = sleep(60_000, stop.signal);
      assert.equal(listeners(), 1);
      stop.abort();
      await early;
      assert.equal(listeners(), 0);
    } finally {
      clearInterval(sampler);
      stop.abort();
      await sink.drain().catch(() => undefined);
    }
  });
});
