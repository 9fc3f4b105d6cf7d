// The sink batches longer while its run catches up (issue 45): the store's CPU
// goes mostly per insert, not per row (test/bench/storeInsert.bench.ts), so a
// catch-up writes fewer, longer inserts; live, where a reader waits on each
// row, the short batches stay. Real chdb.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { BatchSink } from '../../tailer/sink/clickhouseSink.js';
import { otherEventBatch } from '../support/eventBatch.js';
import { tempStore, uniqueId } from '../support/env.js';

const log = createLogger('silent');

describe('tailer sink: the pace follows the catch-up', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  before(async () => ({ store, close } = await tempStore()));
  after(async () => close());

  it('inserts up to the catch-up bound while catching up and the live bound otherwise; every row durable once', async () => {
    const cluster = uniqueId('sp');
    const flushed: number[] = [];
    let catchingUp = true;
    const sink = new BatchSink(store, log, {
      maxRows: 5,
      maxDelayMs: 5,
      catchUp: { maxRows: 20, maxDelayMs: 60_000 },
      catchingUp: () => catchingUp,
      onFlush: (rows) => flushed.push(rows),
    });
    let durable = 0;
    for (let r = 1; r <= 50; r += 1) assert.equal(await sink.add(otherEventBatch(cluster, r), () => (durable += 1)), true);
    await sink.drain();
    const caughtUp = flushed.splice(0);
    assert.deepEqual(caughtUp, [20, 20, 10], 'catching up: inserts of the catch-up bound (the live one is 5), the rest at the drain');

    catchingUp = false;
    for (let r = 51; r <= 80; r += 1) assert.equal(await sink.add(otherEventBatch(cluster, r), () => (durable += 1)), true);
    await sink.drain();
    assert.ok(flushed.length >= 6 && flushed.every((rows) => rows <= 5), `live: inserts of at most 5 rows, saw ${JSON.stringify(flushed)}`);
    assert.equal(durable, 80);
    const [n] = await store.rows<{ n: string }>('SELECT toString(count()) AS n FROM {db:Identifier}.events WHERE cluster = {c:String}', { c: cluster });
    assert.equal(n?.n, '80');
  });

  it('without a catchingUp hook, or with catchUp false, keeps the live bound', async () => {
    for (const options of [{ catchUp: { maxRows: 20, maxDelayMs: 60_000 } }, { catchUp: false as const, catchingUp: () => true }]) {
      const cluster = uniqueId('sp');
      const flushed: number[] = [];
      const sink = new BatchSink(store, log, { maxRows: 5, maxDelayMs: 5, ...options, onFlush: (rows) => flushed.push(rows) });
      for (let r = 1; r <= 20; r += 1) await sink.add(otherEventBatch(cluster, r), () => undefined);
      await sink.drain();
      assert.ok(
        flushed.every((rows) => rows <= 5),
        `${JSON.stringify(options)}: ${JSON.stringify(flushed)}`,
      );
    }
  });
});
