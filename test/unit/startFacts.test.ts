// The tailer's start decision (tailer/recovery/startDecision.ts startFrom)
// replayed from facts recorded on real runs (test/integration/startFrom.test.ts
// writes test/unit/fixtures/startFacts/ with RECORD_START_FACTS=1): each
// recording decides as it did, asking the same questions in the same order;
// and an edited answer changes the decision, so the replay can fail.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';
import { restoreFrom } from '../../tailer/recovery/restorePlan.js';
import { startFrom, type StartFacts, type WitnessReading } from '../../tailer/recovery/startDecision.js';
import { answersOf, decodeStart, replayingFacts, type RecordedStart } from '../support/startFacts.js';

const DIR = path.join(projectRoot, 'test/unit/fixtures/startFacts');
const recorded = new Map<string, RecordedStart>(
  readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => [f.replace(/\.json$/, ''), decodeStart(readFileSync(path.join(DIR, f), 'utf8'))]),
);
const get = (name: string): RecordedStart => {
  const r = recorded.get(name);
  assert.ok(r, `fixture ${name}`);
  return r;
};
const decide = (r: RecordedStart, facts = replayingFacts(r.asked), position = r.position) => startFrom(facts, r.checkpoint, r.timelineClusterId, position);
const planOf = (r: RecordedStart, facts: StartFacts) => {
  const seen = { head: r.position.head, clusterId: r.position.clusterId, previousClusterId: r.timelineClusterId, captured: r.checkpoint, why: '' };
  if (r.decision.kind === 'restore') Object.assign(seen, { why: r.decision.why, captured: r.decision.captured });
  return restoreFrom(facts, { checkpoint: r.checkpoint, seen, lastHead: 0n });
};
const witnessesOf = (r: RecordedStart): WitnessReading[] => r.asked.find((a) => a.fact === 'witnesses')?.answer as WitnessReading[];

describe('the start decision replayed from recorded facts', () => {
  it('holds a recording of each kind of start', () => {
    assert.deepEqual([...recorded.values()].map((r) => r.decision.kind).sort(), ['gap', 'restore', 'restore', 'restore', 'resume']);
  });

  for (const [name, r] of recorded) {
    it(`${name}: decides as recorded, asking the same facts${r.plan ? ', and plans the restore as recorded' : ''}`, async () => {
      const facts = replayingFacts(r.asked);
      const decision = await decide(r, facts);
      assert.deepEqual(decision, r.decision);
      assert.deepEqual(decision.kind === 'restore' ? await planOf(r, facts) : undefined, r.plan);
    });
  }

  it('a restore whose etcd shares nothing with the captured history plans a new history; one compacted since the divergence loses history to it', async () => {
    const r = get('restore-witness-contradicted');
    assert.equal(r.plan?.kind, 'rollback');
    const none = await planOf(r, answersOf(r.asked, { divergence: undefined }));
    assert.deepEqual([none.kind, none.after, none.resume, none.snapshot], ['new-history', 0n, 0n, false]);
    const bumped = r.checkpoint + 1_000_000n;
    const lost = await planOf(r, answersOf(r.asked, { lostAfter: bumped }));
    assert.deepEqual([lost.kind, lost.after, lost.resume, lost.compacted, lost.to], ['rollback', r.plan?.after, bumped, bumped, bumped]);
  });

  it('a restore seen by cluster id or head asks nothing of etcd history', () => {
    for (const name of ['restore-cluster-id', 'restore-head-below'])
      assert.deepEqual(
        get(name).asked.map((a) => a.fact),
        ['captured', 'divergence', 'lostAfter'], // then only the restore plan's two
        name,
      );
  });

  it('a witness etcd holds with another value, or not at all, is a restore', async () => {
    const r = get('resume-witnesses-intact');
    const readings = witnessesOf(r);
    assert.ok(readings.length >= 2 && readings.every((w) => w.kv), 'the recording read its witnesses, each intact');
    const edited = readings.map((w, i) => (i === 1 ? { ...w, kv: { modRevision: w.witness.revision, value: 'forged' } } : w));
    const changed = await decide(r, answersOf(r.asked, { witnesses: edited }));
    assert.equal(changed.kind, 'restore');
    assert.match(changed.kind === 'restore' ? changed.why : '', /with another value than etcd holds there/);
    const gone = readings.map((w, i) => (i === 1 ? { witness: w.witness, read: w.read } : w));
    const missing = await decide(r, answersOf(r.asked, { witnesses: gone }));
    assert.match(missing.kind === 'restore' ? missing.why : '', /has no such key/);
  });

  it('without the compaction the gap is a resume; without the contradicted witnesses the restore is a resume', async () => {
    const gap = get('gap-compacted');
    assert.deepEqual(await decide(gap, answersOf(gap.asked, { compactRevision: undefined })), { kind: 'resume', from: gap.checkpoint + 1n });
    const rw = get('restore-witness-contradicted');
    const intact = witnessesOf(rw).map((w) => ({ ...w, read: 'history' as const, kv: { modRevision: w.witness.revision, value: w.witness.value } }));
    assert.deepEqual(await decide(rw, answersOf(rw.asked, { witnesses: intact })), { kind: 'resume', from: rw.checkpoint + 1n });
  });

  it('a head moved back below the checkpoint is a restore whatever the facts say', async () => {
    const r = get('resume-witnesses-intact');
    const rewound = await decide(r, answersOf(r.asked), { ...r.position, head: r.checkpoint - 1n });
    assert.equal(rewound.kind, 'restore');
  });
});
