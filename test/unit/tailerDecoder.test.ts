import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clockMac, forceMac, holdMac, markMac } from '../../core/proof.js';
import { makeToken } from '../../core/token.js';
import { leasesToCheck } from '../../tailer/decode/leaseLiveness.js';
import { bracketFor, decodeRevision, finishRevision, knownTime, UNKNOWN_ERROR_MS, type DecodeContext } from '../../tailer/decode/decoder.js';
import type { Change, KvSnapshot } from '../../tailer/types.js';
import { ClockBracket } from '../../tailer/clock/clockBracket.js';

const ctx: DecodeContext = { cluster: 'c1', startKnown: () => true };
const hold = (session: string, at = 1_000, epoch = 0) => JSON.stringify({ holder: 'spiffe://x/a', session, class: 'payments', epoch, waitMs: 7, at });
const kv = (key: string, value: string, mod: string, create = mod): KvSnapshot => ({
  key,
  value,
  createRevision: create,
  modRevision: mod,
  version: '1',
  lease: '0',
});
const put = (key: string, value: string, rev: string): Change => ({ type: 'put', kv: kv(key, value, rev) });
const del = (key: string, rev: string, prev?: KvSnapshot): Change => ({
  type: 'delete',
  kv: { key, value: '', createRevision: '0', modRevision: rev, version: '0', lease: '0' },
  ...(prev ? { prev } : {}),
});
const mark = (kind: string, extra: Record<string, unknown>) => JSON.stringify({ kind, by: 'alice', at: 5_000, ...extra });

