// The watch window's backpressure in bytes (tailer/watch/watchWindow.ts,
// issue 42 item 1): 24 values of 1 MiB written into the shared test etcd
// under the queue prefix (as an insider can with etcdctl), read by a window
// whose consumer stalls after the first revision. Bounded by events alone
// (the old rule: 24 events never reach 20 000) the window queued every value;
// with a 4 MiB bound it pauses the watch and queues at most the bound and one
// response more — and, resumed, still delivers every revision in order with
// its value whole. And one revision whose events outgrow a response (a txn
// rewriting 100 keys whose previous values are 100 KiB each: 10 MiB with
// their previous values) arrives in fragments and is delivered as one
// revision, every change with its previous value.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { WatchWindow } from '../../tailer/watch/watchWindow.js';
import { waitFor } from '../support/capture.js';
import { testConfig, uniqueId } from '../support/env.js';

const MIB = 1024 * 1024;
const VALUES = 24;
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

describe('the watch window bounded in bytes', { timeout: 120_000 }, () => {
  let client: Etcd3;
  let first = 0n;
  let last = 0n;
  const values = new Map<bigint, number>();
  before(async () => {
    client = createEtcdClient(testConfig().etcd.clusters[0]!);
    const prefix = `/q/${uniqueId('wwb')}/`;
    for (let i = 0; i < VALUES; i++) {
      const value = randomBytes(MIB / 2).toString('hex');
      const rev = BigInt((await client.put(`${prefix}${i}`).value(value).exec()).header.revision);
      if (first === 0n) first = rev;
      last = rev;
      values.set(rev, value.length);
    }
    // A later revision ends the windows below (as a catch-up window ends below etcd's head).
    await client.put(`${prefix}end`).value('end');
  });
  after(() => client?.close());

  /** Reads the first revision, stalls until the window pauses or 3 s pass, then reads the rest: the most it queued, whether it paused, what it delivered. */
  async function stalled(highWaterBytes: number): Promise<{ maxQueued: number; paused: boolean; delivered: Array<[bigint, number]> }> {
    const window = new WatchWindow(client, { start: first, end: last + 1n, highWaterBytes, log });
    const abort = new AbortController();
    const items = window.items(abort.signal)[Symbol.asyncIterator]();
    const delivered: Array<[bigint, number]> = [];
    const take = async (): Promise<boolean> => {
      const next = await items.next();
      if (next.done || next.value.kind === 'end') return false;
      if (next.value.kind === 'revision') delivered.push([next.value.changes.revision, next.value.changes.changes[0]?.kv.value.length ?? 0]);
      return true;
    };
    assert.ok(await take());
    const paused = await waitFor('the window paused', () => (window.paused ? true : undefined), 3_000, 20).catch(() => false);
    await sleep(500); // what was in flight when it paused lands (or is ignored) now
    const maxQueued = window.maxQueuedBytes;
    while (await take());
    abort.abort();
    return { maxQueued, paused, delivered };
  }

  it('delivers a revision that etcd splits over several responses as one revision', async () => {
    const prefix = `/q/${uniqueId('wwf')}/`;
    const keys = Array.from({ length: 100 }, (_, i) => `${prefix}${i}`);
    for (const k of keys) await client.put(k).value(randomBytes(50 * 1024).toString('hex'));
    const txn = await client
      .if(keys[0]!, 'Version', '>', 0)
      .then(...keys.map((k) => client.put(k).value('small')))
      .commit();
    const revision = BigInt(txn.header.revision);
    await client.put(`${prefix}end`).value('end');
    const window = new WatchWindow(client, { start: revision, end: revision + 1n, highWaterBytes: 4 * MIB, log });
    const abort = new AbortController();
    const got: Array<{ revision: bigint; changes: number; prevBytes: number }> = [];
    for await (const item of window.items(abort.signal)) {
      if (item.kind === 'end') break;
      if (item.kind === 'revision')
        got.push({
          revision: item.changes.revision,
          changes: item.changes.changes.length,
          prevBytes: item.changes.changes.reduce((n, c) => n + (c.prev?.value.length ?? 0), 0),
        });
    }
    assert.deepEqual(got, [{ revision, changes: 100, prevBytes: 100 * 100 * 1024 }]);
  });

  it('pauses at its byte bound and still delivers every revision whole', async () => {
    const bounded = await stalled(4 * MIB);
    assert.equal(bounded.paused, true, 'the watch paused at 4 MiB');
    assert.ok(bounded.maxQueued <= 4 * MIB + 4 * MIB, `queued at most the bound and one response: ${bounded.maxQueued} bytes`);
    assert.deepEqual(bounded.delivered, [...values]);

    // The same stall with no byte bound (the rule before it): every value waits in the process.
    const unbounded = await stalled(Number.MAX_SAFE_INTEGER);
    assert.equal(unbounded.paused, false);
    assert.ok(unbounded.maxQueued >= (VALUES - 2) * MIB, `unbounded, it queued ${unbounded.maxQueued} bytes`);
    assert.deepEqual(unbounded.delivered, [...values]);
  });
});
