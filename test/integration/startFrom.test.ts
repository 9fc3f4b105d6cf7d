// Where a tailer run starts, decided once from facts read once
// (tailer/recovery/startDecision.ts startFrom over restores.ts startFacts),
// against a private etcd (ports portBase + 74/75, compacted and restored
// here) and history a real tailer captured: a resume whose witnesses etcd
// still holds, a compaction gap to the very revision etcd compacted at (the
// replica records the gap from this answer: no second search), and restores
// seen by etcd's cluster id, its head, and a witness the restored etcd holds
// otherwise. Each start is recorded and replayed without etcd to the same
// decision; the replica that captures runs on an injected etcd client.
// RECORD_START_FACTS=1 writes the recordings to
// test/unit/fixtures/startFacts/, which the unit tests replay.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { projectRoot } from '../../core/paths.js';
import { restoreFrom, type RestorePlan } from '../../tailer/recovery/restorePlan.js';
import { etcdPosition, restoreSeen, startFacts, type Timeline } from '../../tailer/recovery/restores.js';
import { startFrom, type Start, type StartFacts } from '../../tailer/recovery/startDecision.js';
import { leaderIndex } from '../../tailer/recovery/raftMarks.js';
import { TailerReplica } from '../../tailer/replica.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { startPrivateEtcd, type PrivateEtcd } from '../support/privateEtcd.js';
import { encodeStart, recordingFacts, replayingFacts } from '../support/startFacts.js';
import { Workload } from '../support/workload.js';

const portBase = testConfig().local.portBase;
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');

