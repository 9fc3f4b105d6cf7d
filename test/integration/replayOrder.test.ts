// The replay check (tailer/decode/replays.ts) when a copy reaches the store before
// its original (concurrent catch-up windows): the copy's open row and put
// event are stored `api`, and the original's arrival alarms it. Its end must
// then stay `api` too (its closed row and its delete event): the put event is
// already stored, and digested, as `api`, and a closed row made `foreign`
// disagreed with it, so every export's grants check of that range refused the
// grant. A copy stored after its original still reads `foreign` from its
// first row to its end. Real chdb; batches built by hand in the order the
// sink would write them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import type { AuditEventRow } from '../../core/events.js';
import { PREFIX } from '../../core/keyspace.js';
import { ReplayCheck, type Replay } from '../../tailer/decode/replays.js';
import type { RowBatch } from '../../tailer/types.js';
import { tempStore } from '../support/env.js';
import { classEvent, grantRows } from '../support/grants.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const KEY = 'ns0/copied';
const spec = (rev: number, endRev: number) => ({
  key: KEY,
  class: 'c1',
  holder: 'spiffe://corp/h1',
  rev,
  at: T0,
  origin: 'api' as const,
  end: { kind: 'release' as const, at: T0 + 5000, rev: endRev },
});
const holdEvent = (rev: number, grantRev: number, op: 'put' | 'delete'): AuditEventRow => ({
  ...classEvent('x', null, rev, T0, 'c1'),
  key: `${PREFIX.hold}${KEY}`,
  event_type: op === 'put' ? 'grant' : 'release',
  op,
  class: 'c1',
  grant_revision: String(grantRev),
  origin: 'api',
});

describe('replay check: a copy stored before its original', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  const replays: Replay[] = [];
  let check: ReplayCheck;
  const write = async (batch: RowBatch) => {
    await check.mark(batch);
    await store.insert('grants', batch.grants);
    return batch;
  };
  before(async () => {
    ({ store, close } = await tempStore());
    check = new ReplayCheck(store, 'c1', (r) => replays.push(r));
  });
  after(async () => close?.());

  it('keeps the copy `api` to its end once it was stored so, and alarms it when the original arrives', async () => {
    const original = grantRows(spec(1000, 1005));
    const copy = grantRows(spec(2000, 2005));
    const first = await write({ grants: [copy.open], events: [holdEvent(2000, 2000, 'put')], quarantine: [] });
    assert.deepEqual([first.grants[0]?.origin, first.events[0]?.origin], ['api', 'api'], 'nothing to compare it with yet');
    await write({ grants: [original.open, original.closed!], events: [holdEvent(1000, 1000, 'put'), holdEvent(1005, 1000, 'delete')], quarantine: [] });
    assert.deepEqual(
      replays.map((r) => [r.grantRevision, r.firstRevision, r.recordedAsApi]),
      [['2000', '1000', true]],
      'the copy alarmed when its original arrives',
    );
    const end = await write({ grants: [copy.closed!], events: [holdEvent(2005, 2000, 'delete')], quarantine: [] });
    assert.deepEqual([end.grants[0]?.origin, end.events[0]?.origin], ['api', 'api'], 'its end agrees with its start');
    assert.equal(replays.length, 1, 'alarmed once');
    const rows = await store.rows<{ origin: string }>('SELECT origin FROM {db:Identifier}.grants FINAL WHERE key = {k:String} AND grant_revision = 2000', {
      k: KEY,
    });
    assert.deepEqual(rows, [{ origin: 'api' }]);
  });

  it('still reads a copy stored after its original `foreign`, from its grant to its end', async () => {
    const copy = grantRows(spec(3000, 3005));
    const start = await write({ grants: [copy.open], events: [holdEvent(3000, 3000, 'put')], quarantine: [] });
    assert.deepEqual([start.grants[0]?.origin, start.events[0]?.origin], ['foreign', 'foreign']);
    const end = await write({ grants: [copy.closed!], events: [holdEvent(3005, 3000, 'delete')], quarantine: [] });
    assert.deepEqual([end.grants[0]?.origin, end.events[0]?.origin], ['foreign', 'foreign']);
    assert.deepEqual(
      replays.slice(1).map((r) => [r.grantRevision, r.recordedAsApi]),
      [
        ['3000', false],
        ['3000', false],
      ],
    );
  });
});
