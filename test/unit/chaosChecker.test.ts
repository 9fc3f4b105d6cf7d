// The chaos checker (test/chaos/checker.ts) held to Elle's habit: a small
// real run's artefacts are kept as a fixture (test/chaos/histories/), and each
// mutation of the record — a change dropped, an end kind flipped, a gap
// widened, a phantom row, two tokens swapped, a grant reopened, a force record
// dropped from the archive, the recording stalled, … — must be named by the
// checker, by the one invariant that exists to catch it. A checker that
// cannot fail proves nothing.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { check, exitCode, type CheckInput, type CheckResult, type ViolationKind } from '../chaos/checker.js';
import { compactionBound } from '../chaos/check/gaps.js';
import { holds } from '../chaos/check/history.js';
import { keptColumns } from '../../core/valueBound.js';
import { VIOLATION_KINDS } from '../chaos/check/types.js';
import type { FaultRecord } from '../chaos/faults.js';
import type { RecordedChange, RecorderLine } from '../chaos/recorder.js';
import type { StoreDump, StoredEvent } from '../chaos/storeDump.js';
import type { Truth } from '../chaos/workload.js';

const HISTORY = path.join(import.meta.dirname, '..', 'chaos', 'histories', 'seed3-small');

function load(): CheckInput {
  const text = (name: string): string => {
    const raw = readFileSync(path.join(HISTORY, name));
    return (name.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8');
  };
  const lines = (name: string): string[] => text(name).split('\n').filter(Boolean);
  const final = JSON.parse(text('final.json')) as {
    finalRevision: string;
    finalHolds: Record<string, string>;
    archiveTexts: string[];
    archiveVerify: { ok: boolean; output: string };
    caughtUp: boolean;
  };
  return {
    recording: lines('recording.jsonl.gz').map((l) => JSON.parse(l) as RecorderLine),
    truth: lines('truth.jsonl.gz').map((l) => JSON.parse(l) as Truth),
    store: JSON.parse(text('store.json.gz')) as StoreDump,
    faults: JSON.parse(text('faults.json')) as FaultRecord[],
    finalRevision: BigInt(final.finalRevision),
    finalHolds: new Map(Object.entries(final.finalHolds)),
    archiveTexts: final.archiveTexts,
    archiveVerify: final.archiveVerify,
    caughtUp: final.caughtUp,
  };
}

const base = load();
const baseline = check(base);
/** The kinds (and how many of each) a mutation added to the baseline's verdict. */
function added(result: CheckResult): Map<ViolationKind, number> {
  const out = new Map<ViolationKind, number>();
  for (const [kind, n] of result.byKind) {
    const extra = n - (baseline.byKind.get(kind) ?? 0);
    if (extra > 0) out.set(kind, extra);
  }
  return out;
}
/** Applies a mutation to a deep copy of the fixture and checks it. */
function mutated(mutate: (input: CheckInput) => void): CheckResult {
  const input: CheckInput = {
    ...base,
    recording: base.recording.map((l) => ({ ...l })),
    truth: base.truth.map((t) => ({ ...t })),
    store: structuredClone(base.store),
    faults: structuredClone(base.faults),
    finalHolds: new Map(base.finalHolds),
    archiveTexts: [...base.archiveTexts],
    archiveVerify: { ...base.archiveVerify },
  };
  mutate(input);
  return check(input);
}
function assertNamedAlone(result: CheckResult, kind: ViolationKind): void {
  assert.deepEqual(
    [...added(result).keys()],
    [kind],
    `expected only "${kind}" to be added; got ${JSON.stringify(Object.fromEntries(added(result)))}: ${JSON.stringify(result.violations.filter((v) => !baseline.violations.some((b) => JSON.stringify(b) === JSON.stringify(v))).slice(0, 3))}`,
  );
}

const changes = (input: CheckInput): RecordedChange[] => input.recording.filter((l): l is RecordedChange => l.kind === 'change');
const rowAt = (input: CheckInput, c: RecordedChange): StoredEvent | undefined => input.store.events.find((e) => e.revision === c.revision && e.key === c.key);
/** A captured end of a protected API grant in the current era (a release by its marker). */
function capturedRelease(input: CheckInput): RecordedChange {
  const lastEra = input.recording.filter((l) => l.kind === 'restore').length;
  const c = changes(input).find((x) => x.era === lastEra && x.type === 'delete' && x.key.startsWith('/l/') && rowAt(input, x)?.event_type === 'release');
  assert.ok(c, 'the fixture holds a captured release in its last era');
  return c;
}

describe('chaos checker on a kept real run (test/chaos/histories/seed3-small)', () => {
  it('the fixture is a real run with the faults the mutations need, and the baseline verdict is valid', () => {
    assert.deepEqual(baseline.invalid, []);
    for (const kind of ['compact', 'restore', 'tailer-kill', 'mass-expiry', 'force-release'] as const)
      assert.ok(
        base.faults.some((f) => f.kind === kind && f.ok),
        `fault ${kind}`,
      );
    assert.ok(baseline.changesChecked > 500, `${baseline.changesChecked} changes`);
    assert.ok(
      baseline.gaps.some((g) => g.kind === 'restore' && g.verdict === 'earned'),
      'an earned restore gap',
    );
    assert.ok(
      baseline.gaps.some((g) => g.kind === 'compaction' && g.verdict === 'earned'),
      'an earned compaction gap',
    );
    assert.ok(baseline.capturedRolledBack > 0, 'changes kept as rolled back');
    assert.equal(exitCode(baseline), baseline.violations.length ? 1 : 0);
  });

  it('drop an event: lost', () => {
    assertNamedAlone(
      mutated((i) => {
        const c = capturedRelease(i);
        i.store.events = i.store.events.filter((e) => !(e.revision === c.revision && e.key === c.key));
      }),
      'lost',
    );
  });

  it('flip an end kind in the row FINAL keeps: misclassified', () => {
    assertNamedAlone(
      mutated((i) => {
        const row = rowAt(i, capturedRelease(i)) as StoredEvent;
        row.event_type = 'expiry';
      }),
      'misclassified',
    );
  });

  it('a hand delete read as an expiry: misclassified — excused (and counted) only when put, deleted and revoked while no tailer ran', () => {
    /** A captured manual delete read as an expiry, its put and delete moved to `putAt` / `deleteAt` (ms into the fault). */
    const expiryRead = (i: CheckInput, putAt?: number, deleteAt?: number): void => {
      const t = i.truth.find(
        (x) =>
          x.expect === 'manual-delete' && x.revision && i.store.events.some((e) => e.revision === x.revision && e.key === x.key && e.event_type === 'deleted'),
      );
      assert.ok(t, 'the fixture holds a captured manual delete');
      (i.store.events.find((e) => e.revision === t.revision && e.key === t.key) as StoredEvent).event_type = 'expiry';
      const kill = i.faults.find((f) => f.kind === 'compact' && f.ok);
      assert.ok(kill);
      const put = i.truth.filter((x) => x.key === t.key && x.expect === 'foreign-grant' && x.at <= t.at).at(-1);
      assert.ok(put);
      if (putAt !== undefined) put.at = kill.startedAt + putAt;
      if (deleteAt !== undefined) t.at = kill.startedAt + deleteAt;
    };
    assertNamedAlone(
      mutated((i) => expiryRead(i)),
      'misclassified',
    );
    const excused = mutated((i) => expiryRead(i, 10, 20));
    assert.deepEqual([...added(excused).keys()], []);
    assert.equal(excused.unwitnessable, baseline.unwitnessable + 1);
    // The put inside the window but the delete after it: a tailer ran when the delete happened.
    assertNamedAlone(
      mutated((i) => expiryRead(i, 10, 10_000_000)),
      'misclassified',
    );
  });

  it('a replay writes another end kind beside the first: flip', () => {
    assertNamedAlone(
      mutated((i) => {
        const row = rowAt(i, capturedRelease(i)) as StoredEvent;
        // Older than the row FINAL keeps: the classification the readers see is unchanged, only the raw rows differ.
        i.store.events.push({ ...row, event_type: 'session-close', ingested_at: '2000-01-01 00:00:00.000' });
      }),
      'flip',
    );
  });

  it('a deposed leader writes another end kind later, under a lower term: a flip, not what FINAL keeps (sql/110)', () => {
    assertNamedAlone(
      mutated((i) => {
        const row = rowAt(i, capturedRelease(i)) as StoredEvent;
        row.term = '9';
        // Newer than the successor's row, but its term is lower: FINAL keeps the successor's classification.
        i.store.events.push({ ...row, event_type: 'expiry', term: '3', ingested_at: '2999-01-01 00:00:00.000' });
      }),
      'flip',
    );
  });

  it('widen a gap by one revision: gap-too-wide', () => {
    for (const kind of ['compaction', 'restore']) {
      const result = mutated((i) => {
        const line = baseline.gaps.find((g) => g.kind === kind && g.verdict === 'earned');
        const gap = i.store.gaps.find((g) => g.from_revision === line?.from && g.to_revision === line?.to);
        assert.ok(gap);
        gap.from_revision = String(BigInt(gap.from_revision) - (kind === 'restore' ? BigInt(gap.from_revision) : 1n)); // a restore gap from revision 0: "everything rolled back"
        if (kind === 'compaction') gap.to_revision = String(BigInt(gap.to_revision) + 1n);
      });
      assert.ok(added(result).has('gap-too-wide'), `${kind}: ${JSON.stringify(Object.fromEntries(added(result)))}`);
      assert.ok(
        [...added(result).keys()].every((k) => k === 'gap-too-wide' || k === 'lost' || k === 'rolled-back-lost'),
        `${kind}: only the gap and what it no longer excuses: ${JSON.stringify(Object.fromEntries(added(result)))}`,
      );
    }
  });

  it('a gap no fault explains: gap-unexplained; a restore without its own gap: restore-unrecorded', () => {
    assertNamedAlone(
      mutated((i) => {
        i.store.gaps.push({
          from_revision: '5',
          to_revision: '6',
          reason: 'etcd compacted history',
          detected_at: '2001-01-01 00:00:00.000',
          kind: 'compaction',
        });
      }),
      'gap-unexplained',
    );
    const noRestoreGap = mutated((i) => {
      const g = i.store.gaps.find((x) => x.kind === 'restore');
      assert.ok(g);
      g.generation = 99;
    });
    assert.ok(added(noRestoreGap).has('restore-unrecorded'));
    assert.ok(added(noRestoreGap).has('gap-unexplained'), 'the orphaned gap is named too');
  });

  it('one gap for two compactions: gap-shared', () => {
    assertNamedAlone(
      mutated((i) => {
        // Two compactions back to back (their bounds continue each other) over captured history, and one gap over both:
        // it excuses nothing, so only the sharing is wrong.
        const f = i.faults.find((x) => x.kind === 'compact') as FaultRecord;
        const hi = i.finalRevision - 20n;
        i.faults.push({ ...f, startedAt: f.startedAt + 1, facts: { kind: 'compact', checkpointAtStop: String(hi - 10n), compactRevision: String(hi - 5n) } });
        i.faults.push({ ...f, startedAt: f.startedAt + 2, facts: { kind: 'compact', checkpointAtStop: String(hi - 5n), compactRevision: String(hi) } });
        i.store.gaps.push({
          from_revision: String(hi - 9n),
          to_revision: String(hi),
          reason: 'compacted',
          detected_at: new Date(f.startedAt + 5).toISOString().replace('T', ' ').replace('Z', ''),
          kind: 'compaction',
        });
      }),
      'gap-shared',
    );
  });

  it('add a phantom row: phantom', () => {
    assertNamedAlone(
      mutated((i) => {
        const row = rowAt(i, capturedRelease(i)) as StoredEvent;
        i.store.events.push({ ...row, key: '/l/payments/never-committed', revision: row.revision });
      }),
      'phantom',
    );
  });

  it('swap two tokens: misrecorded', () => {
    assertNamedAlone(
      mutated((i) => {
        const grants = i.store.events.filter((e) => e.event_type === 'grant' && e.op === 'put' && e.token !== '0' && !e.key.startsWith('/l/chaos/'));
        const [a, b] = [grants[0], grants.find((g) => g.token !== grants[0]?.token)];
        assert.ok(a && b);
        [a.token, b.token] = [b.token, a.token];
      }),
      'misrecorded',
    );
  });

  it('reopen a closed grant: ghost-open-grant (its key is free at the end) or overlap (a later grant followed)', () => {
    const last = mutated((i) => {
      const byKey = new Map<string, typeof i.store.grants>();
      for (const g of i.store.grants.filter((x) => x.unprotected === 0 && x.token !== '0')) byKey.set(g.key, [...(byKey.get(g.key) ?? []), g]);
      const list = [...byKey.values()].find((l) => l.length === 1 && l[0]?.end_kind !== '' && !i.finalHolds.has(`/l/${l[0]?.key}`));
      assert.ok(list?.[0]);
      list[0].end_kind = '';
    });
    assertNamedAlone(last, 'ghost-open-grant');
    const earlier = mutated((i) => {
      const byKey = new Map<string, typeof i.store.grants>();
      for (const g of i.store.grants.filter((x) => x.unprotected === 0 && x.token !== '0' && Number(x.timeline ?? 0) === 0))
        byKey.set(g.key, [...(byKey.get(g.key) ?? []), g]);
      const list = [...byKey.values()].find((l) => l.length >= 3);
      assert.ok(list);
      list.sort((a, b) => (BigInt(a.grant_revision) < BigInt(b.grant_revision) ? -1 : 1));
      (list[0] as (typeof list)[number]).end_kind = '';
    });
    assertNamedAlone(earlier, 'overlap');
  });

  it('a foreign grant whose event reads foreign but whose grant row reads api (what grant history and exports show): misclassified', () => {
    assertNamedAlone(
      mutated((i) => {
        const foreignRow = (t: Truth) => i.store.grants.find((g) => g.key === t.key.slice(3) && g.grant_revision === t.revision && g.origin === 'foreign');
        const truth = i.truth.find((t) => t.expect === 'foreign-grant' && t.revision !== undefined && foreignRow(t));
        assert.ok(truth, 'the fixture holds a foreign grant read foreign in its grant row');
        (foreignRow(truth) as NonNullable<ReturnType<typeof foreignRow>>).origin = 'api';
      }),
      'misclassified',
    );
  });

  it('a token going backwards in etcd: token-order', () => {
    assertNamedAlone(
      mutated((i) => {
        // The key's last API grant, granted once more right after it in real time at a revision one lower, same epoch
        // (a rewound etcd the epoch did not fence); the record holds it too, so that only the order is wrong.
        const apiGrants = changes(i).filter(
          (c) => c.type === 'put' && c.key.startsWith('/l/') && !c.key.startsWith('/l/chaos/') && c.version === '1' && !i.truth.some((t) => t.key === c.key),
        );
        const last = apiGrants[apiGrants.length - 1] as RecordedChange;
        const again: RecordedChange = { ...last, seq: 1e9, revision: String(BigInt(last.revision) - 1n) };
        i.recording.push(again);
        const row = rowAt(i, last) as StoredEvent;
        i.store.events.push({ ...row, revision: again.revision, token: String(BigInt(row.token) - 1n) });
      }),
      'token-order',
    );
  });

  it('a token going backwards across epochs (a grant of an older epoch after a newer one, on a higher revision): token-order', () => {
    assertNamedAlone(
      mutated((i) => {
        const apiGrants = changes(i).filter(
          (c) => c.type === 'put' && c.key.startsWith('/l/') && !c.key.startsWith('/l/chaos/') && c.version === '1' && !i.truth.some((t) => t.key === c.key),
        );
        const last = [...apiGrants].reverse().find((c) => Number((JSON.parse(c.value ?? '{}') as { epoch?: number }).epoch) >= 1);
        assert.ok(last, 'the fixture holds an API grant of epoch >= 1');
        const value = JSON.parse(last.value ?? '{}') as { epoch: number };
        const epoch = value.epoch - 1;
        const again: RecordedChange = { ...last, seq: 1e9, revision: String(BigInt(last.revision) + 1n), value: JSON.stringify({ ...value, epoch }) };
        i.recording.push(again);
        const row = rowAt(i, last) as StoredEvent;
        i.store.events.push({
          ...row,
          revision: again.revision,
          epoch,
          token: String((BigInt(epoch) << 48n) + BigInt(again.revision)),
          value: again.value ?? '',
        });
      }),
      'token-order',
    );
  });

  it('drop a force record from the archive: not-archived; a forged one archived: forged-archived; a failed verify: archive-verify', () => {
    assertNamedAlone(
      mutated((i) => {
        const id = changes(i)
          .find((c) => c.type === 'put' && c.key.startsWith('/sys/force/') && !i.truth.some((t) => t.key === c.key))
          ?.key.slice('/sys/force/'.length);
        assert.ok(id);
        i.archiveTexts = i.archiveTexts.filter((t) => !t.includes(id));
      }),
      'not-archived',
    );
    assertNamedAlone(
      mutated((i) => {
        const forged =
          i.truth.find((t) => t.expect === 'forged-force') ??
          (() => {
            const c = changes(i).find((x) => x.type === 'put' && x.key.startsWith('/sys/force/')) as RecordedChange;
            const t: Truth = { expect: 'forged-force', key: c.key, revision: c.revision, at: 0 };
            i.truth.push(t);
            i.archiveTexts = i.archiveTexts.filter((x) => !x.includes(c.key.slice('/sys/force/'.length)));
            return t;
          })();
        i.archiveTexts.push(`{"id":"${forged.key.slice('/sys/force/'.length)}"}`);
      }),
      'forged-archived',
    );
    assertNamedAlone(
      mutated((i) => {
        i.archiveVerify = { ok: false, output: 'FAIL local: record 3 altered' };
      }),
      'archive-verify',
    );
    assertNamedAlone(
      mutated((i) => {
        i.grantsExport = {
          ok: false,
          output:
            'lockaudit: LOCKAUDIT_ERR_EXPORT_UNPROVEN: the grants table disagrees with the events it is derived from (1 grants): c ns/k grant revision 9 timeline 0: differs from its start event (grant at revision 9) in holder',
        };
      }),
      'grants-export',
    );
  });

  it("an edited two-person request carried out: forged-approved; a hand-put class read as the API's: misclassified", () => {
    assertNamedAlone(
      mutated((i) => {
        const c = changes(i).find((x) => x.type === 'put' && x.key.startsWith('/sys/force/') && !i.truth.some((t) => t.key === x.key)) as RecordedChange;
        assert.ok(c, 'the fixture holds a genuine force record');
        i.truth.push({ expect: 'request-refused', key: c.key, at: 0 });
      }),
      'forged-approved',
    );
    assertNamedAlone(
      mutated((i) => {
        const c = changes(i).find((x) => x.type === 'put' && x.key.startsWith('/sys/class/')) as RecordedChange;
        assert.ok(c, 'the fixture holds a class put');
        i.truth.push({ expect: 'foreign-class', key: c.key, revision: c.revision, at: 0 });
        for (const e of i.store.events) if (e.key === c.key && e.revision === c.revision) e.origin = 'api';
      }),
      'misclassified',
    );
  });

  it("a hand-put epoch read as the API's: misclassified; an API grant before the advance that ends it: granted-while-sealed", () => {
    // The last /sys/epoch put of the fixture (its restore's advance), and API grants after it in its era.
    const lastEpoch = (i: CheckInput) =>
      changes(i)
        .filter((x) => x.type === 'put' && x.key === '/sys/epoch')
        .at(-1) as RecordedChange;
    assert.ok(lastEpoch(base), 'the fixture holds an epoch put');
    assertNamedAlone(
      mutated((i) => {
        const c = lastEpoch(i);
        i.truth.push({ expect: 'foreign-epoch', key: c.key, revision: c.revision, value: c.value, at: 0 });
        for (const e of i.store.events) if (e.key === c.key && e.revision === c.revision) e.origin = 'api';
        // Its window's grants are foreign here, so only the reading of the epoch itself is wrong.
        for (const x of changes(i))
          if (x.era === c.era && x.seq > c.seq && x.type === 'put' && x.key.startsWith('/l/'))
            for (const e of i.store.events) if (e.key === x.key && e.revision === x.revision) e.origin = 'foreign';
      }),
      'misclassified',
    );
    const sealed = mutated((i) => {
      const c = lastEpoch(i);
      i.truth.push({ expect: 'foreign-epoch', key: c.key, revision: c.revision, value: c.value, at: 0 });
      for (const e of i.store.events) if (e.key === c.key && e.revision === c.revision) e.origin = 'foreign';
    });
    assertNamedAlone(sealed, 'granted-while-sealed');
    assert.equal(sealed.handEpochs, 1);
    // The same truth naming another value (another era's put at that revision) checks nothing.
    assert.deepEqual(
      [
        ...added(
          mutated((i) => {
            const c = lastEpoch(i);
            i.truth.push({ expect: 'foreign-epoch', key: c.key, revision: c.revision, value: '{"epoch":99}', at: 0 });
          }),
        ).keys(),
      ],
      [],
    );
  });

  it('lose a change the tailer captured before a restore: rolled-back-lost', () => {
    assertNamedAlone(
      mutated((i) => {
        const restore = i.faults.find((f) => f.facts?.kind === 'restore')?.facts as { snapshotRevision: string; checkpointBefore: string };
        const compacted = baseline.gaps.filter((g) => g.kind === 'compaction').map((g) => [BigInt(g.from), BigInt(g.to)] as const);
        // A rolled-back change (above the snapshot), captured before the restore (at or below the checkpoint then), in no
        // compaction gap and not quarantined.
        const victim = i.store.rolledBack.find((r) => {
          const rev = BigInt(r.revision);
          return (
            r.key.startsWith('/l/') &&
            !i.store.quarantine.some((q) => q.revision === r.revision && q.key === r.key) &&
            rev > BigInt(restore.snapshotRevision) &&
            rev <= BigInt(restore.checkpointBefore) &&
            !compacted.some(([lo, hi]) => rev >= lo && rev <= hi)
          );
        });
        assert.ok(victim);
        i.store.rolledBack = i.store.rolledBack.filter((r) => r !== victim);
      }),
      'rolled-back-lost',
    );
  });

  it("a restore gap ends where the tailer saw the old timeline go: the old era's uncaptured rest beyond is in it, what was captured is not", () => {
    const restore = base.faults.find((f) => f.facts?.kind === 'restore')?.facts as { checkpointBefore: string; headBefore: string; oldEraEnd: string };
    const seen = BigInt(restore.headBefore);
    assert.ok(BigInt(restore.oldEraEnd) > seen + 10n, 'the fixture committed more of the old era than the tailer saw');
    // A tailer that captured nothing above its checkpoint and saw etcd's head at `headBefore`: its gap ends there.
    const notCaptured = (i: CheckInput): void => {
      i.store.rolledBack = i.store.rolledBack.filter((r) => BigInt(r.revision) <= BigInt(restore.checkpointBefore));
      const gap = i.store.gaps.find((g) => g.kind === 'restore');
      assert.ok(gap);
      gap.to_revision = String(seen);
    };
    const result = mutated(notCaptured);
    assert.deepEqual([...added(result).keys()], [], JSON.stringify(result.violations.slice(0, 3)));
    const line = result.gaps.find((g) => g.kind === 'restore');
    const beyond = changes(base).filter((c) => c.era === 0 && BigInt(c.revision) > seen && c.key.startsWith('/l/')).length;
    assert.ok(beyond > 0 && (line?.excused ?? 0) >= beyond, `${line?.excused} excused, ${beyond} of them beyond the gap's recorded end`);
    // Bounded by what the tailer had captured: a change at or below its checkpoint then (and above the compaction gap
    // 120..153), gone from the record, is not excused.
    const victim = base.store.rolledBack.find(
      (r) =>
        BigInt(r.revision) <= BigInt(restore.checkpointBefore) &&
        BigInt(r.revision) > 153n &&
        r.key.startsWith('/l/') &&
        !base.store.quarantine.some((q) => q.revision === r.revision && q.key === r.key),
    );
    assert.ok(victim);
    assert.ok(
      added(
        mutated((i) => {
          notCaptured(i);
          i.store.rolledBack = i.store.rolledBack.filter((r) => !(r.revision === victim.revision && r.key === victim.key));
        }),
      ).has('rolled-back-lost'),
    );
  });

  it('stall the recording: the run is invalid (checker blind), exit 2', () => {
    const result = mutated((i) => {
      const lastEra = i.recording.filter((l) => l.kind === 'restore').length;
      const own = i.recording.filter((l) => l.kind !== 'restore' && l.era === lastEra);
      const cut = own[Math.floor(own.length / 2)] as Exclude<RecorderLine, { kind: 'restore' }>;
      // A recorder that stalled for 20 revisions and then went on.
      i.recording = i.recording.filter(
        (l) => l.kind === 'restore' || l.era !== lastEra || BigInt(l.revision) <= BigInt(cut.revision) || BigInt(l.revision) > BigInt(cut.revision) + 20n,
      );
    });
    assert.equal(result.status, 'invalid');
    assert.equal(exitCode(result), 2);
    assert.match(result.invalid.join('\n'), /checker blind/);
  });

  it('a fault that failed, or a tailer that never caught up: invalid', () => {
    const failed = mutated((i) => {
      const f = i.faults.find((x) => x.kind === 'restore') as FaultRecord;
      f.ok = false;
      f.detail += '; failed: the epoch advance was not approved';
    });
    assert.equal(failed.status, 'invalid');
    assert.match(failed.invalid.join('\n'), /epoch advance/);
    assert.equal(mutated((i) => (i.caughtUp = false)).status, 'invalid');
  });

  it('every violation kind has a mutation above that names it', () => {
    const tested: ViolationKind[] = [
      'granted-while-sealed',
      'forged-approved',
      'lost',
      'misclassified',
      'flip',
      'gap-too-wide',
      'gap-unexplained',
      'restore-unrecorded',
      'gap-shared',
      'phantom',
      'misrecorded',
      'ghost-open-grant',
      'overlap',
      'token-order',
      'not-archived',
      'forged-archived',
      'archive-verify',
      'grants-export',
      'rolled-back-lost',
    ];
    assert.deepEqual([...VIOLATION_KINDS].sort(), [...tested].sort());
  });
});

describe('chaos checker: a compaction bound in an era whose restore was not recorded yet', () => {
  const gap = (generation: number, from: string, detected: string) => ({
    from_revision: from,
    to_revision: '9999999',
    reason: 'restore (test)',
    detected_at: detected,
    kind: 'restore',
    generation,
  });
  const fault = (era: number, startedAt: number) => ({ era, startedAt, facts: { kind: 'compact', checkpointAtStop: '153067', compactRevision: '94530' } });
  const started = Date.parse('2026-12-02T04:08:19.922Z');
  const restoreEnded = Date.parse('2026-12-02T04:07:17.998Z');

  it("starts at the era's branch point when the checkpoint read at the kill was still the previous timeline's (its restore gap detected after the fault began, within the slack of the restore's end)", () => {
    assert.deepEqual(compactionBound(fault(2, started), [gap(2, '66258', '2026-12-02 04:08:35.897')], restoreEnded), { lo: 66258n, hi: 94530n });
  });

  it("keeps the checkpoint read at the kill when the era's restore was recorded before, too late, or in the first era", () => {
    assert.deepEqual(compactionBound(fault(2, started), [gap(2, '66258', '2026-12-02 04:08:01.000')], restoreEnded), { lo: 153068n, hi: 94530n });
    assert.deepEqual(
      compactionBound(fault(2, started), [gap(2, '66258', '2026-12-02 04:09:30.000')], restoreEnded),
      { lo: 153068n, hi: 94530n },
      'recorded 132 s after its restore ended: no excuse',
    );
    assert.deepEqual(compactionBound(fault(0, started), [gap(1, '66258', '2026-12-02 04:09:00.000')], restoreEnded), { lo: 153068n, hi: 94530n });
  });
});

describe('chaos checker: a stored row holds a recorded put', () => {
  it('whole by its value, a kept prefix (sql/290) by its size and sha256', () => {
    const big = 'v'.repeat(70_000);
    const change = { type: 'put', value: big } as unknown as RecordedChange;
    const kept = keptColumns('value', big);
    assert.equal(holds({ op: 'put', ...kept }, change), true);
    assert.equal(holds({ op: 'put', ...kept, value_sha256: 'f'.repeat(64) }, change), false, 'another sha256 is another value');
    assert.equal(holds({ op: 'put', value: big.slice(0, 65_536) }, change), false, 'a prefix with no size and sha256 is not the value');
    assert.equal(holds({ op: 'put', value: 'small' }, { type: 'put', value: 'small' } as unknown as RecordedChange), true);
  });
});
