// A catch-up over history written while no tailer led — lease expiries, and
// no /sys/clock write for a long stretch after them — that is stopped again
// and again mid-way must still advance its checkpoint at every run and finish
// exact. An expiry's time is bracketed by the nearest revisions whose time
// etcd holds (the grants' and marks' own wall times), not only by clock
// writes: the bracket is recorded (time_error_ms, half its width) and must
// contain the commit.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { Registry } from 'prom-client';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { firstClockAfter } from '../../tailer/watch/etcdReads.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { tailerMetrics } from '../../tailer/tailerMetrics.js';
import { assertExactCapture, headRevision, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { Workload, type Session } from '../support/workload.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger('warn');
let client: Etcd3;
let env: Awaited<ReturnType<typeof tempStore>>;

before(async () => {
  client = createEtcdClient({ name: 'test', endpoints });
  env = await tempStore();
});

after(async () => {
  client.close();
  await env.close();
});

type Expiry = { revision: string; before: number; after: number };

/** Rounds of grants on a few sessions, each round ending in the sessions' expiries; never a clock write. */
async function historyWithoutClock(w: Workload, rounds: number, grantsPerRound: number): Promise<Expiry[]> {
  const expiries: Expiry[] = [];
  for (let r = 0; r < rounds; r += 1) {
    const sessions: Session[] = await Promise.all(Array.from({ length: 4 }, () => w.session()));
    for (let i = 0; i < grantsPerRound; i += 200) {
      await Promise.all(Array.from({ length: Math.min(200, grantsPerRound - i) }, (_, j) => w.grant(sessions[(i + j) % 4] as Session, `p${r}/${i + j}`)));
    }
    for (const s of sessions) expiries.push(await w.expire(s));
  }
  return expiries;
}

async function clockAt(revision: bigint): Promise<number> {
  const res = await client.kv.range({ key: Buffer.from('/sys/clock'), revision: revision.toString() });
  const kv = res.kvs[0];
  assert.ok(kv, `a clock write at or before ${revision}`);
  return (JSON.parse(kv.value.toString('utf8')) as { at: number }).at;
}

const options = {
  electionTtlSeconds: 3,
  catchUpWindows: 4,
  splitMinRevisions: 1_000,
  checkpointIntervalMs: 100,
  clockIntervalMs: 600_000,
  // Small batches while catching up too (the sink's catch-up pace): the test stops runs a few batches in.
  sink: { maxRows: 500, maxDelayMs: 20, catchUp: { maxRows: 500, maxDelayMs: 20 } },
};

describe('tailer catch-up progress', () => {
  it(
    'stopped 5 times mid catch-up over clock-less history with expiries → the checkpoint advances at every run, then exact; expiry brackets from the stream',
    { timeout: 600_000 },
    async (t) => {
      const { store } = env;
      const label = uniqueId('prog');
      const w = new Workload(client, uniqueId('ns'));
      const from = (await headRevision(client)) + 1n;
      const clockBefore = BigInt(await w.clock()); // the last clock write before the history
      const expiries = await historyWithoutClock(w, 12, 1_000);
      const historyEnd = await headRevision(client);
      await store.insert('checkpoints', [{ cluster: label, revision: (from - 1n).toString(), leader: 'test' }]);
      const registry = new Registry();
      const metrics = tailerMetrics(registry);
      const durable = async (): Promise<number> => (await metrics.events.get()).values.reduce((n, v) => n + v.value, 0);

      // Each run is stopped as soon as it has made 1 000 events durable (about a twentieth of the backlog), in one
      // window: every durable revision is then contiguous, so only a bracket still waiting can hold the checkpoint back.
      const checkpoints: bigint[] = [from - 1n];
      const work: number[] = [];
      for (let i = 0; i < 5; i += 1) {
        const replica = new TailerReplica(
          { cluster: { name: label, endpoints }, store, log, metrics, replicaId: `prog-${i}` },
          { ...options, catchUpWindows: 1 },
        );
        const before = await durable();
        replica.start();
        await waitFor(`run ${i} to write 1 000 events`, async () => (await durable()) - before >= 1_000 || undefined, 120_000, 20);
        await replica.close();
        work.push((await durable()) - before);
        checkpoints.push(await readCheckpoint(store, label));
      }
      t.diagnostic(`history ${from}..${historyEnd}; checkpoint after each stop: ${checkpoints.join(' → ')}; events written per run: ${work.join(', ')}`);
      for (let i = 1; i < checkpoints.length; i += 1) {
        assert.ok(
          (checkpoints[i] as bigint) > (checkpoints[i - 1] as bigint),
          `run ${i - 1} left the checkpoint at ${checkpoints[i]} (started from ${checkpoints[i - 1]})`,
        );
      }
      assert.ok((checkpoints.at(-1) as bigint) < historyEnd, 'the runs were stopped mid catch-up');

      // The rest in range-split windows.
      const end = await headRevision(client);
      const last = new TailerReplica({ cluster: { name: label, endpoints }, store, log, replicaId: 'prog-final' }, options);
      last.start();
      await waitFor('the final run to catch up', async () => (await readCheckpoint(store, label)) >= end || undefined, 240_000, 100);
      await last.close();
      await assertExactCapture(store, label, client, from, end, w.expected);

      // Each expiry's bracket contains its commit ([before, after] around the revoke) and is far narrower than the clock writes' bracket.
      const rows = await store.rows<{ revision: string; wall_time: string; time_error_ms: number }>(
        `SELECT toString(revision) AS revision, toUnixTimestamp64Milli(wall_time) AS wall_time, time_error_ms FROM {db:Identifier}.events FINAL
       WHERE cluster = {c:String} AND event_type = 'expiry' AND namespace = {ns:String}`,
        { c: label, ns: w.ns },
      );
      assert.equal(rows.length, 12_000, 'every hold expired');
      const next = await firstClockAfter(client, historyEnd, AbortSignal.timeout(10_000)); // a run's own: the nearest clock after the history
      assert.ok(next);
      const clockWidth = next.at - (await clockAt(clockBefore));
      const byRevision = new Map(expiries.map((e) => [e.revision, e]));
      let widest = 0;
      for (const r of rows) {
        const e = byRevision.get(r.revision);
        assert.ok(e, `expiry at ${r.revision} is one of ours`);
        const est = Number(r.wall_time);
        const err = Number(r.time_error_ms);
        widest = Math.max(widest, 2 * err);
        assert.ok(est - err <= e.after && est + err >= e.before, `bracket [${est - err}, ${est + err}] misses the commit window [${e.before}, ${e.after}]`);
        assert.ok(2 * err < clockWidth, `bracket ${2 * err} ms is no narrower than the clock writes' ${clockWidth} ms`);
      }
      t.diagnostic(`expiry brackets: widest ${widest} ms (the clock writes alone would give ${clockWidth} ms)`);
    },
  );
});
