// platform/retry.ts: the one backoff (bounded, jittered, exponential) and the retry loop with its classify hook.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff, backoffDelay, retry } from '../../platform/retry.js';

describe('backoff', () => {
  it('doubles from the first delay up to the cap, spread by the jitter', () => {
    const p = { initialMs: 100, maxMs: 1_000, jitter: 0.5 };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 40].map((a) => backoffDelay(p, a, () => 0.5)),
      [100, 200, 400, 800, 1_000, 1_000],
    );
    assert.equal(
      backoffDelay(p, 1, () => 0),
      50,
    );
    assert.equal(
      backoffDelay(p, 1, () => 1),
      150,
    );
    assert.equal(
      backoffDelay({ initialMs: 200, maxMs: 2_000, jitter: 0 }, 3, () => 0.9),
      800,
    );
  });

  it('counts failures until reset', () => {
    const b = new Backoff({ initialMs: 10, maxMs: 100, jitter: 0 });
    assert.deepEqual([b.next(), b.next(), b.next()], [10, 20, 40]);
    assert.equal(b.attempts, 3);
    b.reset();
    assert.equal(b.next(), 10);
  });
});

describe('retry', () => {
  const fast = { initialMs: 1, maxMs: 2 };

  it('retries what classify calls retriable until it succeeds', async () => {
    const seen: number[] = [];
    const v = await retry(
      async (attempt) => {
        if (attempt < 3) throw new Error(`fail ${attempt}`);
        return 'ok';
      },
      { ...fast, onRetry: (_e, a) => seen.push(a) },
    );
    assert.equal(v, 'ok');
    assert.deepEqual(seen, [1, 2]);
  });

  it('throws a permanent error at once, and the last error when attempts run out', async () => {
    let calls = 0;
    const permanent = new Error('bad data');
    await assert.rejects(
      retry(
        async () => {
          calls += 1;
          throw permanent;
        },
        { ...fast, classify: (e) => (e === permanent ? 'permanent' : 'retry') },
      ),
      /bad data/,
    );
    assert.equal(calls, 1);
    calls = 0;
    await assert.rejects(
      retry(
        async () => {
          calls += 1;
          throw new Error(`try ${calls}`);
        },
        { ...fast, maxAttempts: 4 },
      ),
      /try 4/,
    );
    assert.equal(calls, 4);
  });

  it('stops when the signal aborts, throwing its reason', async () => {
    const c = new AbortController();
    const reason = new Error('closing');
    const q = retry(
      async () => {
        throw new Error('down');
      },
      { initialMs: 60_000, maxMs: 60_000, signal: c.signal },
    );
    setTimeout(() => c.abort(reason), 10);
    await assert.rejects(q, /closing/);
  });
});
