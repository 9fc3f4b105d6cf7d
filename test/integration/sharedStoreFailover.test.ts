// Tailer replicas in separate processes over ONE shared store (issue 41 item 6): the store process
// (platform/storeServer.ts) owns chdb; two tailer processes talk to it over HTTP, as roles do to a ClickHouse
// server. The leader is killed -9 mid catch-up: the standby leads within the election TTL (plus a few seconds)
// and capture is exact — every change of etcd's history once under FINAL, none etcd lacks. (The older failover
// test in tailerCrash.test.ts gives each replica a store of its own.) Real etcd, real chdb behind the store.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { migrate } from '../../core/migrations.js';
import { assertExactCapture } from '../support/capture.js';
import { startTailerChild } from '../support/children.js';
import { startStoreProcess, type StoreProcess } from '../support/storeProcess.js';
import { tempDir, testConfig, uniqueId } from '../support/env.js';
import { Workload } from '../support/workload.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const childOptions = {
  electionTtlSeconds: 3,
  catchUpWindows: 4,
  splitMinRevisions: 1_000,
  checkpointIntervalMs: 100,
  leaseWitness: false,
  sink: { maxRows: 250, maxDelayMs: 20 },
};

describe('tailer replicas in separate processes over one shared store', { timeout: 300_000 }, () => {
  const tmp = tempDir('lockaudit-shared-');
  let storeProc: StoreProcess;
  let store: AuditStore;
  let client: Etcd3;

  before(async () => {
    storeProc = await startStoreProcess(path.join(tmp.dir, 'ch'));
    store = storeProc.connect();
    await migrate(store); // once, before the tailers (each migrates too, finding nothing to do)
    client = createEtcdClient({ name: 'test', endpoints });
  });

  after(async () => {
    client?.close();
    await store?.close();
    await storeProc?.stop();
    tmp.remove();
  });

  it('the leader killed -9 mid catch-up: the standby leads within the TTL and capture is exact', async (t) => {
    const label = uniqueId('shared');
    const w = new Workload(client, uniqueId('ns'));
    const from = BigInt(await w.clock()) + 1n;
    // History written while no tailer runs: the catch-up the leader is killed in.
    const sessions = await Promise.all(Array.from({ length: 4 }, () => w.session()));
    for (let i = 0; i < 3_000; i += 200)
      await Promise.all(Array.from({ length: 200 }, (_, j) => w.grant(sessions[(i + j) % 4] as (typeof sessions)[number], `bulk/${i + j}`)));
    for (const s of sessions) await w.expire(s);
    const spec = (replicaId: string) => ({
      store: { url: storeProc.url, password: storeProc.password },
      cluster: { name: label, endpoints },
      initialCheckpoint: (from - 1n).toString(),
      options: childOptions,
      replicaId,
    });
    const a = startTailerChild(spec('replica-a'));
    const b = startTailerChild(spec('replica-b'));
    try {
      await Promise.race([a.waitFor((c) => c.leaderAt !== undefined, 60_000), b.waitFor((c) => c.leaderAt !== undefined, 60_000)]);
      const [leader, standby] = a.leaderAt !== undefined ? [a, b] : [b, a];
      // Mid catch-up: some of the history durable in the shared store, not all.
      await leader.waitFor((c) => c.durable >= 1_500, 120_000);
      const killedAt = Date.now();
      await leader.kill9();
      const live = w.mixed(3); // writes go on during the failover
      await standby.waitFor((c) => c.leaderAt !== undefined, 30_000);
      const takeoverMs = Number(standby.leaderAt) - killedAt;
      t.diagnostic(`killed after ${leader.durable} events durable; the standby led ${takeoverMs} ms later (TTL ${childOptions.electionTtlSeconds} s)`);
      assert.ok(takeoverMs <= (childOptions.electionTtlSeconds + 4) * 1_000, `takeover took ${takeoverMs} ms`);
      await live;
      const end = BigInt(await w.clock());
      await standby.waitFor((c) => c.checkpoint >= end, 180_000);
      await standby.term();
      const rows = await assertExactCapture(store, label, client, from, end, w.expected);
      t.diagnostic(`${rows} changes captured exactly across the failover, through the store process`);
    } finally {
      await a.kill9();
      await b.kill9();
    }
  });
});
