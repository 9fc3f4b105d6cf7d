// A tailer replica's whole control flow (tailer/replicaLoop.ts runReplica) with no etcd and no store: each
// start reads facts recorded on real runs (test/unit/fixtures/startFacts/, written by startFrom.test.ts) and
// the test sees the one action carried out — tail from the checkpoint, record a gap then tail from what it
// returns, record a restore then campaign again — and what follows a run's end, a lost lease, a failed
// campaign or a failed action: the leader's duties always stopped and leadership always resigned last.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { createLogger } from '../../core/logger.js';
import { projectRoot } from '../../core/paths.js';
import type { UnfinishedRestore } from '../../tailer/recovery/restores.js';
import { runReplica, type Leadership, type ReplicaPorts, type StartState, type TailEnd } from '../../tailer/replicaLoop.js';
import { decodeStart, replayingFacts, type RecordedStart } from '../support/startFacts.js';

const recorded = (name: string): RecordedStart => decodeStart(readFileSync(path.join(projectRoot, 'test/unit/fixtures/startFacts', `${name}.json`), 'utf8'));

/** A start as a real run read it: the recording's checkpoint, position and timeline, its facts replayed in order. */
const stateOf = (r: RecordedStart, unfinished?: UnfinishedRestore): StartState => ({
  checkpoint: r.checkpoint,
  position: r.position,
  timeline: { generation: 0, timeline: 0, clusterId: r.timelineClusterId, resumeRevision: 0n, detectedMs: 0 },
  gaps: [],
  unfinished,
  // A finished-off restore asks nothing: an empty recording fails any question.
  facts: replayingFacts(unfinished ? [] : r.asked),
});

interface Lead extends Leadership {
  n: number;
}

type Step = (closing: AbortController, lost: (err: Error) => void) => TailEnd | Promise<TailEnd>;

interface Script {
  starts: StartState[];
  /** What each run of the pipeline ends with (in order). */
  tails: Step[];
  /** Campaigns that fail before one succeeds (in order: true = fails). */
  campaignFails?: boolean[];
  gapReturns?: bigint;
  /** The election's lease is lost while the gap is recorded. */
  gapLosesLease?: boolean;
  restoreThrows?: boolean;
  /** The replica is closed while a campaign fails (the n-th campaign, 1-based). */
  closeOnCampaign?: number;
}

/** Runs the loop on scripted ports; returns every call in order. Ends when the script runs out (closing aborted). */
async function drive(script: Script): Promise<string[]> {
  const calls: string[] = [];
  const closing = new AbortController();
  const lines: string[] = [];
  const log = createLogger('info', {}, { write: (s: string) => void lines.push(s) });
  let terms = 0;
  let lost: (err: Error) => void = () => {};
  const starts = [...script.starts];
  const tails = [...script.tails];
  const fails = [...(script.campaignFails ?? [])];
  const ports: ReplicaPorts<Lead> = {
    campaign: async (_signal, onLost) => {
      calls.push('campaign');
      if (calls.filter((c) => c === 'campaign').length === script.closeOnCampaign) {
        closing.abort();
        throw new Error('closed under the campaign');
      }
      if (fails.shift()) throw new Error('etcd unavailable');
      lost = onLost;
      terms += 1;
      return { term: BigInt(terms * 10), n: terms };
    },
    beginLeading: (l) => void calls.push(`begin ${l.term}`),
    endLeading: async (l) => void calls.push(`end ${l.term}`),
    resign: async (l) => void calls.push(`resign ${l.term}`),
    setLeader: (b) => void calls.push(`leader ${b}`),
    readStart: async () => {
      const s = starts.shift();
      if (!s) {
        closing.abort();
        throw new Error('script ended');
      }
      calls.push('read');
      return s;
    },
    restore: async (l, state, action) => {
      calls.push(
        `restore ${l.term} from ${state.checkpoint}: ${action.seen.why} (captured ${action.seen.captured}, was ${action.seen.previousClusterId}, now ${action.seen.clusterId} at ${action.seen.head})`,
      );
      if (script.restoreThrows) throw new Error('leadership lost during the restore snapshot');
    },
    gap: async (l, state, to) => {
      if (script.gapLosesLease) lost(new Error('lease expired'));
      calls.push(`gap ${l.term} ${state.checkpoint + 1n}..${to}`);
      return script.gapReturns ?? to;
    },
    tail: async (l, _state, checkpoint, signal) => {
      calls.push(`tail ${l.term} from ${checkpoint}`);
      const step = tails.shift();
      if (!step) {
        closing.abort();
        return { reason: 'stopped', checkpoint };
      }
      const end = await step(closing, (err) => lost(err));
      calls.push(`ended ${end.reason}${end.rewound ? ' rewound' : ''}${signal.aborted ? ' (signal aborted)' : ''}`);
      return end;
    },
    sleep: async (ms) => void calls.push(`sleep ${ms}`),
    phase: (p) => void calls.push(`phase ${p}`),
  };
  await runReplica(ports, closing.signal, log);
  return calls.filter((c) => !c.startsWith('phase ') || c === 'phase backoff');
}

