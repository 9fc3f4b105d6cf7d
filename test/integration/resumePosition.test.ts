// The tailer's resume position against a store insider (issue 40 item 7): a checkpoint or catch-up segment row
// inserted by hand ahead of what was captured used to make the next start watch from there — the revisions
// between were never captured, with no gap and no alarm. Every such row now carries the tailer's proof
// (sql/230); a start resumes from the highest proven position, so a forged row makes it capture again, never skip.
// Real etcd and chdb, the tailer in this process (stopped and started as a restart would).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { originSecret } from '../../core/originSecret.js';
import { HealthState } from '../../platform/health.js';
import { readDurable } from '../../tailer/watch/catchUpSegments.js';
import { readFencedCheckpoint } from '../../tailer/sink/offsets.js';
import { recordGap } from '../../tailer/recovery/gaps.js';
import { currentTimeline } from '../../tailer/recovery/restores.js';
import { TailerReplica } from '../../tailer/replica.js';
import { capturedRows, checkpointAtHead, headRevision, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'error');
const secret = originSecret(config);

describe('the resume position: forged checkpoints and catch-up segments make a start replay, never skip', { timeout: 180_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let client: Etcd3;
  const label = uniqueId('resume');
  const health = new HealthState();
  const start = (): TailerReplica => {
    const r = new TailerReplica(
      { cluster: { name: label, endpoints }, store, log, health },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, originSecret: secret },
    );
    r.start();
    return r;
  };
  /** Hand puts under a namespace of their own (foreign holds: the tailer captures them all the same). */
  async function puts(ns: string, n: number): Promise<{ first: bigint; last: bigint }> {
    let first = 0n;
    let last = 0n;
    for (let i = 0; i < n; i += 1) {
      const res = await client
        .put(`/l/${ns}/k${i}`)
        .value(JSON.stringify({ holder: 'h', session: '1', class: 'c', epoch: 1, waitMs: 0, at: Date.now() }))
        .exec();
      last = BigInt(res.header.revision);
      if (first === 0n) first = last;
    }
    return { first, last };
  }
  /** The highest checkpoint the tailer wrote with a proof (the table keeps one row per cluster once merged: not a count). */
  const provenHighest = async (): Promise<bigint> =>
    BigInt(
      (
        await store.rows<{ r: string }>(
          "SELECT toString(max(revision)) AS r FROM {db:Identifier}.checkpoints WHERE cluster = {c:String} AND proof != '' AND leader != 'mallory'",
          { c: label },
        )
      )[0]?.r ?? '0',
    );
  const capturedUnder = async (ns: string, from: bigint, to: bigint): Promise<number> =>
    (await capturedRows(store, label, from, to)).filter((r) => r.key.startsWith(`/l/${ns}/`)).length;

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    client = createEtcdClient({ name: 'test', endpoints });
    await checkpointAtHead(store, client, label); // a checkpoint written before proofs: taken as it is
  });
  after(async () => {
    client.close();
    await closeStore();
  });

  it('a forged checkpoint of a higher term, ahead of the head of capture, is alarmed and the stretch below it captured', async () => {
    let replica = start();
    const warmup = await puts(uniqueId('warm'), 3);
    await waitFor('a proven checkpoint past the warm-up', async () => ((await provenHighest()) >= warmup.last ? true : undefined), 60_000, 200);
    await replica.close();

    // Written while no tailer runs: the stretch a forged checkpoint would skip.
    const ns = uniqueId('gap');
    const missed = await puts(ns, 5);
    const timeline = (await currentTimeline(store, label))?.timeline ?? 0;
    const head = await headRevision(client);
    await store.insert('checkpoints', [{ cluster: label, revision: head.toString(), leader: 'mallory', term: (2n ** 62n).toString(), timeline }]);
    // A proof of another row copied onto it proves nothing either.
    const [genuine] = await store.rows<{ proof: string }>("SELECT proof FROM {db:Identifier}.checkpoints WHERE cluster = {c:String} AND proof != '' LIMIT 1", {
      c: label,
    });
    await store.insert('checkpoints', [
      { cluster: label, revision: head.toString(), leader: 'mallory', term: (2n ** 62n + 1n).toString(), timeline, proof: genuine?.proof ?? '' },
    ]);
    assert.equal((await readFencedCheckpoint(store, label)).revision, head, 'the forged row is the one in effect');

    replica = start();
    try {
      await waitFor(
        'the stretch below the forged checkpoint captured',
        async () => ((await capturedUnder(ns, missed.first, missed.last)) === 5 ? true : undefined),
        60_000,
        200,
      );
      const alarmed = health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_RESUME_UNPROVEN');
      assert.ok(alarmed, 'alarmed');
      assert.match(alarmed.message, new RegExp(`revision ${head}`));
      // The forged term deposes nobody: the tailer's own checkpoint keeps advancing beside it.
      const more = await puts(uniqueId('after'), 2);
      await waitFor('proven checkpoints written past the forged term', async () => ((await provenHighest()) >= more.last ? true : undefined), 60_000, 200);
      await waitFor('capture goes on', async () => ((await capturedRows(store, label, more.first, more.last)).length >= 2 ? true : undefined), 30_000, 200);
    } finally {
      await replica.close();
    }
  });

  it('a forged catch-up segment over revisions never captured is not taken as durable', async () => {
    const timeline = (await currentTimeline(store, label))?.timeline ?? 0;
    const ns = uniqueId('seg');
    const missed = await puts(ns, 4);
    const checkpoint = missed.first - 1n;
    const forged = { cluster: label, timeline, from_revision: missed.first.toString(), through: missed.last.toString(), term: '1', updated_at: Date.now() };
    await store.insert('catchup_segments', [forged, { ...forged, proof: 'hs256.AAAAAAAA.not-a-proof' }]);
    assert.deepEqual(
      await readDurable(store, label, timeline, checkpoint),
      [{ from: missed.first, through: missed.last }],
      'read without the key, the rows claim the stretch',
    );
    assert.deepEqual(await readDurable(store, label, timeline, checkpoint, secret), [], 'with the key, neither is proven');
    const replica = start();
    try {
      await waitFor(
        'the stretch the forged segment claims captured',
        async () => ((await capturedUnder(ns, missed.first, missed.last)) === 4 ? true : undefined),
        60_000,
        200,
      );
    } finally {
      await replica.close();
    }
  });

  it('one forged row dated in the future, and a merge of `checkpoints` that keeps only it, do not make the store read as written before proofs (insider review)', async () => {
    const ns = uniqueId('merge');
    const missed = await puts(ns, 3);
    const timeline = (await currentTimeline(store, label))?.timeline ?? 0;
    await store.insert('checkpoints', [
      {
        cluster: label,
        revision: (await headRevision(client)).toString(),
        leader: 'mallory',
        term: (2n ** 62n + 2n).toString(),
        timeline,
        updated_at: Date.UTC(2099, 0, 1),
      },
    ]);
    await store.command('OPTIMIZE TABLE {db:Identifier}.checkpoints FINAL');
    const [left] = await store.rows<{ n: string }>("SELECT count() AS n FROM {db:Identifier}.checkpoints WHERE cluster = {c:String} AND proof != ''", {
      c: label,
    });
    assert.equal(left?.n, '0', 'the merge kept only the forged row');
    const replica = start();
    try {
      await waitFor(
        'the stretch below the forged checkpoint captured',
        async () => ((await capturedUnder(ns, missed.first, missed.last)) === 3 ? true : undefined),
        60_000,
        200,
      );
    } finally {
      await replica.close();
    }
  });
  it('a restore gap written by hand at the next generation is alarmed and not finished: nothing captured is marked rolled back', async () => {
    const ns = uniqueId('kept');
    const kept = await puts(ns, 3);
    let replica = start();
    try {
      await waitFor('the puts captured', async () => ((await capturedUnder(ns, kept.first, kept.last)) === 3 ? true : undefined), 60_000, 200);
    } finally {
      await replica.close();
    }
    const timeline = (await currentTimeline(store, label))?.timeline ?? 0;
    // A restore recorded half-way (its gap, no timeline) is finished at the next start by marking every row above
    // its start rolled back: this one, from revision 1, would hide all the captured history of the cluster.
    const forged = {
      cluster: label,
      from_revision: '1',
      to_revision: kept.last.toString(),
      detected_at: Date.now(),
      reason: 'restore: the etcd was restored (insider)',
      kind: 'restore' as const,
      history_lost: 0 as const,
      generation: timeline + 1,
      previous_cluster_id: 'c0',
      cluster_id: 'c0',
      term: '1',
    };
    await recordGap(store, { ...forged, proof: 'hs256.AAAAAAAA.not-a-proof' });
    replica = start();
    try {
      const more = await puts(uniqueId('after'), 1);
      await waitFor('capture goes on', async () => ((await capturedRows(store, label, more.first, more.last)).length === 1 ? true : undefined), 60_000, 200);
      const alarmed = health.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_RESTORE_UNPROVEN');
      assert.ok(alarmed, 'alarmed');
      assert.match(alarmed.message, new RegExp(`generation ${timeline + 1}\\)`));
      assert.equal((await currentTimeline(store, label))?.timeline ?? 0, timeline, 'no restore recorded');
      const [marked] = await store.rows<{ n: string }>(
        'SELECT toString(count()) AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND (rolled_back_by != 0 OR superseded_by != 0)',
        { c: label },
      );
      assert.equal(marked?.n, '0', 'no captured row marked rolled back');
    } finally {
      await replica.close();
    }
  });
});
