// Tailers as child processes (kill -9 needs a process; chdb binds one data
// dir per process): crashes at random points of a range-split catch-up, and
// failover between two replicas. This file's own process opens its chdb
// path only while no child has it open.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { holdKey } from '../../core/keyspace.js';
import { assertExactCapture } from '../support/capture.js';
import { startTailerChild } from '../support/children.js';
import { tempDir, testConfig, uniqueId } from '../support/env.js';
import { Workload } from '../support/workload.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const tmp = tempDir('lockaudit-crash-');
const chdbPath = path.join(tmp.dir, 'ch'); // the only data dir this process ever opens
let client: Etcd3;

before(() => {
  client = createEtcdClient({ name: 'test', endpoints });
});

after(() => {
  client.close();
  tmp.remove();
});

async function head(): Promise<bigint> {
  return BigInt((await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
}

/** Many revisions quickly: grants on a few sessions (concurrent txns), then each session expires. */
async function bulkHistory(w: Workload, grants: number): Promise<void> {
  const sessions = await Promise.all(Array.from({ length: 4 }, () => w.session()));
  for (let i = 0; i < grants; i += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, grants - i) }, (_, j) => w.grant(sessions[(i + j) % 4] as (typeof sessions)[number], `bulk/${i + j}`)),
    );
  }
  for (const s of sessions) await w.expire(s);
}

async function withStore<T>(fn: (store: AuditStore) => Promise<T>): Promise<T> {
  const store = new AuditStore({ mode: 'embedded', path: chdbPath, database: 'lockaudit' });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

// The Workload stands a lease revoke in for an expiry; a revoke before the TTL ran out is no expiry to the lease
// witness (it was a hand intervention), so these tailers run without it, as tailer.test.ts's do. The standby replica of
// the failover case followed etcd from its start and read the revokes as 'deleted' (CI, 5 of 5).
const childOptions = { electionTtlSeconds: 3, catchUpWindows: 4, splitMinRevisions: 1_000, checkpointIntervalMs: 100, leaseWitness: false };

describe('tailer (child processes)', () => {
  it('kill -9 at random points of a range-split catch-up, 5 times, restart each time → still exact', { timeout: 400_000 }, async (t) => {
    const label = uniqueId('c');
    const w = new Workload(client, uniqueId('ns'));
    const from = (await head()) + 1n;
    await bulkHistory(w, 12_000);
    await w.mixed(10);
    const kills: string[] = [];
    let midCatchUp = 0;
    for (let i = 0; i < 5; i += 1) {
      if (i > 0) await bulkHistory(w, 5_000); // each restart has history to catch up
      const behind = await head();
      const child = startTailerChild({
        chdbPath,
        cluster: { name: label, endpoints },
        initialCheckpoint: (from - 1n).toString(),
        options: childOptions,
        replicaId: `crash-${i}`,
      });
      await child.waitFor((c) => c.leaderAt !== undefined, 60_000);
      // Catch-up got faster (binary sink): kill early enough to land inside it.
      await new Promise((r) => setTimeout(r, 150 + i * 100 + Math.floor(Math.random() * 150)));
      await child.kill9();
      kills.push(`${child.checkpoint}/${behind}`);
      if (child.checkpoint < behind) midCatchUp += 1;
      await w.mixed(2); // and some live-looking history
    }
    const end = BigInt(await w.clock());
    const last = startTailerChild({ chdbPath, cluster: { name: label, endpoints }, options: childOptions, replicaId: 'crash-final' });
    await last.waitFor((c) => c.checkpoint >= end, 240_000);
    await last.term();
    const p = last.progress;
    t.diagnostic(
      `final run: ${p.length} checkpoints, first ${p[0]?.[0]} ms → ${p[0]?.[1]}, last ${p.at(-1)?.[0]} ms → ${p.at(-1)?.[1]}; leader at ${Number(last.leaderAt) - 0}`,
    );
    // Where each kill landed: checkpoints below historyEnd were mid catch-up (0: before the first checkpoint write).
    t.diagnostic(`history from ${from}; checkpoint/head at each kill: ${kills.join(', ')} (0: before its first checkpoint write)`);
    assert.equal(kills.length, 5);
    assert.ok(midCatchUp >= 3, `only ${midCatchUp} of 5 kills landed during catch-up`);
    await withStore(async (store) => {
      const n = await assertExactCapture(store, label, client, from, end, w.expected);
      assert.ok(n > 12_000);
    });
  });

  it('failover: two replicas, kill -9 the leader → the other takes over within the TTL plus a few seconds; still exact', { timeout: 240_000 }, async (t) => {
    const label = uniqueId('c');
    const w = new Workload(client, uniqueId('ns'));
    const from = (await head()) + 1n;
    const init = (from - 1n).toString();
    const otherPath = path.join(tmp.dir, 'ch-a'); // replica A's store; this process never opens it
    const a = startTailerChild({
      chdbPath: otherPath,
      cluster: { name: label, endpoints },
      initialCheckpoint: init,
      options: childOptions,
      replicaId: 'replica-a',
    });
    await a.waitFor((c) => c.leaderAt !== undefined, 60_000);
    const b = startTailerChild({ chdbPath, cluster: { name: label, endpoints }, initialCheckpoint: init, options: childOptions, replicaId: 'replica-b' });
    try {
      await w.mixed(5);
      await a.waitFor((c) => c.checkpoint >= BigInt(w.expected.at(-1)?.revision ?? '0'), 60_000);
      assert.equal(b.leaderAt, undefined, 'only one leader');
      const killedAt = Date.now();
      await a.kill9();
      const live = w.mixed(5); // writes continue during the failover
      await b.waitFor((c) => c.leaderAt !== undefined, 30_000);
      const takeoverMs = Number(b.leaderAt) - killedAt;
      t.diagnostic(`takeover after ${takeoverMs} ms (TTL ${childOptions.electionTtlSeconds} s)`);
      assert.ok(takeoverMs <= (childOptions.electionTtlSeconds + 4) * 1_000, `takeover took ${takeoverMs} ms`);
      await live;
      const end = BigInt(await w.clock());
      await b.waitFor((c) => c.checkpoint >= end, 120_000);
      await b.term();
      await withStore(async (store) => {
        await assertExactCapture(store, label, client, from, end, w.expected);
        const [row] = await store.rows<{ leader: string }>(
          'SELECT argMax(leader, revision) AS leader FROM {db:Identifier}.checkpoints WHERE cluster = {c:String}',
          { c: label },
        );
        assert.equal(row?.leader, 'replica-b');
        const [held] = await store.rows<{ n: string }>(
          'SELECT count() AS n FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND key = {k:String}',
          { c: label, k: holdKey(w.lock('r0/x')) },
        );
        assert.ok(Number(held?.n) > 0);
      });
    } finally {
      await a.kill9();
      await b.kill9();
    }
  });
});
