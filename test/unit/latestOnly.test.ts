// LatestOnly (exporters/compliance/latestOnly.ts): progress written beside the work —
// push never waits, one write at a time, superseded values skipped, flush
// waits for the last, a failed write does not stop later ones.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LatestOnly } from '../../exporters/compliance/latestOnly.js';

describe('LatestOnly', () => {
  it('writes the first value and then only the newest, one at a time; flush waits for the last', async () => {
    const written: number[] = [];
    let release: () => void = () => undefined;
    let inFlight = 0;
    let maxInFlight = 0;
    const writer = new LatestOnly<number>(
      async (v) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        if (v === 1) await new Promise<void>((r) => (release = r));
        written.push(v);
        inFlight--;
      },
      () => assert.fail('no write fails'),
    );
    writer.push(1);
    await new Promise((r) => setImmediate(r));
    writer.push(2);
    writer.push(3);
    writer.push(4);
    assert.deepEqual(written, [], 'push does not wait for the write');
    release();
    await writer.flush();
    assert.deepEqual(written, [1, 4]);
    assert.equal(maxInFlight, 1);
    await writer.flush();
  });

  it('hands a failed write to onError and goes on with later values', async () => {
    const errors: unknown[] = [];
    const written: string[] = [];
    const writer = new LatestOnly<string>(
      async (v) => {
        if (v === 'bad') throw new Error('insert failed');
        written.push(v);
      },
      (err) => errors.push(err),
    );
    writer.push('bad');
    await writer.flush();
    writer.push('good');
    await writer.flush();
    assert.deepEqual(written, ['good']);
    assert.equal((errors[0] as Error).message, 'insert failed');
  });
});
