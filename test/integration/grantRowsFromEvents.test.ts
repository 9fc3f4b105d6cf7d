// Grant rows derived from durable events when the history after the
// checkpoint is lost (tailer/recovery/gaps.ts completeGrantRows,
// tailer/sql/grantRowsFromEvents.sql): an end's grant time is its put's as
// captured. A hold written around the API is granted when etcd's history
// says, not at the `at` it claims (tailer/decode/foreignGrantTimes.ts); taking the
// claimed time from the end's previous value rewrote such a grant's time and
// the export's grants check refused it (the fresh-clone run's chaos check:
// "chaos/foreign-11-4 … differs from its start event in granted_at").
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { checkGrantsAgainstEvents, formatGrantProblem } from '../../exporters/checks/grantsCheck.js';
import { ClockWriter, writeClock } from '../../tailer/clock/clockWriter.js';
import { capturedStarts, completeGrantRows, recordGap, snapshotHolds } from '../../tailer/recovery/gaps.js';
import { TailerPipeline } from '../../tailer/pipeline.js';
import { writeRows } from '../../tailer/sink/rowWriter.js';
import { waitFor } from '../support/capture.js';
import { classEvent } from '../support/grants.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const CLAIMED = Date.parse('2286-11-20T00:00:00Z');

describe('grant rows completed from events', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  before(async () => {
    ({ store, close } = await tempStore());
  });
  after(async () => close());

  it("an end takes its put's captured grant time (a foreign hold's), not the time its previous value claims", async () => {
    const value = JSON.stringify({ holder: 'spiffe://attacker/x', session: '0', class: 'payments', epoch: 1, waitMs: 0, at: CLAIMED });
    const hold = {
      ...classEvent('x', {}, 0, 0),
      key: '/l/chaos/f',
      namespace: 'chaos',
      lock_path: 'f',
      class: 'payments',
      holder: 'spiffe://attacker/x',
      session: '0',
      token: '281474976710873',
      epoch: 1,
      origin: 'foreign',
    };
    await store.insert('events', [
      // Captured before the checkpoint: the put, timed by the proven clock before it.
      { ...hold, revision: '217', event_type: 'grant', op: 'put', grant_revision: '217', wall_time: T0, time_estimated: 1, value },
      // Durable above the checkpoint without its grant rows: the hand delete.
      {
        ...hold,
        revision: '230',
        event_type: 'deleted',
        op: 'delete',
        grant_revision: '217',
        wall_time: T0 + 5_000,
        time_estimated: 1,
        time_error_ms: 400,
        value: '',
        prev_value: value,
      },
    ]);
    await completeGrantRows(store, 'c1', 0, 220n, 300n, 1n, []);
    const rows = await store.rows<{ granted: string; ended: string; kind: string; duration: string }>(
      "SELECT toString(toUnixTimestamp64Milli(granted_at)) AS granted, toString(toUnixTimestamp64Milli(ended_at)) AS ended, end_kind AS kind, toString(duration_ms) AS duration FROM {db:Identifier}.grants FINAL WHERE cluster = 'c1' AND key = 'chaos/f'",
    );
    assert.deepEqual(rows, [{ granted: String(T0), ended: String(T0 + 5_000), kind: 'deleted', duration: '5000' }]);
  });

  it("a gap's snapshot keeps the grant row of a hold whose start a killed run captured above the checkpoint (seed 45)", async () => {
    const client = createEtcdClient({ name: 'test', endpoints: testConfig().etcd.clusters[0]?.endpoints ?? [] });
    try {
      const ns = uniqueId('snap');
      const cluster = uniqueId('c');
      // A hold written around the API (foreign): its own `at` is its writer's word, bounding nothing.
      const value = JSON.stringify({ holder: 'spiffe://attacker/x', session: '0', class: 'payments', epoch: 1, waitMs: 0, at: CLAIMED });
      const lease = await client.lease(60, { autoKeepAlive: false }).grant();
      const put = await client.put(`/l/${ns}/f`).value(value).lease(lease).exec();
      const revision = BigInt(put.header.revision);
      // A run killed above its checkpoint made the put durable (timed by the clock before it), not its grant row.
      const hold = {
        ...classEvent('x', {}, 0, 0),
        cluster,
        key: `/l/${ns}/f`,
        namespace: ns,
        lock_path: 'f',
        class: 'payments',
        holder: 'spiffe://attacker/x',
        session: lease,
        token: String((1n << 48n) + revision),
        epoch: 1,
        origin: 'foreign',
      };
      await store.insert('events', [
        {
          ...hold,
          revision: revision.toString(),
          event_type: 'grant',
          op: 'put',
          grant_revision: revision.toString(),
          wall_time: T0,
          time_estimated: 1,
          value,
          lease,
          mod_revision: revision.toString(),
          create_revision: revision.toString(),
        },
      ]);
      const checkpoint = revision - 1n;
      // The gap after it: grant rows from the durable events, then the snapshot of what etcd holds.
      await completeGrantRows(store, cluster, 0, checkpoint, revision, 1n, [{ from: revision, to: revision }]);
      const write = async (b: Parameters<typeof writeRows>[1]): Promise<void> => void (await writeRows(store, b, { timeline: 0, term: 1n }));
      const row = async () =>
        await store.rows<{ granted: string; known: number }>(
          'SELECT toString(toUnixTimestamp64Milli(granted_at)) AS granted, start_known AS known FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND key = {k:String}',
          { c: cluster, k: `${ns}/f` },
        );
      // Only the put of this very hold counts: another value at that key and revision (put into the store by hand) does not.
      const asked = capturedStarts(store, cluster, 0);
      assert.deepEqual([...(await asked([{ key: `/l/${ns}/f`, grantRevision: revision.toString(), value }]))], [`/l/${ns}/f|${revision}`]);
      assert.deepEqual([...(await asked([{ key: `/l/${ns}/f`, grantRevision: revision.toString(), value: value.replace('attacker', 'someone') }]))], []);
      await snapshotHolds(client, cluster, revision, checkpoint, write, 5_000, { capturedStarts: capturedStarts(store, cluster, 0) });
      assert.deepEqual(await row(), [{ granted: String(T0), known: 1 }], 'the captured start stands');
      // Without the check (as before): the snapshot's row replaced it, start unknown, timed by the hold's own claim.
      await snapshotHolds(client, cluster, revision, checkpoint, write, 5_000);
      assert.deepEqual(await row(), [{ granted: String(CLAIMED), known: 0 }]);
      await client.leaseClient.leaseRevoke({ ID: lease }).catch(() => undefined);
    } finally {
      client.close();
    }
  });

  it('a grant whose put fell in a recorded gap and whose end was captured is vouched for by its end; outside any gap it is named (seed 46)', async () => {
    const at = Date.parse('2026-03-02T10:00:00Z');
    for (const [cluster, gap] of [
      [uniqueId('g'), true],
      [uniqueId('n'), false],
    ] as const) {
      const value = JSON.stringify({ holder: 'spiffe://w/1', session: '9', class: 'payments', epoch: 1, waitMs: 0, at });
      const hold = {
        ...classEvent('x', {}, 0, 0),
        cluster,
        key: '/l/billing/hot-0',
        namespace: 'billing',
        lock_path: 'hot-0',
        class: 'payments',
        holder: 'spiffe://w/1',
        session: '9',
        token: String((1n << 48n) + 1_444_437n),
        epoch: 1,
        origin: 'api',
      };
      // A run killed mid catch-up made the release durable above its checkpoint, not the put; then etcd compacted past both.
      await store.insert('events', [
        {
          ...hold,
          revision: '1444833',
          event_type: 'release',
          op: 'delete',
          grant_revision: '1444437',
          wall_time: at + 2_000,
          time_estimated: 0,
          value: '',
          prev_value: value,
        },
      ]);
      if (gap) await recordGap(store, { cluster, from_revision: '1434370', to_revision: '1478401', detected_at: at + 60_000, reason: 'compacted', term: '1' });
      await completeGrantRows(store, cluster, 0, 1_434_369n, 1_478_401n, 1n, gap ? [{ from: 1_434_370n, to: 1_478_401n }] : []);
      const problems = await checkGrantsAgainstEvents(store, { cluster }, { fromMs: at - 3_600_000, toMs: at + 3_600_000 }, { settleMs: 0, limit: 10 });
      if (gap) assert.deepEqual(problems.map(formatGrantProblem), [], 'its end vouches for it');
      else assert.match(problems.map(formatGrantProblem).join('; '), /no start event/, 'outside a gap, a row without its start is named');
    }
  });

  // Ends of grants inside a recorded gap whose put was captured anyway.
  it("a bumped restore's gap lies below the checkpoint: a grant in it the restored etcd held starts unknown in the new timeline (seed 46)", async () => {
    const cluster = uniqueId('b');
    const at = Date.parse('2026-03-03T10:00:00Z');
    const value = JSON.stringify({ holder: 'spiffe://w/2', session: '7', class: 'payments', epoch: 1, waitMs: 0, at });
    const hold = {
      ...classEvent('x', {}, 0, 0),
      cluster,
      key: '/l/payments/pump-0',
      namespace: 'payments',
      lock_path: 'pump-0',
      class: 'payments',
      holder: 'spiffe://w/2',
      session: '7',
      token: String((1n << 48n) + 434_368n),
      epoch: 1,
      origin: 'api',
      grant_revision: '434368',
      value,
    };
    await store.insert('events', [
      // Captured in timeline 4, then rolled back by the bumped restore that began timeline 5 (diverged after 434362).
      { ...hold, revision: '434368', timeline: 4, event_type: 'grant', op: 'put', wall_time: at, rolled_back_by: 5, superseded_by: 5 },
      // The restored etcd held it: the restore's snapshot at the bumped resume revision, start unknown.
      { ...hold, revision: '1434369', timeline: 5, event_type: 'snapshot-hold', op: 'snapshot', wall_time: at },
      // Its end, made durable above the checkpoint by a run killed before its grant row; then a compaction gap.
      { ...hold, revision: '1434387', timeline: 5, event_type: 'epoch-release', op: 'delete', wall_time: at + 9_000, value: '', prev_value: value },
    ]);
    const gaps = [
      { from: 434_363n, to: 1_434_369n },
      { from: 1_434_370n, to: 1_478_401n },
    ];
    for (const g of gaps)
      await recordGap(store, {
        cluster,
        from_revision: g.from.toString(),
        to_revision: g.to.toString(),
        detected_at: at + 60_000,
        reason: 'lost',
        term: '1',
        generation: 5,
        kind: 'compaction',
      });
    await completeGrantRows(store, cluster, 5, 1_434_369n, 1_478_401n, 1n, gaps);
    const rows = await store.rows<{ known: number; kind: string }>(
      'SELECT start_known AS known, end_kind AS kind FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND timeline = 5',
      { c: cluster },
    );
    assert.deepEqual(rows, [{ known: 0, kind: 'epoch-advance' }], 'the rolled-back put starts nothing in timeline 5');
    const problems = await checkGrantsAgainstEvents(store, { cluster }, { fromMs: at - 3_600_000, toMs: at + 3_600_000 }, { settleMs: 0, limit: 10 });
    assert.deepEqual(problems.map(formatGrantProblem), []);
  });

  it("a foreign hold put above the checkpoint by a killed run, then a gap over it: its delete names the start known and the put's grant time (seed 46)", async () => {
    const config = testConfig();
    const client = createEtcdClient({ name: 'test', endpoints: config.etcd.clusters[0]?.endpoints ?? [] });
    const secret = randomBytes(32);
    const log = createLogger('warn');
    const cluster = uniqueId('k');
    const ns = uniqueId('gapput');
    try {
      // A proven clock before the put: etcd's history gives the foreign hold its grant time (foreignGrantTimes.ts).
      const clockRevision = await writeClock(client, secret);
      const clock = JSON.parse((await client.get('/sys/clock').revision(clockRevision.toString()).exec()).kvs[0]?.value.toString() ?? '{}') as { at: number };
      const value = JSON.stringify({ holder: 'spiffe://attacker/y', session: '0', class: 'payments', epoch: 1, waitMs: 0, at: CLAIMED });
      const put = BigInt((await client.put(`/l/${ns}/g`).value(value).exec()).header.revision);
      // The killed run captured the put (timed by that clock), then a compaction gap was recorded over it.
      const hold = {
        ...classEvent('x', {}, 0, 0),
        cluster,
        key: `/l/${ns}/g`,
        namespace: ns,
        lock_path: 'g',
        class: 'payments',
        holder: 'spiffe://attacker/y',
        session: '0',
        token: String((1n << 48n) + put),
        epoch: 1,
        origin: 'foreign',
      };
      await store.insert('events', [
        {
          ...hold,
          revision: put.toString(),
          event_type: 'grant',
          op: 'put',
          grant_revision: put.toString(),
          wall_time: clock.at,
          time_estimated: 1,
          value,
          mod_revision: put.toString(),
          create_revision: put.toString(),
        },
      ]);
      const gaps = [{ from: put - 1n, to: put }];
      await recordGap(store, {
        cluster,
        from_revision: (put - 1n).toString(),
        to_revision: put.toString(),
        detected_at: Date.now(),
        reason: 'compacted',
        term: '1',
      });
      const deleted = BigInt((await client.delete().key(`/l/${ns}/g`).exec()).header.revision);
      const pipeline = new TailerPipeline(
        {
          cluster,
          connect: () => createEtcdClient({ name: cluster, endpoints: config.etcd.clusters[0]?.endpoints ?? [] }),
          client,
          store,
          log,
          replicaId: 'gap-put',
          clock: new ClockWriter(client, log, 3_600_000, secret),
          gaps,
          term: 1n,
          fence: () => Promise.resolve(true),
        },
        { checkpointIntervalMs: 100, leaseWitness: false, originSecret: secret },
      );
      const handle = pipeline.start(put, new AbortController().signal);
      try {
        await waitFor('the delete durable', async () => (handle.watermark() >= deleted ? true : undefined), 60_000, 100);
      } finally {
        await handle.close();
      }
      const rows = await store.rows<{ granted: string; known: number; kind: string }>(
        'SELECT toString(toUnixTimestamp64Milli(granted_at)) AS granted, start_known AS known, end_kind AS kind FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND key = {k:String}',
        { c: cluster, k: `${ns}/g` },
      );
      assert.deepEqual(rows, [{ granted: String(clock.at), known: 1, kind: 'deleted' }], 'its start, captured, stands: not the time the hold claims');
      const problems = await checkGrantsAgainstEvents(
        store,
        { cluster },
        { fromMs: clock.at - 3_600_000, toMs: clock.at + 3_600_000 },
        { settleMs: 0, limit: 10 },
      );
      assert.deepEqual(problems.map(formatGrantProblem), []);
    } finally {
      client.close();
    }
  });
});
