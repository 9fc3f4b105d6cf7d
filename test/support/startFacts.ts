// Start facts recorded from a real run and replayed (tailer/recovery/startDecision.ts
// StartFacts): the integration test records what a start asked of etcd and the
// store and what it was told; the unit tests replay those answers through
// startFrom, with no etcd, and check the same decision — and that an edited
// answer changes it.
import assert from 'node:assert/strict';
import type { RestorePlan } from '../../tailer/recovery/restorePlan.js';
import type { Start, StartFacts } from '../../tailer/recovery/startDecision.js';

export type FactName = keyof StartFacts;

export interface Asked {
  fact: FactName;
  args: unknown[];
  answer: unknown;
}

/** One start as recorded: its inputs, every fact asked in order, and the decision. */
export interface RecordedStart {
  scenario: string;
  checkpoint: bigint;
  timelineClusterId: string;
  position: { head: bigint; clusterId: string };
  asked: Asked[];
  decision: Start;
  /** A restore's plan (restorePlan.ts restoreFrom), decided from the same recording's later answers. */
  plan?: RestorePlan;
}

/** Wraps `facts` so that every question and answer is kept in `asked`. */
export function recordingFacts(facts: StartFacts): { facts: StartFacts; asked: Asked[] } {
  const asked: Asked[] = [];
  const wrap =
    <A extends unknown[], R>(fact: FactName, f: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const answer = await f(...args);
      asked.push({ fact, args, answer });
      return answer;
    };
  return {
    asked,
    facts: {
      captured: wrap('captured', facts.captured),
      raftRestarted: wrap('raftRestarted', facts.raftRestarted),
      compactRevision: wrap('compactRevision', facts.compactRevision),
      witnesses: wrap('witnesses', facts.witnesses),
      divergence: wrap('divergence', facts.divergence),
      lostAfter: wrap('lostAfter', facts.lostAfter),
    },
  };
}

const FACTS: readonly FactName[] = ['captured', 'raftRestarted', 'compactRevision', 'witnesses', 'divergence', 'lostAfter'];

/** A StartFacts whose every fact is `answer(fact)`. */
function factsOf(answer: (fact: FactName) => (...args: unknown[]) => Promise<never>): StartFacts {
  return Object.fromEntries(FACTS.map((f) => [f, answer(f)])) as unknown as StartFacts;
}

/** Facts that answer as recorded, in order; a question not asked in the recording (or with other arguments) fails the test. */
export function replayingFacts(asked: readonly Asked[]): StartFacts {
  let next = 0;
  const answer =
    (fact: FactName) =>
    async (...args: unknown[]): Promise<never> => {
      const a = asked[next++];
      assert.ok(a, `the start asked ${fact} beyond the recording`);
      assert.equal(fact, a.fact, `question ${next}`);
      assert.deepEqual(args, a.args, `the arguments of ${fact}`);
      return a.answer as never;
    };
  return factsOf(answer);
}

/** JSON with bigints as {"$bigint": "…"} (revisions exceed 2^53) and undefined kept (an argument or an answer can be). */
export function encodeStart(r: RecordedStart): string {
  return `${JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? { $bigint: v.toString() } : v === undefined ? { $undefined: true } : v), 2)}\n`;
}

export function decodeStart(text: string): RecordedStart {
  const revive = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(revive);
    if (v === null || typeof v !== 'object') return v;
    if ('$bigint' in v) return BigInt((v as { $bigint: string }).$bigint);
    if ('$undefined' in v) return undefined;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, revive(x)]));
  };
  return revive(JSON.parse(text)) as RecordedStart;
}

/** Facts that answer each question with the recording's answer to it, whatever the arguments: for edited recordings. */
export function answersOf(asked: readonly Asked[], edits: Partial<Record<FactName, unknown>> = {}): StartFacts {
  const answer = (fact: FactName) => async (): Promise<never> => (fact in edits ? edits[fact] : asked.find((a) => a.fact === fact)?.answer) as never;
  return factsOf(answer);
}
