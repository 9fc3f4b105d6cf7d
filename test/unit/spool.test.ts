// The fail-open spool format (core/spool.ts): grant and end records as one
// union, read by the writer's readers, `lockaudit spool` and the shipper.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeSpoolRecord, pairSpool, type SpoolEndRecord, type SpoolGrantRecord } from '../../core/spool.js';
import { parseSpoolLine, spoolEndRows, spoolRows, SPOOL_END_ROW_VERSION } from '../../tailer/sink/spoolShipper.js';

const grant: SpoolGrantRecord = {
  v: 1,
  kind: 'grant',
  id: 'g1',
  cluster: 'local',
  key: 'cat/sku-1',
  namespace: 'cat',
  class: 'cache',
  holder: 'h1',
  session: '7587862',
  token: '0',
  waitMs: 12,
  at: 1_764_400_000_000,
  epoch: 3,
};
const end: SpoolEndRecord = { v: 1, kind: 'end', id: 'e1', grantId: 'g1', cluster: 'local', key: 'cat/sku-1', how: 'release', at: 1_764_400_004_500, grant };
const line = (o: unknown): string => JSON.stringify(o);

describe('spool records', () => {
  it('reads a grant line of the first format unchanged, and end lines beside it', () => {
    // Exactly what writers wrote before end records existed.
    const old =
      '{"v":1,"kind":"grant","id":"a","cluster":"local","key":"ns/k","namespace":"ns","class":"c","holder":"h","session":"1","token":"0","waitMs":0,"at":1,"epoch":1}';
    assert.deepEqual(decodeSpoolRecord(old), JSON.parse(old));
    assert.deepEqual(decodeSpoolRecord(line(end)), end);
    assert.deepEqual(decodeSpoolRecord(line({ ...end, how: 'expiry' }))?.kind, 'end');
  });

  it('rejects end records that do not fit', () => {
    const bad: Array<[string, unknown]> = [
      ['how is not release or expiry', { ...end, how: 'force' }],
      ['no grant copy', { ...end, grant: undefined }],
      ['grant copy of another grant', { ...end, grantId: 'g2' }],
      ['grant copy on another key', { ...end, key: 'cat/sku-2' }],
      ['ends before it began', { ...end, at: grant.at - 1 }],
      ['unknown version', { ...end, v: 2 }],
      ['grant copy with a token', { ...end, grant: { ...grant, token: '5' } }],
    ];
    for (const [why, o] of bad) {
      assert.equal(decodeSpoolRecord(line(o)), undefined, why);
      assert.equal(typeof parseSpoolLine(line(o)), 'string', `shipper: ${why}`);
    }
  });

  it('pairs each grant with its end; an end whose grant line is elsewhere is an orphan', () => {
    const g2 = { ...grant, id: 'g2', key: 'cat/sku-2' };
    const far = { ...end, id: 'e9', grantId: 'g0', grant: { ...grant, id: 'g0' } };
    const { holds, orphanEnds } = pairSpool([grant, g2, end, far]);
    assert.deepEqual(
      holds.map((h) => [h.grant.id, h.end?.id]),
      [
        ['g1', 'e1'],
        ['g2', undefined],
      ],
    );
    assert.deepEqual(
      orphanEnds.map((e) => e.id),
      ['e9'],
    );
  });
});

describe('spool shipping rows', () => {
  it('accepts kind "end" and still quarantines unknown kinds', () => {
    const parsed = parseSpoolLine(line(end));
    assert.ok(typeof parsed !== 'string' && parsed.kind === 'end');
    assert.deepEqual([parsed.end.id, parsed.end.how, parsed.end.at, parsed.end.grant.id], ['e1', 'release', end.at, 'g1']);
    assert.match(parseSpoolLine(line({ ...grant, kind: 'renew' })) as string, /kind "renew"/);
    const legacy = parseSpoolLine(
      line({ seq: 2, node: 'n1', key: '/l/cat/sku-1', holder: 'h2', session: 2, class: 'cache', grantedAt: '2024-01-01T00:00:00Z' }),
    );
    assert.ok(typeof legacy !== 'string' && legacy.kind === 'grant' && legacy.grant.id === 'n1:2');
  });

  it("an end becomes the closed row of its grant: the open row's columns, ended, at a higher stable row_version", () => {
    const parsedGrant = parseSpoolLine(line(grant));
    const parsedEnd = parseSpoolLine(line(end));
    assert.ok(typeof parsedGrant !== 'string' && parsedGrant.kind === 'grant');
    assert.ok(typeof parsedEnd !== 'string' && parsedEnd.kind === 'end');
    const open = spoolRows('c1', parsedGrant.grant);
    const closed = spoolEndRows('c1', parsedEnd.end);
    assert.deepEqual(closed.grant, {
      ...open.grant,
      end_kind: 'release',
      end_revision: '0',
      ended_at: end.at,
      ended_at_error_ms: 0,
      duration_ms: 4_500,
      row_version: SPOOL_END_ROW_VERSION,
    });
    assert.ok(BigInt(closed.grant.row_version) > BigInt(open.grant.row_version));
    assert.deepEqual(spoolEndRows('c1', parsedEnd.end), closed, 'the same line gives the same rows');
    assert.equal(closed.event.key, '/spool/e1');
    assert.equal(closed.event.event_type, 'release');
    assert.equal(closed.event.op, 'spool');
    assert.equal(closed.event.wall_time, end.at);
    assert.equal(closed.event.holder, 'h1');
    assert.equal(closed.event.unprotected, 1);
    assert.equal(closed.event.prev_value, open.event.value);
    const expiry = parseSpoolLine(line({ ...end, how: 'expiry', at: grant.at + 30_000 }));
    assert.ok(typeof expiry !== 'string' && expiry.kind === 'end');
    const lapsed = spoolEndRows('c1', expiry.end);
    assert.equal(lapsed.grant.end_kind, 'expiry');
    assert.equal(lapsed.grant.duration_ms, 30_000);
    assert.equal(lapsed.event.event_type, 'expiry');
  });
});
