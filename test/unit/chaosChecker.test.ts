// The chaos checker (test/chaos/checker.ts) on hand-made inputs: a clean
// record passes, and each kind of wrong record is named — so a green chaos
// run means the record was right, not that the checker could not see.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { check, type CheckInput } from '../chaos/checker.js';
import type { RecordedChange, RecorderLine } from '../chaos/recorder.js';
import type { StoreDump, StoredEvent, StoredGrant } from '../chaos/storeDump.js';

let seq = 0;
const change = (revision: number, key: string, type: 'put' | 'delete', value = '', era = 0, version = '1'): RecordedChange => ({
  kind: 'change', seq: seq++, era, revision: String(revision), key, type, value, prevValue: null, lease: '7', createRevision: String(revision), version, at: 0,
});
const hold = (epoch: number): string => JSON.stringify({ holder: 'h', session: '7', class: 'c', epoch, waitMs: 0, at: 1 });
const row = (c: RecordedChange, eventType: string): StoredEvent => ({ revision: c.revision, key: c.key, event_type: eventType, op: c.type, token: '0', epoch: 1, value: c.value, unprotected: 0 });
const grant = (key: string, grantRevision: number, endKind: string, endRevision = 0): StoredGrant => ({
  key, token: String((1n << 48n) + BigInt(grantRevision)), epoch: 1, grant_revision: String(grantRevision), end_kind: endKind, end_revision: String(endRevision), unprotected: 0, start_known: 1, granted_at: '', ended_at: null,
});

function input(recording: RecorderLine[], store: Partial<StoreDump>, extra: Partial<CheckInput> = {}): CheckInput {
  return {
    recording,
    truth: [],
    store: { events: [], eventRowsWithoutFinal: 0, gaps: [], quarantine: [], grants: [], checkpoint: '0', eventColumns: [], ...store },
    finalRevision: 100n,
    finalHolds: new Map(),
    archiveTexts: [],
    archiveVerify: { ok: true, output: '' },
    ...extra,
  };
}

describe('chaos checker', () => {
  const g = change(10, '/l/a/x', 'put', hold(1));
  const r = change(12, '/l/a/x', 'delete');
  const m = change(12, '/sys/mark/1', 'put', JSON.stringify({ kind: 'release', by: 'h', at: 1 }));

  it('passes a record that holds every change once, read right', () => {
    const result = check(input([g, r, m], { events: [row(g, 'grant'), row(r, 'release'), row(m, 'marker')], grants: [grant('a/x', 10, 'release', 12)] }));
    assert.deepEqual(result.violations, []);
    assert.equal(result.captured, 3);
  });

  it('names a lost change, and accepts it inside a gap or in quarantine', () => {
    assert.deepEqual(check(input([g, r, m], { events: [row(g, 'grant'), row(m, 'marker')] })).violations.map((v) => v.kind), ['lost']);
    assert.deepEqual(check(input([g, r, m], { events: [row(g, 'grant'), row(m, 'marker')], gaps: [{ from_revision: '11', to_revision: '12', reason: 'compacted', detected_at: '' }] })).violations, []);
    assert.deepEqual(check(input([g, r, m], { events: [row(g, 'grant'), row(m, 'marker')], quarantine: [{ revision: '12', key: '/l/a/x', reason: 'bad' }] })).violations, []);
  });

  it('names a delete read as an expiry though a marker or the truth says otherwise', () => {
    const marked = check(input([g, r, m], { events: [row(g, 'grant'), row(r, 'expiry'), row(m, 'marker')] }));
    assert.deepEqual(marked.violations.map((v) => v.kind), ['misclassified']);
    const manual = check(input([g, r], { events: [row(g, 'grant'), row(r, 'expiry')] }, { truth: [{ expect: 'manual-delete', key: '/l/a/x', revision: '12', at: 0 }] }));
    assert.deepEqual(manual.violations.map((v) => v.kind), ['misclassified']);
    const foreign = check(input([g], { events: [row(g, 'grant')] }, { truth: [{ expect: 'foreign-grant', key: '/l/a/x', revision: '10', at: 0 }] }));
    assert.deepEqual(foreign.violations.map((v) => v.kind), ['misclassified']);
    const flagged = check(input([g], { events: [{ ...row(g, 'grant'), origin: 'foreign' }] }, { truth: [{ expect: 'foreign-grant', key: '/l/a/x', revision: '10', at: 0 }] }));
    assert.deepEqual(flagged.violations, []);
  });

  it('names overlapping grants, a ghost open grant and tokens going backwards', () => {
    const overlap = check(input([], { grants: [grant('a/x', 10, ''), grant('a/x', 20, 'release', 25)] }));
    assert.deepEqual(overlap.violations.map((v) => v.kind), ['overlap']);
    const ghost = check(input([], { grants: [grant('a/x', 10, '')] }));
    assert.deepEqual(ghost.violations.map((v) => v.kind), ['ghost-open-grant']);
    assert.deepEqual(check(input([], { grants: [grant('a/x', 10, '')] }, { finalHolds: new Map([['/l/a/x', '10']]) })).violations, []);
    // A restore rewound the revisions and the epoch stayed: the next grant's token is lower.
    const before = change(50, '/l/a/y', 'put', hold(1), 0);
    const after = change(40, '/l/a/y', 'put', hold(1), 1);
    const restore: RecorderLine = { kind: 'restore', seq: seq++, era: 1, lastRevision: '60', restoredHead: '30', at: 0 };
    const restoreGap = { from_revision: '31', to_revision: '60', reason: 'restore: head 30 below checkpoint 60', detected_at: '' };
    const tokens = check(input([before, restore, after], { events: [row(before, 'grant'), row(after, 'grant')], gaps: [restoreGap] }));
    assert.deepEqual(tokens.violations.map((v) => v.kind), ['token-order']);
    // …and a restore the log words as anything but a restore (or not at all) is named.
    const unnamed = check(input([before, restore], { events: [row(before, 'grant')], gaps: [{ ...restoreGap, reason: 'compacted' }] }));
    assert.deepEqual(unnamed.violations.map((v) => v.kind), ['restore-unrecorded']);
  });

  it('names an unarchived force record and a failed archive verify', () => {
    const f = change(30, '/sys/force/abc-123', 'put', '{}');
    const result = check(input([f], { events: [row(f, 'force-record')] }, { archiveVerify: { ok: false, output: 'FAIL local: missing' } }));
    assert.deepEqual(result.violations.map((v) => v.kind).sort(), ['archive-verify', 'not-archived']);
    assert.deepEqual(check(input([f], { events: [row(f, 'force-record')] }, { archiveTexts: ['{"id":"abc-123"}'] })).violations, []);
  });
});