describe('decoder', () => {
  it('decodes a grant with its token (epoch × 2^48 + grant revision) as a decimal string', () => {
    const d = decodeRevision(ctx, { revision: 10n, changes: [put('/l/pay/acct-1', hold('77', 1_000, 40), '10')] });
    const [ev] = d.events;
    assert.equal(ev?.row.event_type, 'grant');
    assert.equal(ev?.row.token, makeToken(40, 10n).toString());
    assert.equal(ev?.row.namespace, 'pay');
    assert.equal(ev?.row.lock_path, 'acct-1');
    assert.equal(ev?.row.wall_time, 1_000);
    assert.equal(ev?.timeless, false);
    const batch = finishRevision(d, undefined);
    assert.equal(batch.grants[0]?.end_kind, '');
    assert.equal(batch.grants[0]?.row_version, '0');
  });

  it('classifies hold deletes by what else changed at the same revision', () => {
    const prev = (lock: string, session: string) => kv(`/l/${lock}`, hold(session), '5');
    const d = decodeRevision(ctx, {
      revision: 20n,
      changes: [
        del('/l/ns/a', '20', prev('ns/a', '1')),
        put('/sys/mark/m1', mark('release', { key: 'ns/a', session: '1' }), '20'),
        del('/l/ns/b', '20', prev('ns/b', '2')),
        put(
          '/sys/force/f1',
          JSON.stringify({
            id: 'f1',
            key: 'ns/b',
            holder: 'h',
            session: '2',
            token: '5',
            class: 'payments',
            enforcement: 'fenced',
            requester: 'r',
            approver: 'a',
            reason: 'x',
            requestedAt: 1,
            approvedAt: 6_000,
            revokedSession: false,
          }),
          '20',
        ),
        del('/l/ns/c', '20', prev('ns/c', '3')),
        put('/sys/mark/m2', mark('session-close', { session: '3' }), '20'),
        del('/l/ns/d', '20', prev('ns/d', '4')),
      ],
    });
    const types = Object.fromEntries(d.events.map((e) => [e.row.key, e.row.event_type]));
    // d: no marker of its own, in a txn that put something — never etcd's expiry (an expiry only deletes).
    assert.deepEqual(types, {
      '/l/ns/a': 'release',
      '/sys/mark/m1': 'marker',
      '/l/ns/b': 'force-release',
      '/sys/force/f1': 'force-record',
      '/l/ns/c': 'session-close',
      '/sys/mark/m2': 'marker',
      '/l/ns/d': 'deleted',
    });
    for (const e of d.events.filter((x) => x.row.key.startsWith('/l/'))) assert.equal(e.row.grant_revision, '5');
    const alone = decodeRevision(ctx, { revision: 21n, changes: [del('/l/ns/d', '21', prev('ns/d', '4'))] });
    const expiry = alone.events.find((e) => e.row.key === '/l/ns/d');
    assert.equal(expiry?.row.event_type, 'expiry');
    assert.equal(expiry?.timeless, true);
    assert.equal(expiry?.lowerBoundMs, 1_000);
  });

  it('epoch-advance marks end restored holds as epoch-release', () => {
    const d = decodeRevision(ctx, {
      revision: 30n,
      changes: [
        del('/l/ns/a', '30', kv('/l/ns/a', hold('1'), '3')),
        put('/sys/mark/e', mark('epoch-advance', {}), '30'),
        put('/sys/epoch', JSON.stringify({ epoch: 2, clusterId: '99' }), '30'),
      ],
    });
    assert.deepEqual(
      d.events.map((e) => e.row.event_type),
      ['epoch-release', 'marker', 'epoch-advance'],
    );
  });

  it('keeps every change: undecodable ones become "other" rows and are quarantined with a reason', () => {
    const d = decodeRevision(ctx, {
      revision: 40n,
      changes: [put('/l/ns/a', 'not json', '40'), del('/l/ns/b', '40'), put('/sys/election/tailer.c1/1', 'r1', '40'), put('/sys/weird', 'x', '40')],
    });
    assert.equal(d.events.length, 4);
    assert.deepEqual(
      d.events.map((e) => e.row.event_type),
      ['other', 'other', 'other', 'other'],
    );
    assert.deepEqual(
      d.quarantine.map((q) => q.key),
      ['/l/ns/a', '/l/ns/b', '/sys/weird'],
    );
    assert.ok(d.quarantine.every((q) => q.reason.length > 0));
  });

  it('queue enter/leave, class change and clock', () => {
    const q = JSON.stringify({ holder: 'h', session: '9', class: 'payments', at: 2_000 });
    const d = decodeRevision(ctx, {
      revision: 50n,
      changes: [put('/q/ns/a/9', q, '50'), del('/q/ns/b/8', '50', kv('/q/ns/b/8', q, '4')), put('/sys/clock', JSON.stringify({ at: 3_000 }), '50')],
    });
    assert.deepEqual(
      d.events.map((e) => e.row.event_type),
      ['queue-enter', 'queue-leave', 'clock'],
    );
    assert.equal(d.clockAt, 3_000);
    const cls = decodeRevision(ctx, { revision: 51n, changes: [del('/sys/class/payments', '51')] });
    assert.equal(cls.events[0]?.row.event_type, 'class-change');
  });

  it('gives end rows the bracketed time and builds the ended grant row', () => {
    const d = decodeRevision(ctx, { revision: 60n, changes: [del('/l/ns/a', '60', kv('/l/ns/a', hold('1', 1_000), '12'))] });
    const b = finishRevision(d, { lowerMs: 900, upperMs: 2_000 });
    const row = b.events[0];
    assert.equal(row?.time_estimated, 1);
    // lower is max(previous clock, the grant's own time): [1000, 2000]
    assert.equal(row?.wall_time, 1_500);
    assert.equal(row?.time_error_ms, 500);
    const g = b.grants[0];
    assert.equal(g?.end_kind, 'expiry');
    assert.equal(g?.end_revision, '60');
    assert.equal(g?.row_version, '60');
    assert.equal(g?.grant_revision, '12');
    assert.equal(g?.duration_ms, 500);
  });

  it('marks grants inside a gap as start unknown', () => {
    const d = decodeRevision(
      { cluster: 'c1', startKnown: (r) => r > 100n },
      { revision: 200n, changes: [del('/l/ns/a', '200', kv('/l/ns/a', hold('1'), '50'))] },
    );
    assert.equal(d.events[0]?.grant?.start_known, 0);
  });

  it('bracket: unknown lower bound is flagged with the largest error', () => {
    assert.deepEqual(bracketFor({ lowerMs: undefined, upperMs: 10 }), { estimate: 10, errorMs: UNKNOWN_ERROR_MS });
    assert.deepEqual(bracketFor({ lowerMs: 10, upperMs: 5 }), { estimate: 10, errorMs: 0 });
  });

  describe('values that do not fit the columns', () => {
    const raw = (v: Record<string, unknown>) => JSON.stringify({ holder: 'x', session: '1', class: 'c', epoch: 1, waitMs: 0, at: 1_000, ...v });
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["the issue's value", { epoch: 70000, waitMs: 1e21, at: 0 }, '/epoch'],
      ["epoch beyond the token's 16 bits", { epoch: 65536 }, '/epoch'],
      ['epoch beyond UInt32', { epoch: 2 ** 32 }, '/epoch'],
      ['waitMs beyond a safe integer', { waitMs: 1e21 }, '/waitMs'],
      ['negative waitMs', { waitMs: -1 }, '/waitMs'],
      ['fractional waitMs', { waitMs: 1.5 }, '/waitMs'],
      ['at beyond DateTime64', { at: 1e16 }, '/at'],
      ['negative at', { at: -5 }, '/at'],
    ];
    for (const [name, value, field] of cases) {
      it(`quarantines a hold put with ${name}, naming ${field}, and keeps its raw row`, () => {
        const d = decodeRevision(ctx, { revision: 70n, changes: [put('/l/ns/a', raw(value), '70')] });
        assert.equal(d.events.length, 1);
        assert.equal(d.events[0]?.row.event_type, 'other');
        assert.equal(d.events[0]?.row.value, raw(value));
        assert.equal(d.events[0]?.grant, undefined);
        assert.equal(d.quarantine.length, 1);
        assert.match(d.quarantine[0]?.reason ?? '', new RegExp(`hold value ${field}\\b`));
        assert.doesNotThrow(() => finishRevision(d, { lowerMs: 0, upperMs: 10 }));
      });
    }

    it('quarantines the delete of such a hold (named from its previous value)', () => {
      const d = decodeRevision(ctx, { revision: 71n, changes: [del('/l/ns/a', '71', kv('/l/ns/a', raw({ epoch: 70000 }), '70'))] });
      assert.equal(d.events[0]?.row.event_type, 'other');
      assert.equal(d.events[0]?.endKind, undefined);
      assert.match(d.quarantine[0]?.reason ?? '', /previous hold value \/epoch/);
    });

    it('quarantines out-of-range numbers in every other kind of value, naming the field', () => {
      const force = JSON.stringify({
        id: 'f',
        key: 'ns/a',
        holder: 'h',
        session: '2',
        token: '99999999999999999999',
        class: 'c',
        enforcement: 'fenced',
        requester: 'r',
        approver: 'a',
        reason: 'x',
        requestedAt: 1,
        approvedAt: 2,
        revokedSession: false,
      });
      const d = decodeRevision(ctx, {
        revision: 72n,
        changes: [
          put('/q/ns/a/9', JSON.stringify({ holder: 'h', session: '9', class: 'c', at: 1e300 }), '72'),
          put('/sys/epoch', JSON.stringify({ epoch: 70000, clusterId: '1' }), '72'),
          put('/sys/clock', JSON.stringify({ at: -1 }), '72'),
          put('/sys/mark/m', mark('release', { at: 1e20, key: 'ns/a' }), '72'),
          put('/sys/force/f', force, '72'),
        ],
      });
      assert.deepEqual(
        d.events.map((e) => e.row.event_type),
        ['other', 'other', 'other', 'other', 'other'],
      );
      assert.equal(d.clockAt, undefined);
      assert.deepEqual(
        d.quarantine.map((q) => q.reason.split(' ').slice(0, 3).join(' ')),
        ['queue value /at', 'epoch value /epoch', 'clock value /at', 'mark value /at', 'force record /token'],
      );
    });

    it("never throws: a grant revision beyond the token's 48 bits is quarantined, not thrown", () => {
      const rev = (1n << 48n).toString();
      const d = decodeRevision(ctx, { revision: 1n << 48n, changes: [put('/l/ns/a', raw({}), rev)] });
      assert.equal(d.events[0]?.row.event_type, 'other');
      assert.equal(d.events[0]?.grant, undefined);
      assert.match(d.quarantine[0]?.reason ?? '', /^decoder failed: revision/);
    });

    it('never throws on arbitrary values under any key kind', () => {
      const keys = ['/l/ns/a', '/q/ns/a/7', '/sys/epoch', '/sys/clock', '/sys/class/c', '/sys/mark/m', '/sys/force/f', '/sys/election/x', '/l/bad', '/zzz'];
      const values = [
        '',
        'null',
        '[]',
        '1e999',
        '"x"',
        '{"epoch":-0}',
        '{"at":1e21}',
        raw({ holder: '' }),
        raw({ session: '123456789012345678901' }),
        raw({ epoch: '1' }),
        raw({ at: null }),
        '{"kind":"session-close","by":"a","at":1}',
      ];
      let n = 0;
      for (const key of keys)
        for (const value of values)
          for (const type of ['put', 'delete'] as const) {
            const change: Change = type === 'put' ? put(key, value, '80') : del(key, '80', kv(key, value, '3'));
            const d = decodeRevision(ctx, { revision: 80n, changes: [change, put('/sys/mark/m2', value, '80'), put('/sys/force/f2', value, '80')] });
            assert.equal(d.events.length, 3);
            finishRevision(d, undefined);
            n += 1;
          }
      assert.equal(n, keys.length * values.length * 2);
    });
  });

  describe('origin and deletes by hand (issue 11 defect 7)', () => {
    const secret = Buffer.from('unit-test-origin-secret-0123456789abcdef');
    const octx: DecodeContext = { ...ctx, originSecret: secret };
    const fields = { holder: 'spiffe://x/a', session: '77', class: 'payments', epoch: 1, waitMs: 3, at: 1_000 };
    const signed = (key: string) => JSON.stringify({ ...fields, mac: holdMac(secret, key, fields) });
    // As the API writes it: on the session's lease.
    const onLease = (c: Change, lease = '77'): Change => ({ ...c, kv: { ...c.kv, lease } });

    it("a /sys/clock write is a time anchor only with the tailer's proof for that very put: forged, copied a version on, or into a new life of the key, it is foreign and bounds nothing", () => {
      const clockKv = (value: string, create: string, version: string): Change => ({
        type: 'put',
        kv: { key: '/sys/clock', value, createRevision: create, modRevision: '60', version, lease: '0' },
      });
      const proven = (at: number, create: string, version: string) => JSON.stringify({ at, mac: clockMac(secret, at, create, version) });
      const decode = (c: Change) => decodeRevision(octx, { revision: 60n, changes: [c] });
      const ok = decode(clockKv(proven(3_000, '4', '9'), '4', '9'));
      assert.equal(ok.clockAt, 3_000);
      assert.notEqual(ok.events[0]?.row.origin, 'foreign');
      const cases: Array<[string, Change, string]> = [
        ['no proof', clockKv(JSON.stringify({ at: 9_000_000 }), '4', '10'), 'foreign'],
        [
          'a forged proof',
          clockKv(JSON.stringify({ at: 9_000_000, mac: clockMac(Buffer.from('not-the-secret-0123456789abcdef-xyz'), 9_000_000, '4', '10') }), '4', '10'),
          'foreign',
        ],
        ['a proven value copied back a version later', clockKv(proven(3_000, '4', '9'), '4', '10'), 'foreign'],
        ['a proven value copied into the key made again', clockKv(proven(3_000, '4', '9'), '57', '9'), 'foreign'],
        ['a proven value with its time changed', clockKv(JSON.stringify({ at: 9_000_000, mac: clockMac(secret, 3_000, '4', '9') }), '4', '9'), 'foreign'],
        // The writer's own first put of the key (clockWriter.ts): unsigned, no anchor, not forged.
        ['the unsigned first put of the key', clockKv(JSON.stringify({ at: 9_000_000 }), '60', '1'), 'api'],
      ];
      for (const [what, change, origin] of cases) {
        const d = decode(change);
        assert.equal(d.clockAt, undefined, what);
        assert.equal(d.events[0]?.row.event_type, 'clock', what);
        assert.equal(d.events[0]?.row.origin === 'foreign' ? 'foreign' : 'api', origin, what);
        assert.equal(d.events[0]?.timeless, true, what);
        assert.equal(knownTime(d, Number.MAX_SAFE_INTEGER), undefined, what);
        assert.deepEqual(d.quarantine, [], what);
      }
    });

    it("a hold with the API's proof of origin is an api grant; without it, or with a wrong one, foreign", () => {
      const d = decodeRevision(octx, {
        revision: 90n,
        changes: [
          onLease(put('/l/ns/api', signed('/l/ns/api'), '90')),
          onLease(put('/l/ns/bare', JSON.stringify(fields), '90')),
          onLease(put('/l/ns/moved', signed('/l/ns/api'), '90')), // a real MAC copied onto another key
          onLease(put('/l/ns/forged', JSON.stringify({ ...fields, mac: 'AAAA' }), '90')),
          onLease(put('/l/ns/other-lease', signed('/l/ns/other-lease'), '90'), '78'), // a real value copied onto another lease
          put('/l/ns/no-lease', signed('/l/ns/no-lease'), '90'), // … or onto none: it would never expire
        ],
      });
      assert.deepEqual(
        d.events.map((e) => [e.row.key, e.row.event_type, e.row.origin, e.grant?.origin]),
        [
          ['/l/ns/api', 'grant', 'api', 'api'],
          ['/l/ns/bare', 'grant', 'foreign', 'foreign'],
          ['/l/ns/moved', 'grant', 'foreign', 'foreign'],
          ['/l/ns/forged', 'grant', 'foreign', 'foreign'],
          ['/l/ns/other-lease', 'grant', 'foreign', 'foreign'],
          ['/l/ns/no-lease', 'grant', 'foreign', 'foreign'],
        ],
      );
      assert.equal(finishRevision(d, undefined).grants.filter((g) => g.origin === 'foreign').length, 5);
    });

    it('the end of a foreign grant keeps its origin (the closed grant row wins)', () => {
      const d = decodeRevision(octx, { revision: 91n, changes: [del('/l/ns/bare', '91', kv('/l/ns/bare', JSON.stringify(fields), '90'))] });
      assert.equal(finishRevision(d, undefined).grants[0]?.origin, 'foreign');
    });

    it('a marker-less delete whose lease is alive is "deleted"; one whose lease is gone stays an expiry', () => {
      const prev = (lease: string): KvSnapshot => ({ ...kv('/l/ns/a', signed('/l/ns/a'), '90'), lease });
      const alive = decodeRevision({ ...octx, liveLeases: new Set(['77']) }, { revision: 92n, changes: [del('/l/ns/a', '92', prev('77'))] });
      assert.equal(alive.events[0]?.row.event_type, 'deleted');
      assert.equal(alive.events[0]?.endKind, 'deleted');
      assert.equal(alive.events[0]?.timeless, true);
      assert.equal(finishRevision(alive, { lowerMs: 500, upperMs: 3_000 }).grants[0]?.end_kind, 'deleted');
      const gone = decodeRevision({ ...octx, liveLeases: new Set() }, { revision: 93n, changes: [del('/l/ns/a', '93', prev('77'))] });
      assert.equal(gone.events[0]?.row.event_type, 'expiry');
      // A proven marker bound to this grant explains the delete whatever the lease.
      const m = { kind: 'release' as const, by: 'alice', at: 5_000, key: 'ns/a', session: '77', grant: '90' };
      const marked = decodeRevision(
        { ...octx, liveLeases: new Set(['77']) },
        { revision: 94n, changes: [del('/l/ns/a', '94', prev('77')), put('/sys/mark/m', JSON.stringify({ ...m, mac: markMac(secret, m) }), '94')] },
      );
      assert.equal(marked.events[0]?.row.event_type, 'release');
      assert.equal(marked.events[1]?.row.origin, undefined, "a proven marker is the API's");
    });

    it("markers and force records explain a delete only with the API's proof and only the one they are bound to (issue 21)", () => {
      const prev = (lock: string, lease = '77', create = '90'): KvSnapshot => ({ ...kv(`/l/${lock}`, signed(`/l/${lock}`), create), lease });
      const signedMark = (m: Record<string, unknown> & { kind: 'release' | 'session-close' | 'epoch-advance'; by: string; at: number }) =>
        JSON.stringify({ ...m, mac: markMac(secret, m) });
      const force = {
        id: 'f1',
        key: 'ns/f',
        holder: 'spiffe://x/a',
        session: '77',
        token: makeToken(1, 90n).toString(),
        class: 'payments',
        enforcement: 'fenced' as const,
        requester: 'r',
        approver: 'a',
        reason: 'x',
        requestedAt: 1,
        approvedAt: 6_000,
        revokedSession: false,
      };
      const kinds = (changes: Change[]) =>
        decodeRevision({ ...octx, liveLeases: new Set(['77']) }, { revision: 95n, changes }).events.map((e) => [
          e.row.key,
          e.row.event_type,
          e.row.origin ?? 'api',
        ]);
      // Unproven: a hand-written release marker, a session-close without a session, a forged force record.
      assert.deepEqual(kinds([del('/l/ns/a', '95', prev('ns/a')), put('/sys/mark/m', mark('release', { key: 'ns/a', session: '77', grant: '90' }), '95')]), [
        ['/l/ns/a', 'deleted', 'api'],
        ['/sys/mark/m', 'marker', 'foreign'],
      ]);
      assert.deepEqual(kinds([del('/l/ns/a', '95', prev('ns/a')), put('/sys/mark/m', signedMark({ kind: 'session-close', by: 'x', at: 1 }), '95')]), [
        ['/l/ns/a', 'deleted', 'api'],
        ['/sys/mark/m', 'marker', 'api'],
      ]);
      assert.deepEqual(kinds([del('/l/ns/f', '95', prev('ns/f')), put('/sys/force/f1', JSON.stringify(force), '95')]), [
        ['/l/ns/f', 'deleted', 'api'],
        ['/sys/force/f1', 'force-record', 'foreign'],
      ]);
      // Proven but bound to something else: another grant of the key, another session, another record id.
      assert.deepEqual(
        kinds([
          del('/l/ns/a', '95', prev('ns/a', '77', '93')),
          put('/sys/mark/m', signedMark({ kind: 'release', by: 'x', at: 1, key: 'ns/a', session: '77', grant: '90' }), '95'),
        ])[0],
        ['/l/ns/a', 'deleted', 'api'],
      );
      assert.deepEqual(
        kinds([del('/l/ns/a', '95', prev('ns/a')), put('/sys/mark/m', signedMark({ kind: 'session-close', by: 'x', at: 1, session: '78' }), '95')])[0],
        ['/l/ns/a', 'deleted', 'api'],
      );
      assert.deepEqual(kinds([del('/l/ns/f', '95', prev('ns/f')), put('/sys/force/f2', JSON.stringify({ ...force, mac: forceMac(secret, force) }), '95')]), [
        ['/l/ns/f', 'deleted', 'api'],
        ['/sys/force/f2', 'force-record', 'foreign'],
      ]);
      assert.deepEqual(
        kinds([del('/l/ns/f', '95', prev('ns/f', '77', '91')), put('/sys/force/f1', JSON.stringify({ ...force, mac: forceMac(secret, force) }), '95')])[0],
        ['/l/ns/f', 'deleted', 'api'],
      );
      // Proven and bound: what the API writes.
      assert.deepEqual(kinds([del('/l/ns/f', '95', prev('ns/f')), put('/sys/force/f1', JSON.stringify({ ...force, mac: forceMac(secret, force) }), '95')]), [
        ['/l/ns/f', 'force-release', 'api'],
        ['/sys/force/f1', 'force-record', 'api'],
      ]);
      assert.deepEqual(
        kinds([del('/l/ns/a', '95', prev('ns/a')), put('/sys/mark/m', signedMark({ kind: 'session-close', by: 'x', at: 1, session: '77' }), '95')])[0],
        ['/l/ns/a', 'session-close', 'api'],
      );
      // An epoch-advance marker counts only beside the /sys/epoch move it names.
      const epochMark = signedMark({ kind: 'epoch-advance', by: 'x', at: 1, from: '40' });
      const epochPut = (from: string): Change => ({
        type: 'put',
        kv: kv('/sys/epoch', JSON.stringify({ epoch: 2, clusterId: '9' }), '95'),
        prev: kv('/sys/epoch', JSON.stringify({ epoch: 1, clusterId: '9' }), from),
      });
      assert.equal(kinds([del('/l/ns/a', '95', prev('ns/a')), put('/sys/mark/m', epochMark, '95'), epochPut('40')])[0]?.[1], 'epoch-release');
      assert.equal(kinds([del('/l/ns/a', '95', prev('ns/a')), put('/sys/mark/m', epochMark, '95'), epochPut('60')])[0]?.[1], 'deleted');
      assert.equal(kinds([del('/l/ns/a', '95', prev('ns/a')), put('/sys/mark/m', epochMark, '95')])[0]?.[1], 'deleted');
    });

    it('asks etcd only about marker-less hold deletes; a hold without a lease counts as live', () => {
      const p = (lease: string): KvSnapshot => ({ ...kv('/l/ns/a', hold('1'), '5'), lease });
      assert.deepEqual(
        leasesToCheck({
          revision: 1n,
          changes: [del('/l/ns/a', '1', p('7')), del('/l/ns/b', '1', p('7')), del('/l/ns/c', '1', p('0')), del('/q/ns/a/7', '1', p('7'))],
        }),
        ['7', '0'],
      );
      assert.deepEqual(leasesToCheck({ revision: 2n, changes: [del('/l/ns/a', '2', p('7')), put('/sys/mark/m', mark('release', { key: 'ns/a' }), '2')] }), []);
      assert.deepEqual(leasesToCheck({ revision: 3n, changes: [put('/l/ns/a', hold('1'), '3')] }), []);
    });
  });

  it('known time of a revision: the latest wall time of its timed events, none from timeless or future values', () => {
    const grants = decodeRevision(ctx, { revision: 30n, changes: [put('/l/ns/a', hold('1', 2_000), '30'), put('/l/ns/b', hold('2', 2_500), '30')] });
    assert.equal(knownTime(grants, 10_000), 2_500);
    assert.equal(knownTime(grants, 2_200), 2_000, 'a value after "now" (a skewed writer) tells nothing');
    const expiry = decodeRevision(ctx, { revision: 31n, changes: [del('/l/ns/a', '31', kv('/l/ns/a', hold('1', 2_000), '30'))] });
    assert.equal(expiry.events[0]?.row.event_type, 'expiry');
    assert.equal(knownTime(expiry, 10_000), undefined);
    // With an origin secret, a hold written around the API (no valid proof) carries a time its writer chose: ignored.
    const secret = Buffer.from('unit-test-origin-secret-0123456789abcdef');
    const f = { holder: 'spiffe://x/a', session: '77', class: 'payments', epoch: 1, waitMs: 3, at: 2_000 };
    const mixed = decodeRevision(
      { ...ctx, originSecret: secret },
      {
        revision: 32n,
        changes: [
          {
            ...put('/l/ns/api', JSON.stringify({ ...f, mac: holdMac(secret, '/l/ns/api', f) }), '32'),
            kv: { ...kv('/l/ns/api', JSON.stringify({ ...f, mac: holdMac(secret, '/l/ns/api', f) }), '32'), lease: '77' },
          },
          put('/l/ns/rogue', JSON.stringify({ ...f, at: 9_000 }), '32'),
        ],
      },
    );
    assert.equal(knownTime(mixed, 10_000), 2_000, "the foreign hold's later time is not taken");
    // Nor a time the API's proof does not bind to this revision's change (helper review): a queue value (no proof)
    // or a genuine marker copied beside a hand delete (it explains nothing). The delete is then bracketed.
    const mark = { kind: 'release' as const, by: 'alice', at: 9_000, key: 'ns/old', session: '5', grant: '3' };
    const stamped = decodeRevision(
      { ...ctx, originSecret: secret, liveLeases: new Set(['77']) },
      {
        revision: 33n,
        changes: [
          {
            type: 'delete',
            kv: { key: '/l/ns/api', value: '', createRevision: '0', modRevision: '33', version: '0', lease: '0' },
            prev: { ...kv('/l/ns/api', JSON.stringify({ ...f, mac: holdMac(secret, '/l/ns/api', f) }), '32'), lease: '77' },
          },
          put('/q/ns/api/99', JSON.stringify({ holder: 'spiffe://x/a', session: '99', class: 'payments', at: 9_500 }), '33'),
          put('/sys/mark/copied', JSON.stringify({ ...mark, mac: markMac(secret, mark) }), '33'),
        ],
      },
    );
    assert.deepEqual(
      stamped.events.map((e) => e.row.event_type),
      ['deleted', 'queue-enter', 'marker'],
    );
    assert.equal(knownTime(stamped, 10_000), undefined, "neither the queue value's nor the copied marker's time times the hand delete");
    // A foreign hold's end names the grant time its put was given (foreignGrantTimes) when its put was watched;
    // one whose start fell in a gap was captured from a snapshot with its claimed time, which its end keeps.
    const foreignPrev = { ...kv('/l/ns/rogue', JSON.stringify({ ...f, at: 9_000_000 }), '40'), lease: '0' };
    const ended = (known: boolean) =>
      decodeRevision(
        { ...ctx, originSecret: secret, startKnown: () => known, foreignGrantTimes: new Map([['40', 2_100]]) },
        {
          revision: 41n,
          changes: [
            { type: 'delete', kv: { key: '/l/ns/rogue', value: '', createRevision: '0', modRevision: '41', version: '0', lease: '0' }, prev: foreignPrev },
          ],
        },
      ).events[0]?.grant?.granted_at;
    assert.equal(ended(true), 2_100);
    assert.equal(ended(false), 9_000_000);
    // A /sys/clock delete: the tailer never makes one.
    const clockDelete = decodeRevision({ ...ctx, originSecret: secret }, { revision: 34n, changes: [del('/sys/clock', '34')] });
    assert.equal(clockDelete.events[0]?.row.origin, 'foreign');
  });
});

describe('clock bracket: no anchor runs backwards', () => {
  it('a known time, a clock found out of band or a settle bound earlier than the last anchor is not taken', () => {
    const b = new ClockBracket<string>({ revision: 10n, at: 5_000 });
    assert.equal(b.accepts(4_999), false);
    assert.equal(b.accepts(5_000), true);
    assert.deepEqual(b.place(11n, 'r11', 1, 9_000), undefined);
    assert.deepEqual(b.known(12n, 1_000), [], 'a replayed (older) time closes nothing');
    assert.deepEqual(b.resolveWith({ revision: 13n, at: 2_000 }), [], 'an older clock found out of band closes nothing');
    const settled = b.settle({ revision: 14n, at: 3_000 });
    assert.deepEqual(
      settled.map((r) => [r.item, r.time.lowerMs, r.time.upperMs]),
      [['r11', 5_000, 9_000]],
      'bounded by its read time, not by the older clock',
    );
  });
});
