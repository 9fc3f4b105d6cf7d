// The tailer across an etcd restart, on a single-member etcd of this file's
// own (the project's services code, port block 27001: client 27001, peer
// 27011; data dir under a temp dir). The etcd process is stopped by its pid
// (SIGTERM) while the tailer is live, nothing is written while it is down,
// and it is started again on the same data dir. The tailer's watch must
// reopen from its own position: every change before and after is captured
// exactly once and the checkpoint reaches the head.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { servicesUp, stopInstance } from '../../services/localServices.js';
import { runningPid } from '../../services/processes.js';
import { TailerReplica } from '../../tailer/replica.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { assertExactCapture, waitFor } from '../support/capture.js';
import { tempDir, tempStore, testConfig, uniqueId } from '../support/env.js';
import { Workload } from '../support/workload.js';

describe('tailer across an etcd restart (private single-member etcd)', { timeout: 120_000 }, () => {
  const tmp = tempDir('lockaudit-reconnect-');
  const config = testConfig({ LOCKAUDIT_DATA_DIR: tmp.dir, LOCKAUDIT_LOCAL_PORT_BASE: '27001', LOCKAUDIT_LOCAL_ETCD_MEMBERS: '1' });
  const endpoint = `http://127.0.0.1:${config.local.ports.etcdClient[0]}`;
  // The tailer's own log lines, to see that the watch really broke (and how it came back).
  const logLines: string[] = [];
  const log = createLogger('info', {}, { write: (line: string) => void logLines.push(line) });
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let client: Etcd3;
  let replica: TailerReplica | undefined;
  let etcdStarted = false;

  before(async () => {
    assert.equal(config.local.ports.etcdClient[0], 27001);
    assert.equal(config.local.ports.etcdPeer[0], 27011);
    await servicesUp(config, { only: ['etcd'] });
    etcdStarted = true;
    ({ store, close: closeStore } = await tempStore());
    client = createEtcdClient({ name: 'reconnect', endpoints: [endpoint] });
  });

  after(async () => {
    await replica?.close();
    client?.close();
    await closeStore?.();
    // Only the member this file started: its pid file lives in this file's own data dir.
    if (etcdStarted) await stopInstance(config, 'etcd-1');
    tmp.remove();
  });

  async function head(): Promise<bigint> {
    return BigInt((await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
  }

  async function waitCheckpoint(label: string, atLeast: bigint, timeoutMs = 45_000): Promise<void> {
    await waitFor(`checkpoint of ${label} ≥ ${atLeast}`, async () => ((await readCheckpoint(store, label)) >= atLeast ? true : undefined), timeoutMs, 100);
  }

  it('etcd stopped (SIGTERM) and started again on its data dir: the watch reopens from its own position; everything exactly once, checkpoint at the head', async () => {
    const label = uniqueId('c');
    const w = new Workload(client, uniqueId('ns'));
    const from = (await head()) + 1n;
    await w.mixed(3); // history before the tailer: catch-up
    await store.insert('checkpoints', [{ cluster: label, revision: (from - 1n).toString(), leader: 'test' }]);
    const leader: boolean[] = [];
    replica = new TailerReplica(
      { cluster: { name: label, endpoints: [endpoint] }, store, log, onLeader: (l) => leader.push(l) },
      // A lease TTL well above the outage: leadership outlives it, so what is tested is the watch coming back, not a new election.
      { electionTtlSeconds: 15, catchUpWindows: 2, splitMinRevisions: 10, checkpointIntervalMs: 100, clockIntervalMs: 500, leaseWitness: false },
    );
    replica.start();
    await w.mixed(2); // live
    const beforeStop = BigInt(await w.clock());
    await waitCheckpoint(label, beforeStop);

    // Stop etcd by its pid (stopInstance reads this file's own pid file and checks /proc before signalling).
    const pid = await runningPid(config.dataDir, 'etcd-1');
    assert.ok(pid !== undefined, 'our etcd runs');
    const linesAtStop = logLines.length;
    // etcd's graceful stop waits for open watch streams for a few seconds before it exits and drops them.
    assert.equal(await stopInstance(config, 'etcd-1', 'SIGTERM'), true);
    assert.equal(await runningPid(config.dataDir, 'etcd-1'), undefined);
    // The watch notices; its reopen attempts fail while etcd is down (nothing is written meanwhile).
    await waitFor(
      'the tailer to see the watch break',
      () => (logLines.slice(linesAtStop).some((l) => l.includes('watch disconnected')) ? true : undefined),
      20_000,
    );
    await new Promise((r) => setTimeout(r, 2_000));

    // Same data dir, same ports: history up to the stop is still there.
    await servicesUp(config, { only: ['etcd'] });
    const restarted = await runningPid(config.dataDir, 'etcd-1');
    assert.ok(restarted !== undefined && restarted !== pid, 'a new etcd process');
    assert.ok((await head()) >= beforeStop, 'etcd kept its history across the restart');

    await w.mixed(3); // after the restart
    const end = BigInt(await w.clock());
    assert.ok(w.expected.some((e) => BigInt(e.revision) < beforeStop) && w.expected.some((e) => BigInt(e.revision) > beforeStop));
    await waitCheckpoint(label, end);
    // The checkpoint reaches the head (the tailer's own clock writes keep moving it).
    const headNow = await head();
    await waitCheckpoint(label, headNow);

    await assertExactCapture(store, label, client, from, end, w.expected);
    // Not even a replay for FINAL to fold: the reopened watch resumed exactly at its position, and the run never restarted.
    const [raw] = await store.rows<{ n: string; distinct: string }>(
      `SELECT count() AS n, uniqExact(revision, key) AS distinct FROM {db:Identifier}.events WHERE cluster = {c:String} AND revision BETWEEN {from:UInt64} AND {to:UInt64}`,
      { c: label, from: from.toString(), to: end.toString() },
    );
    assert.equal(raw?.n, raw?.distinct, 'each change written once');
    // It came back through the watch reopening from its position, not through a new election and run.
    assert.ok(
      logLines.slice(linesAtStop).some((l) => l.includes('watch reopened')),
      'the watch reopened',
    );
    assert.deepEqual(leader, [true], 'leadership was kept throughout');
    assert.equal(logLines.filter((l) => l.includes('tailing from checkpoint')).length, 1, 'one pipeline run');
  });
});