/** One leadership's calls: elected, one start read, `acted`, its duties stopped, resigned last. */
const leadership = (term: number, ...acted: string[]): string[] => [
  'campaign',
  'leader true',
  `begin ${term}`,
  'read',
  ...acted,
  `end ${term}`,
  'leader false',
  `resign ${term}`,
];

/** A restore whose gap was recorded but not its timeline, below the resume recording's checkpoint. */
const halfRecorded = (over: Pick<UnfinishedRestore, 'why' | 'previousClusterId'>): UnfinishedRestore => ({
  generation: 1,
  after: 5n,
  to: resume.checkpoint,
  newHistory: false,
  compactedAt: undefined,
  historyLost: false,
  ...over,
});

const resume = recorded('resume-witnesses-intact');
const gap = recorded('gap-compacted');
const restore = recorded('restore-witness-contradicted');

describe('the tailer replica loop, without etcd', () => {
  it('a resume tails from the checkpoint, and a close stops the duties before it resigns', async () => {
    assert.equal(resume.decision.kind, 'resume');
    const calls = await drive({ starts: [stateOf(resume)], tails: [] });
    assert.deepEqual(calls, leadership(10, `tail 10 from ${resume.checkpoint}`));
  });

  it('a compaction gap is recorded up to the recorded compaction revision, and the run tails from the checkpoint it returns', async () => {
    assert.equal(gap.decision.kind, 'gap');
    const to = gap.decision.kind === 'gap' ? gap.decision.to : 0n;
    const calls = await drive({ starts: [stateOf(gap)], tails: [], gapReturns: to + 3n });
    assert.deepEqual(calls.slice(3, 6), ['read', `gap 10 ${gap.checkpoint + 1n}..${to}`, `tail 10 from ${to + 3n}`]);
  });

  it('a restore is recorded, leadership given up, and the restored timeline captured under a new campaign', async () => {
    assert.equal(restore.decision.kind, 'restore');
    const why = restore.decision.kind === 'restore' ? restore.decision.why : '';
    const captured = restore.decision.kind === 'restore' ? restore.decision.captured : 0n;
    const calls = await drive({ starts: [stateOf(restore), stateOf(resume)], tails: [] });
    assert.deepEqual(calls, [
      ...leadership(
        10,
        `restore 10 from ${restore.checkpoint}: ${why} (captured ${captured}, was ${restore.timelineClusterId}, now ${restore.position.clusterId} at ${restore.position.head})`,
      ),
      ...leadership(20, `tail 20 from ${resume.checkpoint}`),
    ]);
  });

  it('a restore recorded half-way is finished from its gap, with no question asked of etcd', async () => {
    const unfinished = halfRecorded({ why: 'etcd was restored (the first try)', previousClusterId: 'the-old-cluster' });
    const calls = await drive({ starts: [stateOf(resume, unfinished)], tails: [] });
    assert.deepEqual(calls.slice(3, 5), [
      'read',
      `restore 10 from ${resume.checkpoint}: etcd was restored (the first try) (captured ${resume.checkpoint}, was the-old-cluster, now ${resume.position.clusterId} at ${resume.position.head})`,
    ]);
  });

  it('a run that ends on a watch error waits and decides again; one that saw a restore under it decides again at once', async () => {
    const calls = await drive({
      starts: [stateOf(resume), stateOf(resume), stateOf(gap)],
      tails: [
        () => ({ reason: 'watch-error', checkpoint: 7n, error: new Error('stream reset') }),
        () => ({ reason: 'stopped', checkpoint: 9n, rewound: 'head below' }),
      ],
    });
    const to = gap.decision.kind === 'gap' ? gap.decision.to : 0n;
    assert.deepEqual(calls.slice(3), [
      'read',
      `tail 10 from ${resume.checkpoint}`,
      'ended watch-error',
      'sleep 500',
      'read',
      `tail 10 from ${resume.checkpoint}`,
      'ended stopped rewound',
      'read',
      `gap 10 ${gap.checkpoint + 1n}..${to}`,
      `tail 10 from ${to}`,
      'end 10',
      'leader false',
      'resign 10',
    ]);
  });

  it("a lost election lease stops the run's signal; the replica resigns and campaigns again", async () => {
    const calls = await drive({
      starts: [stateOf(resume), stateOf(resume)],
      tails: [
        (_closing, lost) => {
          lost(new Error('lease expired'));
          return { reason: 'leadership-lost', checkpoint: 8n };
        },
      ],
    });
    assert.deepEqual(calls, [
      ...leadership(10, `tail 10 from ${resume.checkpoint}`, 'ended leadership-lost (signal aborted)'),
      ...leadership(20, `tail 20 from ${resume.checkpoint}`),
    ]);
  });

  it('a failed campaign backs off and campaigns again, never leading in between', async () => {
    const calls = await drive({ starts: [stateOf(resume)], tails: [], campaignFails: [true, true] });
    const waits = calls.filter((c) => c.startsWith('sleep ')).map((c) => Number(c.slice(6)));
    assert.deepEqual(
      calls.slice(0, 7).map((c) => (c.startsWith('sleep ') ? 'sleep' : c)),
      ['campaign', 'phase backoff', 'sleep', 'campaign', 'phase backoff', 'sleep', 'campaign'],
    );
    // Backoff from 500 ms, doubling, with ±50 % jitter.
    assert.ok(waits[0] !== undefined && waits[0] >= 250 && waits[0] <= 750, `first wait ${waits[0]}`);
    assert.ok(waits[1] !== undefined && waits[1] >= 500 && waits[1] <= 1500, `second wait ${waits[1]}`);
    assert.equal(calls.filter((c) => c === 'leader true').length, 1);
  });

  it('an action that fails ends the leadership with its duties stopped and leadership resigned', async () => {
    const calls = await drive({ starts: [stateOf(restore), stateOf(resume)], tails: [], restoreThrows: true });
    assert.deepEqual(calls.slice(4, 9), [calls[4], 'sleep 1000', 'end 10', 'leader false', 'resign 10']);
    assert.match(calls[4] ?? '', /^restore 10/);
    assert.equal(calls[9], 'campaign');
  });

  it('an edited fact changes the action: the resume recording with its compaction moved past the checkpoint records a gap', async () => {
    const edited = stateOf(resume);
    const moved = resume.checkpoint + 50n;
    edited.facts = { ...edited.facts, compactRevision: async () => moved, witnesses: async () => [] };
    const calls = await drive({ starts: [edited], tails: [] });
    assert.equal(calls[4], `gap 10 ${resume.checkpoint + 1n}..${moved}`);
  });

  it("a restore recorded half-way with no previous cluster id in its gap is said of the timeline's", async () => {
    const unfinished = halfRecorded({ why: 'etcd was restored', previousClusterId: '' });
    const calls = await drive({ starts: [stateOf(resume, unfinished)], tails: [] });
    assert.match(calls[4] ?? '', new RegExp(`was ${resume.timelineClusterId},`));
  });

  it('a lease lost while the gap is recorded: nothing tails, the replica resigns and campaigns again', async () => {
    const to = gap.decision.kind === 'gap' ? gap.decision.to : 0n;
    const calls = await drive({ starts: [stateOf(gap), stateOf(resume)], tails: [], gapLosesLease: true });
    assert.deepEqual(calls, [...leadership(10, `gap 10 ${gap.checkpoint + 1n}..${to}`), ...leadership(20, `tail 20 from ${resume.checkpoint}`)]);
  });

  it('the backoff starts over after a campaign that succeeded', async () => {
    const calls = await drive({
      starts: [stateOf(resume), stateOf(resume)],
      tails: [(_c, lost) => (lost(new Error('lease expired')), { reason: 'leadership-lost', checkpoint: 8n })],
      campaignFails: [true, true, true, false, true],
    });
    const waits = calls.filter((c) => c.startsWith('sleep ')).map((c) => Number(c.slice(6)));
    assert.equal(waits.length, 4, JSON.stringify(calls));
    assert.ok((waits[2] ?? 0) >= 1_000, `the third failure in a row waits longer: ${waits}`);
    assert.ok((waits[3] ?? Infinity) <= 750, `the first failure after leading waits the first delay again: ${waits}`);
  });

  it('a replica closed while its campaign fails stops at once, with no wait and no leadership', async () => {
    const calls = await drive({ starts: [stateOf(resume)], tails: [], closeOnCampaign: 1 });
    assert.deepEqual(calls, ['campaign']);
  });
});
