// The keyspace-at-a-moment assembly and the diff of two states: pure, known
// answers, including the gap cases (inside a gap, after a gap with a snapshot).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assembleState, gapsOfTimeline, type EntryRow, type GapRow } from '../../reports/state/assemble.js';
import { compareStates, fieldChanges } from '../../reports/diff/compare.js';
import { endedBy } from '../../reports/diff/index.js';

const hold = (key: string, revision: number, holder: string, type = 'grant', grant = revision): EntryRow => ({
  key: `/l/${key}`,
  revision: String(revision),
  event_type: type,
  holder,
  session: '77',
  token: String(grant),
  class: 'c',
  epoch: 0,
  grant_revision: String(grant),
  wall_ms: 1_700_000_000_000 + revision,
  time_estimated: 0,
});
const gap: GapRow = { from_revision: '20', to_revision: '30', reason: 'compacted' };

describe('state assembly', () => {
  it('without gaps: every hold and queue entry as captured, classes parsed, the epoch', () => {
    const s = assembleState({
      revision: 50n,
      latest: [hold('ns/a', 10, 'w1'), { ...hold('ns/b', 12, 'w2'), key: '/q/ns/b/99', event_type: 'queue-enter' }],
      classes: [
        { key: '/sys/class/c', revision: '3', event_type: 'class-change', epoch: 0, value: '{"name":"c","ttlSeconds":15,"mac":"hs256.k.m"}', origin: 'api' },
        { key: '/sys/class/d', revision: '4', event_type: 'class-change', epoch: 0, value: '{"name":"d","ttlSeconds":15}', origin: 'foreign' },
        { key: '/sys/epoch', revision: '2', event_type: 'epoch-advance', epoch: 4, value: '', origin: 'foreign' },
      ],
      gaps: [],
      snapshotAfter: [],
    });
    assert.deepEqual(
      s.holds.map((h) => [h.key, h.holder, h.grantRevision, h.token]),
      [['ns/a', 'w1', '10', '10']],
    );
    assert.deepEqual(
      s.queue.map((q) => [q.key, q.leaseId]),
      [['ns/b', '99']],
    );
    assert.deepEqual(
      s.classes,
      [
        { name: 'c', revision: '3', definition: { name: 'c', ttlSeconds: 15 }, origin: 'api' },
        { name: 'd', revision: '4', definition: { name: 'd', ttlSeconds: 15 }, origin: 'foreign' },
      ],
      'the proof is no field of the class; a class not written by the API says so',
    );
    assert.deepEqual(s.epoch, { epoch: 4, revision: '2', origin: 'foreign' });
    assert.equal(s.complete, true);
    assert.deepEqual(s.unknown, []);
  });

  it('inside a gap: held across it is known, gone after it is unknown, granted inside before R is held, after R unknown', () => {
    const s = assembleState({
      revision: 25n,
      latest: [hold('ns/kept', 10, 'w1'), hold('ns/gone', 11, 'w2')],
      classes: [],
      gaps: [gap],
      snapshotAfter: [
        hold('ns/kept', 30, 'w1', 'snapshot-hold', 10),
        hold('ns/early', 30, 'w3', 'snapshot-hold', 22),
        hold('ns/late', 30, 'w4', 'snapshot-hold', 28),
      ],
    });
    assert.equal(s.complete, false);
    assert.deepEqual(
      s.holds.map((h) => [h.key, h.holder, h.startKnown]),
      [
        ['ns/early', 'w3', false],
        ['ns/kept', 'w1', true],
      ],
    );
    assert.deepEqual(s.unknown.map((u) => [u.key, u.gap?.fromRevision, u.lastKnownHolder]).sort(), [
      ['ns/gone', '20', 'w2'],
      ['ns/late', '20', null],
    ]);
  });

  it('at the last revision of a gap the snapshot taken there tells every hold', () => {
    const s = assembleState({
      revision: 30n,
      latest: [hold('ns/early', 30, 'w3', 'snapshot-hold', 22), hold('ns/gone', 11, 'w2'), hold('ns/kept', 30, 'w1', 'snapshot-hold', 10)],
      classes: [],
      gaps: [gap],
      snapshotAfter: [],
    });
    assert.equal(s.complete, true);
    assert.deepEqual(
      s.holds.map((h) => h.key),
      ['ns/early', 'ns/kept'],
    );
    assert.deepEqual(s.unknown, []);
  });

  it('after a gap: a hold last seen before it and not in its snapshot ended inside it; classes from before it are unknown', () => {
    const s = assembleState({
      revision: 40n,
      latest: [hold('ns/gone', 11, 'w2'), hold('ns/kept', 30, 'w1', 'snapshot-hold', 10), hold('ns/new', 35, 'w5')],
      classes: [{ key: '/sys/class/c', revision: '3', event_type: 'class-change', epoch: 0, value: '{}', origin: 'api' }],
      gaps: [gap],
      snapshotAfter: [],
    });
    assert.equal(s.complete, true);
    assert.deepEqual(
      s.holds.map((h) => h.key),
      ['ns/kept', 'ns/new'],
    );
    assert.deepEqual(
      s.unknown.map((u) => [u.kind, u.key]),
      [['class', 'c']],
    );
  });
});

