import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Waiters } from '../../lock/waiters.js';
import { isLockauditError } from '../../core/errors.js';
import { classProblems } from '../../lock/classes.js';
import { prefixEnd } from '../../lock/kv.js';
import { Rng } from '../../cli/simulate/rng.js';

describe('lock waiters (in memory)', () => {
  it('FIFO: only the head may attempt; leaving hands the turn to the next at once', async () => {
    const w = new Waiters();
    const a = w.enter('k');
    const b = w.enter('k');
    const c = w.enter('k');
    assert.equal(a.isHead, true);
    assert.equal(b.isHead, false);
    const order: string[] = [];
    const pb = b.turn(Date.now() + 5_000).then((ok) => order.push(`b:${ok}`));
    const pc = c.turn(Date.now() + 5_000).then((ok) => order.push(`c:${ok}`));
    a.leave();
    await pb;
    b.leave();
    await pc;
    c.leave();
    assert.deepEqual(order, ['b:true', 'c:true']);
    assert.equal(w.waiting('k'), 0);
    assert.deepEqual(w.keys(), []);
  });

  it('refuses an acquire past the per-key or the process limit (429 naming the setting), and counts a leave once', () => {
    const w = new Waiters({ perKey: 2, total: 3 });
    const a1 = w.enter('a');
    const a2 = w.enter('a', 'broadcast');
    assert.throws(
      () => w.enter('a'),
      (err) =>
        isLockauditError(err, 'LOCKAUDIT_ERR_LIMIT_WAITERS') && /^a: 2 acquires already wait for this lock \(LOCKAUDIT_MAX_WAITERS_PER_KEY\)/.test(err.message),
    );
    const b = w.enter('b');
    assert.throws(
      () => w.enter('c'),
      (err) =>
        isLockauditError(err, 'LOCKAUDIT_ERR_LIMIT_WAITERS') && /3 acquires already wait in this API process \(LOCKAUDIT_MAX_WAITERS\)/.test(err.message),
    );
    assert.equal(w.total, 3);
    a2.leave();
    a2.leave(); // twice: counted once
    assert.equal(w.total, 2);
    const c = w.enter('c');
    assert.equal(w.total, 3);
    for (const t of [a1, b, c]) t.leave();
    assert.equal(w.total, 0);
    assert.deepEqual(w.keys(), []);
  });

  it('a waiter not at the head gives up at its deadline', async () => {
    const w = new Waiters();
    const a = w.enter('k');
    const b = w.enter('k');
    const t0 = Date.now();
    assert.equal(await b.turn(Date.now() + 50), false);
    assert.ok(Date.now() - t0 >= 45);
    a.leave();
    b.leave();
  });

  it('a hint wakes the head early; a hint that arrives between waits is not lost', async () => {
    const w = new Waiters();
    const a = w.enter('k');
    const t0 = Date.now();
    setTimeout(() => w.notify('k'), 20);
    await a.hint(5_000);
    assert.ok(Date.now() - t0 < 1_000);
    w.notify('k');
    const t1 = Date.now();
    await a.hint(5_000);
    assert.ok(Date.now() - t1 < 50, 'the stored hint returns at once');
    a.leave();
  });

  it('broadcast (durable) tickets are all heads and all woken', async () => {
    const w = new Waiters();
    const a = w.enter('k', 'broadcast');
    const b = w.enter('k', 'broadcast');
    assert.ok(a.isHead && b.isHead);
    const t0 = Date.now();
    setTimeout(() => w.notify('k'), 10);
    await Promise.all([a.hint(5_000), b.hint(5_000)]);
    assert.ok(Date.now() - t0 < 1_000);
    a.leave();
    b.leave();
  });
});

describe('lock helpers', () => {
  it('prefixEnd increments the last byte', () => {
    assert.equal(prefixEnd('/q/a/').toString(), '/q/a0');
    assert.equal(prefixEnd('/l/').toString(), '/l0');
  });

  it('class problems include the TTL range beside the §2 rules', () => {
    const ok = {
      name: 'c',
      namespace: 'n',
      purpose: 'correctness',
      enforcement: 'fenced',
      ttlSeconds: 15,
      tier: 'entity',
      onQuorumLoss: 'closed',
      fairness: 'memory',
      pauseTest: 'PT',
    } as const;
    assert.deepEqual(classProblems(ok), []);
    assert.deepEqual(classProblems({ ...ok, ttlSeconds: 301 }), ['ttlSeconds: must be between 5 and 300']);
  });

  it('the simulator PRNG is deterministic per seed and stream', () => {
    const draw = (seed: number, stream: number) => {
      const r = Rng.derive(seed, stream);
      return Array.from({ length: 5 }, () => r.int(0, 1_000_000));
    };
    assert.deepEqual(draw(7, 3), draw(7, 3));
    assert.notDeepEqual(draw(7, 3), draw(7, 4));
    assert.notDeepEqual(draw(7, 3), draw(8, 3));
  });
});

describe('quorum failure triage', () => {
  it('treats deadlines, no-leader and an open circuit breaker as unavailability, not a lease error', async () => {
    const { isUnavailable } = await import('../../lock/quorum.js');
    const { EtcdLeaseInvalidError, GRPCDeadlineExceededError } = await import('etcd3');
    assert.equal(isUnavailable(new GRPCDeadlineExceededError('deadline')), true);
    assert.equal(isUnavailable(new Error('etcdserver: no leader')), true);
    assert.equal(isUnavailable(Object.assign(new Error('Execution prevented because the circuit breaker is open'), { isBrokenCircuitError: true })), true);
    // A keepalive stream's raw grpc-js error (before: unhandled, a 500 to the caller).
    assert.equal(isUnavailable(Object.assign(new Error('1 CANCELLED: Call cancelled'), { code: 1 })), true);
    assert.equal(isUnavailable(Object.assign(new Error('14 UNAVAILABLE: Connection dropped'), { code: 14 })), true);
    assert.equal(isUnavailable(Object.assign(new Error('5 NOT_FOUND: x'), { code: 5 })), false);
    assert.equal(isUnavailable(new EtcdLeaseInvalidError('1')), false);
    assert.equal(isUnavailable(new Error('something else')), false);
  });
});