describe('the start decision from facts read once', { timeout: 180_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let own: PrivateEtcd;
  let client: Etcd3;
  const cluster = uniqueId('sf');
  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    own = await startPrivateEtcd(portBase + 74, portBase + 75);
    client = createEtcdClient({ name: 'own', endpoints: [own.endpoint] });
  });
  after(async () => {
    client?.close();
    await own?.stop();
    await closeStore?.();
  });

  const timelineOf = (clusterId: string): Timeline => ({ generation: 0, timeline: 0, clusterId, resumeRevision: 0n, detectedMs: 0 });

  /**
   * One start, recorded, replayed without etcd to the same decision, and written as a fixture when asked. A
   * restore's plan (restorePlan.ts restoreFrom) is decided too, from the same facts, and replayed likewise.
   */
  async function start(scenario: string, checkpoint: bigint, timeline: Timeline): Promise<Start> {
    const position = await etcdPosition(client);
    const rec = recordingFacts(startFacts(client, store, cluster, timeline));
    const decision = await startFrom(rec.facts, checkpoint, timeline.clusterId, position);
    const restore = (facts: StartFacts): Promise<RestorePlan> | undefined =>
      decision.kind === 'restore' ? restoreFrom(facts, { checkpoint, seen: restoreSeen(decision, timeline, position), lastHead: 0n }) : undefined;
    const plan = await restore(rec.facts);
    const replay = replayingFacts(rec.asked);
    assert.deepEqual(await startFrom(replay, checkpoint, timeline.clusterId, position), decision, `${scenario}: replayed`);
    assert.deepEqual(await restore(replay), plan, `${scenario}: its plan replayed`);
    if (process.env.RECORD_START_FACTS === '1') {
      const file = path.join(projectRoot, 'test/unit/fixtures/startFacts', `${scenario}.json`);
      writeFileSync(file, encodeStart({ scenario, checkpoint, timelineClusterId: timeline.clusterId, position, asked: rec.asked, decision, plan }));
    }
    plans.set(scenario, plan);
    return decision;
  }
  const plans = new Map<string, RestorePlan | undefined>();

  it('resumes, records a gap to the compaction revision, or sees a restore', async () => {
    // History a real tailer captured: its events are the witnesses a start checks.
    // Its etcd client and raft check injected: the cluster's configured endpoint answers nothing, so the run
    // captures only through what it was handed (and close() closes the client it was handed).
    const injected = createEtcdClient({ name: 'own', endpoints: [own.endpoint] });
    const tailer = new TailerReplica(
      {
        cluster: { name: cluster, endpoints: ['http://127.0.0.1:9'] },
        store,
        log: log.child({ cluster }),
        etcd: injected,
        raft: { ask: (clusterId) => leaderIndex(cluster, [own.endpoint], clusterId) },
      },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, clockIntervalMs: 3_600_000 },
    );
    const w = new Workload(client, uniqueId('ns'));
    let checkpoint = 0n;
    let snapshot = '';
    let beforeTop = 0n;
    let afterFirst = 0n;
    try {
      tailer.start();
      const s = await w.session();
      const captured = async (revision: bigint): Promise<bigint> =>
        waitFor(
          'the grants captured',
          async () => ((await readCheckpoint(store, cluster)) >= revision ? readCheckpoint(store, cluster) : undefined),
          60_000,
          100,
        );
      let rev = 0n;
      for (let i = 0; i < 8; i++) rev = BigInt(await w.grant(s, `before-${i}`));
      await captured(rev);
      // The snapshot a restore goes back to: the grants below are captured, then rolled back.
      snapshot = await own.snapshot('before.db');
      beforeTop = rev;
      for (let i = 0; i < 8; i++) {
        rev = BigInt(await w.grant(s, `after-${i}`));
        if (i === 0) afterFirst = rev;
      }
      checkpoint = await captured(rev);
    } finally {
      await tailer.close();
    }
    await assert.rejects(injected.get('/q/any').string(), 'the replica closed the client it was handed');
    const timeline = timelineOf((await etcdPosition(client)).clusterId);

    const resume = await start('resume-witnesses-intact', checkpoint, timeline);
    assert.deepEqual(resume, { kind: 'resume', from: checkpoint + 1n });

    // Compacted past the checkpoint: a gap to exactly the compaction revision.
    let top = 0n;
    for (let i = 0; i < 10; i++) top = BigInt((await client.put(`/q/start/${i}`).value(String(i)).exec()).header.revision);
    const compactAt = top - 3n;
    await client.kv.compact({ revision: compactAt.toString(), physical: true });
    assert.deepEqual(await start('gap-compacted', checkpoint, timeline), { kind: 'gap', from: checkpoint + 1n, to: compactAt });

    const otherId = await start('restore-cluster-id', checkpoint, timelineOf('12345'));
    assert.equal(otherId.kind, 'restore');
    assert.match(otherId.kind === 'restore' ? otherId.why : '', /cluster id changed from 12345/);

    // Restored to the snapshot (same cluster id): etcd's head is below the checkpoint.
    await own.restore(snapshot);
    client.close();
    client = createEtcdClient({ name: 'own', endpoints: [own.endpoint] });
    const headBelow = await start('restore-head-below', checkpoint, timeline);
    assert.equal(headBelow.kind, 'restore');
    assert.match(headBelow.kind === 'restore' ? headBelow.why : '', /head revision \d+ is below the checkpoint/);
    // Other writes take the captured revisions until the head passes the checkpoint: a witness contradicts.
    let head = 0n;
    for (let i = 0; head <= checkpoint + 50n; i++) head = BigInt((await client.put(`/q/other/${i}`).value('x').exec()).header.revision);
    const rewritten = await start('restore-witness-contradicted', checkpoint, timeline);
    assert.equal(rewritten.kind, 'restore');
    assert.match(rewritten.kind === 'restore' ? rewritten.why : '', /was captured put at revision \d+ but etcd/);
    // Each restore's plan: a rollback to where the restored etcd parts from the captured history (after the grants
    // the snapshot holds, before the first it does not), nothing compacted, the gap reaching the checkpoint.
    for (const scenario of ['restore-head-below', 'restore-witness-contradicted']) {
      const plan = plans.get(scenario);
      assert.ok(plan, scenario);
      assert.equal(plan.kind, 'rollback', scenario);
      assert.ok(plan.after >= beforeTop && plan.after < afterFirst, `${scenario}: diverged after ${plan.after}, between ${beforeTop} and ${afterFirst}`);
      assert.deepEqual([plan.resume, plan.compacted, plan.to, plan.snapshot], [plan.after, undefined, checkpoint, true], scenario);
    }
  });
});