describe('gaps of a timeline', () => {
  it("its own gaps, and an earlier timeline's only at or below every branch point since; a history that shares nothing inherits none", () => {
    const gap = (from: number, to: number, generation: number): GapRow => ({ from_revision: String(from), to_revision: String(to), reason: '', generation });
    const gaps = [gap(10, 20, 0), gap(70, 80, 0), gap(150, 160, 0), gap(60, 65, 1), gap(120, 130, 1), gap(55, 58, 2)];
    // Timeline 1 branched off 0 after 100, timeline 2 off 1 after 50.
    const lineage = [
      { generation: 0, diverged_after: '0' },
      { generation: 1, diverged_after: '100' },
      { generation: 2, diverged_after: '50' },
    ];
    const ranges = (t: number) => gapsOfTimeline(gaps, lineage, t).map((g) => `${g.from_revision}-${g.to_revision}`);
    assert.deepEqual(ranges(0), ['10-20', '70-80', '150-160']);
    assert.deepEqual(ranges(1), ['10-20', '70-80', '60-65', '120-130']);
    assert.deepEqual(ranges(2), ['10-20', '55-58']);
    const rebuilt = [
      { generation: 0, diverged_after: '0' },
      { generation: 1, diverged_after: '100', shares_history: 0 },
    ];
    assert.deepEqual(
      gapsOfTimeline(gaps, rebuilt, 1).map((g) => g.from_revision),
      ['60', '120'],
    );
  });
});

describe('state diff', () => {
  const h = (key: string, grant: number, holder: string) => ({
    key,
    holder,
    session: '1',
    token: String(grant),
    class: 'c',
    epoch: 0,
    grantRevision: String(grant),
    since: '',
    startKnown: true,
  });
  it('appeared and ended are the set difference by grant; a key under a new grant is a holder change', () => {
    const d = compareStates(
      {
        holds: [h('a', 1, 'w1'), h('b', 2, 'w2'), h('c', 3, 'w3')],
        classes: [
          { name: 'x', revision: '1', definition: { ttlSeconds: 15, tier: 'entity' }, origin: 'api' },
          { name: 'y', revision: '1', definition: {}, origin: 'api' },
          { name: 'w', revision: '1', definition: { ttlSeconds: 15 }, origin: 'api' },
        ],
      },
      {
        holds: [h('a', 1, 'w1'), h('b', 9, 'w4'), h('d', 8, 'w5')],
        classes: [
          { name: 'x', revision: '7', definition: { ttlSeconds: 30, tier: 'entity', riskOwner: 'r' }, origin: 'api' },
          { name: 'z', revision: '6', definition: {}, origin: 'api' },
          { name: 'w', revision: '8', definition: { ttlSeconds: 15 }, origin: 'foreign' },
        ],
      },
    );
    assert.deepEqual(
      d.appeared.map((x) => x.key),
      ['b', 'd'],
    );
    assert.deepEqual(
      d.ended.map((x) => x.key),
      ['b', 'c'],
    );
    assert.deepEqual(d.changedHolder, [
      { key: 'b', before: { holder: 'w2', grantRevision: '2', token: '2' }, after: { holder: 'w4', grantRevision: '9', token: '9' } },
    ]);
    assert.deepEqual(
      d.classesCreated.map((c) => c.name),
      ['z'],
    );
    assert.deepEqual(
      d.classesDeleted.map((c) => c.name),
      ['y'],
    );
    assert.deepEqual(
      d.classesChanged,
      [
        {
          name: 'x',
          revision: '7',
          fields: [
            { field: 'riskOwner', before: null, after: 'r' },
            { field: 'ttlSeconds', before: 15, after: 30 },
          ],
        },
        { name: 'w', revision: '8', fields: [{ field: 'origin', before: 'api', after: 'foreign' }] },
      ],
      'the same fields put back by hand read as a change of origin',
    );
    assert.deepEqual(fieldChanges({ a: [1] }, { a: [1] }), []);
  });

  it('who ended a hold: the release marker, the session-close marker, the force record approver; nobody for an expiry', () => {
    const held = h('ns/a', 5, 'w1');
    const marker = (v: object) => ({ revision: '9', key: '/sys/mark/m', event_type: 'marker', value: JSON.stringify(v) });
    assert.equal(
      endedBy(held, 'release', [marker({ kind: 'release', by: 'w1', at: 1, key: 'ns/other' }), marker({ kind: 'release', by: 'w9', at: 1, key: 'ns/a' })]),
      'w9',
    );
    assert.equal(endedBy(held, 'session-close', [marker({ kind: 'session-close', by: 'closer', at: 1, session: '1' })]), 'closer');
    const force = {
      id: 'f',
      key: 'ns/a',
      holder: 'w1',
      session: '1',
      token: '5',
      class: 'c',
      enforcement: 'fenced',
      requester: 'op-a',
      approver: 'op-b',
      reason: 'r',
      requestedAt: 1,
      approvedAt: 2,
      revokedSession: false,
    };
    assert.equal(endedBy(held, 'force', [{ revision: '9', key: '/sys/force/f', event_type: 'force-record', value: JSON.stringify(force) }]), 'op-b');
    assert.equal(endedBy(held, 'expiry', []), null);
  });
});
