// The tailer's row buffer is bounded in bytes of values as well as in rows
// (issue 42 item 1): etcd takes values up to 1.5 MiB, and 60 000 buffered rows
// of those were gigabytes. Real chdb.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { BatchSink } from '../../tailer/sink/clickhouseSink.js';
import { otherEventBatch } from '../support/eventBatch.js';
import { tempStore, uniqueId } from '../support/env.js';

const log = createLogger('silent');

describe('tailer sink: bounded in bytes', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  before(async () => ({ store, close } = await tempStore()));
  after(async () => close());

  it('inserts at most maxBatchBytes of values at once and blocks past maxBufferedBytes; a value larger than both goes alone', async () => {
    const cluster = uniqueId('sb');
    const flushed: number[] = [];
    const sink = new BatchSink(store, log, {
      maxRows: 1_000,
      maxBatchBytes: 1_000,
      maxBufferedBytes: 2_000,
      maxDelayMs: 5,
      onFlush: (rows) => flushed.push(rows),
    });
    let durable = 0;
    let most = 0;
    for (let r = 1; r <= 40; r += 1) {
      assert.equal(await sink.add(otherEventBatch(cluster, r, 'v'.repeat(600)), () => (durable += 1)), true);
      most = Math.max(most, sink.bufferedBytes);
    }
    assert.equal(await sink.add(otherEventBatch(cluster, 41, 'v'.repeat(5_000)), () => (durable += 1)), true);
    await sink.drain();
    assert.equal(durable, 41);
    assert.ok(most < 2_000 + 600, `buffered at most the bound and one entry, saw ${most} characters (by rows alone: 24 000)`);
    assert.ok(
      flushed.every((rows) => rows === 1),
      `each insert holds one 600-character row (two pass 1 000): ${JSON.stringify(flushed)}`,
    );
    assert.equal(sink.bufferedBytes, 0);
    const [n] = await store.rows<{ n: string; big: string }>(
      'SELECT toString(count()) AS n, toString(max(length(value))) AS big FROM {db:Identifier}.events WHERE cluster = {c:String}',
      { c: cluster },
    );
    assert.deepEqual(n, { n: '41', big: '5000' });
  });
});
