// The tailer's start decision (tailer/recovery/startDecision.ts), case by case: resume,
// compaction gap, and each way a restore shows — without sampling keys.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { contradicts, decideStart, readFor, type StartInput, type Witness, type WitnessReading } from '../../tailer/recovery/startDecision.js';

const clock: Witness = { key: '/sys/clock', revision: 900n, value: '{"at":1}' };
const grant: Witness = { key: '/l/ns/burst-99', revision: 1_000n, value: '{"holder":"a"}' };

function input(over: Partial<StartInput> = {}): StartInput {
  return { checkpoint: 1_000n, timelineClusterId: 'c1', head: 1_200n, clusterId: 'c1', witnesses: [], ...over };
}
const history = (witness: Witness, kv?: { modRevision: bigint; value: string }): WitnessReading =>
  kv ? { witness, read: 'history', kv } : { witness, read: 'history' };
const atCompaction = (witness: Witness, kv?: { modRevision: bigint; value: string }): WitnessReading =>
  kv ? { witness, read: 'at-compaction', kv } : { witness, read: 'at-compaction' };
const same = (w: Witness) => ({ modRevision: w.revision, value: w.value });

describe('start decision', () => {
  it('resumes after the checkpoint when etcd still holds every witness at its revision', () => {
    assert.deepEqual(decideStart(input({ witnesses: [history(clock, same(clock)), history(grant, same(grant))] })), { kind: 'resume', from: 1_001n });
  });

  it('resumes with no witness (nothing captured yet) and with the head at the checkpoint', () => {
    assert.deepEqual(decideStart(input({ checkpoint: 0n, head: 0n })), { kind: 'resume', from: 1n });
    assert.deepEqual(decideStart(input({ head: 1_000n })), { kind: 'resume', from: 1_001n });
  });

  it('a compaction past the checkpoint is a gap up to the compaction revision when no witness contradicts', () => {
    const witnesses = [atCompaction(grant), atCompaction(clock, { modRevision: 1_100n, value: '{"at":2}' })]; // released since; ticked since
    assert.deepEqual(decideStart(input({ compactRevision: 1_150n, witnesses })), { kind: 'gap', from: 1_001n, to: 1_150n });
    assert.deepEqual(
      decideStart(input({ compactRevision: 1_000n, witnesses: [atCompaction(clock, same(clock))] })),
      { kind: 'resume', from: 1_001n },
      'the checkpoint revision itself readable: nothing lost',
    );
  });

  it('another cluster id is a restore, before anything else', () => {
    const d = decideStart(input({ clusterId: 'c2', head: 5n }));
    assert.equal(d.kind, 'restore');
    assert.match((d as { why: string }).why, /cluster id changed from c1 to c2/);
  });

  it('rows durable above a checkpoint held back: their witnesses count, and a head below them is a restore', () => {
    // A run captured up to 1 100 while its checkpoint stayed at 1 000; etcd was then restored to a snapshot at 1 050.
    const above: Witness = { key: '/l/ns/doomed-7', revision: 1_100n, value: '{"holder":"b"}' };
    const lower = decideStart(input({ captured: 1_100n, head: 1_050n, witnesses: [] }));
    assert.equal(lower.kind, 'restore');
    assert.match((lower as { why: string }).why, /below revision 1100, captured above the checkpoint 1000/);
    // The restored head passed 1 100 again with other writes: the witness above the checkpoint says so.
    const passed = decideStart(input({ captured: 1_100n, head: 1_300n, witnesses: [history(grant, same(grant)), history(above)] }));
    assert.equal(passed.kind, 'restore');
    assert.match((passed as { why: string }).why, /doomed-7 was captured put at revision 1100/);
    // Intact: resume after the checkpoint (the rows above it are written again, the same).
    assert.deepEqual(decideStart(input({ captured: 1_100n, head: 1_300n, witnesses: [history(above, same(above))] })), { kind: 'resume', from: 1_001n });
    assert.throws(() => contradicts(history(above, same(above)), 1_000n), RangeError, 'a witness above what the caller says was captured is a caller bug');
  });

  it('a head below the checkpoint is a restore', () => {
    const d = decideStart(input({ head: 999n }));
    assert.equal(d.kind, 'restore');
    assert.match((d as { why: string }).why, /head revision 999 is below the checkpoint 1000/);
  });

  it('head past the checkpoint again: a fresh key captured at the checkpoint absent from etcd there is a restore', () => {
    const d = decideStart(input({ head: 5_000n, witnesses: [history(clock, same(clock)), history(grant)] }));
    assert.equal(d.kind, 'restore');
    assert.match((d as { why: string }).why, /burst-99 was captured put at revision 1000 but etcd's revision 1000 has no such key/);
  });

  it('head past the checkpoint again: the clock last put lower at the captured revision is a restore', () => {
    const d = decideStart(input({ head: 5_000n, witnesses: [history(clock, { modRevision: 640n, value: '{"at":0}' })] }));
    assert.equal(d.kind, 'restore');
    assert.match((d as { why: string }).why, /last put at revision 640/);
  });

  it('the same revision with another value is a restore (a put at a reused revision)', () => {
    const d = decideStart(input({ witnesses: [history(grant, { modRevision: 1_000n, value: '{"holder":"b"}' })] }));
    assert.equal(d.kind, 'restore');
  });

  it('a bumped restore (--bump-revision --mark-compacted) reads as a restore, not a compaction, when the clock is back below its captured write', () => {
    const witnesses = [atCompaction(grant), atCompaction(clock, { modRevision: 640n, value: '{"at":0}' })];
    const d = decideStart(input({ head: 1_000_700n, compactRevision: 1_000_640n, witnesses }));
    assert.equal(d.kind, 'restore');
    assert.match((d as { why: string }).why, /\/sys\/clock was captured put at revision 900 but etcd has it back at revision 640/);
  });

  it('compacted: the same mod revision with another value is a restore; absent or newer says nothing', () => {
    assert.ok(contradicts(atCompaction(clock, { modRevision: 900n, value: 'x' }), 1_000n));
    assert.equal(contradicts(atCompaction(clock), 1_000n), undefined);
    assert.equal(contradicts(atCompaction(clock, { modRevision: 901n, value: 'x' }), 1_000n), undefined);
    assert.equal(contradicts(atCompaction(clock, same(clock)), 1_000n), undefined);
  });

  it('reads a witness at its own revision unless etcd compacted it', () => {
    assert.equal(readFor(clock, undefined), 'history');
    assert.equal(readFor(clock, 900n), 'history');
    assert.equal(readFor(clock, 901n), 'at-compaction');
  });

  it('refuses a witness above the checkpoint and negative revisions', () => {
    assert.throws(() => decideStart(input({ checkpoint: 999n, witnesses: [history(grant, same(grant))] })), RangeError);
    assert.throws(() => decideStart(input({ head: -1n })), RangeError);
  });
});
