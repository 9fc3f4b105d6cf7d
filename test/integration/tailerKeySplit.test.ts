// `lockaudit keys split-tailer` (tailer/recovery/reprove.ts): a deployment from before the tailer key was split
// from the origin secret moves to a key of its own without losing what its proofs say. Its tailer ran on the
// origin secret alone and left proven checkpoints, a catch-up segment, a restore gap and a quarantine entry;
// an insider's checkpoint row proved with another key sits beside them. After the split every genuine row
// proves under the new key (and no longer under the old one), the forged row proves nothing still, and a
// tailer restarted on the new key resumes where it stood — no replay alarm. Run on a deployment that has its
// own key already, the command refuses.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { migrate } from '../../core/migrations.js';
import { ORIGIN_SECRET_FILE, TAILER_SECRET_FILE } from '../../core/originSecret.js';
import { projectRoot } from '../../core/paths.js';
import { checkpointMac, proofKeyId, restoreGapMac, type SignedRestoreGap } from '../../core/proof.js';
import { tailerKey } from '../../core/tailerSecret.js';
import { checkQuarantine } from '../../exporters/checks/quarantineCheck.js';
import { provenRestores } from '../../exporters/digests/explain.js';
import { HealthState } from '../../platform/health.js';
import { recordGap } from '../../tailer/recovery/gaps.js';
import { provenPosition } from '../../tailer/recovery/provenPosition.js';
import { currentTimeline } from '../../tailer/recovery/restores.js';
import { readFencedCheckpoint } from '../../tailer/sink/offsets.js';
import { TailerReplica } from '../../tailer/replica.js';
import { readDurable, writeDurable } from '../../tailer/watch/catchUpSegments.js';
import { capturedRows, checkpointAtHead, headRevision, waitFor } from '../support/capture.js';
import { tempDir, testConfig, uniqueId } from '../support/env.js';
import { startStoreProcess, type StoreProcess } from '../support/storeProcess.js';

const run = promisify(execFile);
const BIN = path.join(projectRoot, 'bin', 'lockaudit.js');
const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'error');

describe('lockaudit keys split-tailer: a deployment from before the split moves to a tailer key of its own', { timeout: 180_000 }, () => {
  const dir = tempDir('lockaudit-split-');
  const label = uniqueId('split');
  const legacy = Buffer.from(randomBytes(32).toString('base64url'), 'utf8');
  let storeProc: StoreProcess;
  let store: AuditStore;
  let client: Etcd3;

  const cli = async (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^LOCKAUDIT_(ORIGIN|TAILER)_SECRET$|^LOCKAUDIT_CLICKHOUSE_/.test(k)));
    const more = {
      LOCKAUDIT_DATA_DIR: dir.dir,
      LOCKAUDIT_CLICKHOUSE_URL: storeProc.url,
      LOCKAUDIT_CLICKHOUSE_USER: 'lockaudit',
      LOCKAUDIT_CLICKHOUSE_PASSWORD: storeProc.password,
    };
    try {
      const r = await run(process.execPath, [BIN, ...args], { cwd: projectRoot, env: { ...env, ...more } });
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };
  const replica = (health: HealthState, tailerSecret?: Buffer): TailerReplica => {
    const r = new TailerReplica(
      { cluster: { name: label, endpoints }, store, log, health },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, originSecret: legacy, ...(tailerSecret ? { tailerSecret } : {}) },
    );
    r.start();
    return r;
  };

  before(async () => {
    // A deployment from before the split: an origin secret in its data dir, no tailer key.
    writeFileSync(path.join(dir.dir, ORIGIN_SECRET_FILE), `${legacy.toString('utf8')}\n`, { mode: 0o600 });
    storeProc = await startStoreProcess(path.join(dir.dir, 'clickhouse'));
    store = storeProc.connect();
    await migrate(store);
    client = createEtcdClient({ name: 'test', endpoints });
    await checkpointAtHead(store, client, label);
  });
  after(async () => {
    client.close();
    await store.close();
    await storeProc.stop();
    dir.remove();
  });

  it('proves every genuine row again under the new key, leaves the forged one, and the tailer resumes on the new key without a replay', async () => {
    assert.equal(tailerKey({ dataDir: dir.dir }).source, 'origin');
    // 1. The old tailer, on the origin secret: proven checkpoints, and a value it quarantines (with its proof).
    const ns = uniqueId('ns');
    const health = new HealthState();
    let r = replica(health);
    const bad = await client.put(`/l/${ns}/bad`).value('not json').exec();
    const last = BigInt((await client.put(`/l/${ns}/k`).value('{"holder":"h"}').exec()).header.revision);
    await waitFor('a proven checkpoint past the puts', async () => {
      const [row] = await store.rows<{ r: string }>(
        "SELECT toString(max(revision)) AS r FROM {db:Identifier}.checkpoint_proofs WHERE cluster = {c:String} AND proof != ''",
        { c: label },
      );
      return row && BigInt(row.r) >= last ? true : undefined;
    });
    // Refused while the tailer runs: it holds the origin secret and would go on proving with it.
    const running = await cli(['keys', 'split-tailer']);
    assert.equal(running.code, 2, running.stdout + running.stderr);
    assert.match(running.stderr, new RegExp(`a tailer or worker still runs \\(its campaign: [^:]+: /sys/election/tailer\\.${label}/`));
    await r.close();
    // Campaigns of earlier test files' killed tailers lapse within their election TTL: the split waits for none.
    await waitFor(
      'no campaign on the etcd',
      async () => ((await client.getAll().prefix('/sys/election/').keys()).length === 0 ? true : undefined),
      60_000,
      200,
    );
    // Both values are of no shape the API writes: the tailer quarantined each, with its proof.
    const [entry] = await store.rows<{ n: string }>(
      "SELECT toString(count()) AS n FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} AND revision IN ({a:UInt64}, {b:UInt64}) AND proof != ''",
      { c: label, a: bad.header.revision, b: last.toString() },
    );
    assert.equal(entry?.n, '2', 'the tailer quarantined the bad values with its proof');
    const timeline = (await currentTimeline(store, label))?.timeline ?? 0;
    const inEffect = await readFencedCheckpoint(store, label);
    // 2. A catch-up segment and a restore gap under the old key, and a checkpoint row proved with another key.
    await writeDurable(store, { cluster: label, timeline, term: inEffect.term, secret: legacy }, [{ from: last + 10n, through: last + 20n }]);
    const gap: SignedRestoreGap = {
      cluster: label,
      generation: 9,
      fromRevision: '5',
      toRevision: '6',
      detectedAtMs: 1_700_000_000_000,
      historyLost: 0,
      previousClusterId: 'c0',
      clusterId: 'c0',
    };
    await recordGap(store, {
      cluster: label,
      from_revision: gap.fromRevision,
      to_revision: gap.toRevision,
      detected_at: gap.detectedAtMs,
      reason: 'restore (test)',
      kind: 'restore',
      history_lost: 0,
      generation: gap.generation,
      previous_cluster_id: 'c0',
      cluster_id: 'c0',
      term: '1',
      proof: restoreGapMac(legacy, gap),
    });
    const forged = { cluster: label, timeline, term: (inEffect.term + 100n).toString(), revision: (last + 1000n).toString(), leader: 'mallory' };
    await store.insert('checkpoint_proofs', [{ ...forged, proof: checkpointMac(randomBytes(32), forged), updated_at: Date.now() }]);

    // 3. The split. A draft key someone put in the data dir first is refused (they may know it), and so is a
    // --resume with no draft of an earlier split; then the split itself.
    const draft = path.join(dir.dir, `${TAILER_SECRET_FILE}.next`);
    writeFileSync(draft, `${'p'.repeat(43)}\n`, { mode: 0o600 });
    const planted = await cli(['keys', 'split-tailer']);
    assert.equal(planted.code, 2, planted.stdout + planted.stderr);
    assert.match(planted.stderr, /tailer-secret\.next already exists .*someone else put it there/);
    rmSync(draft);
    assert.match((await cli(['keys', 'list'])).stdout, new RegExp(`^tailer key ${proofKeyId(legacy)}  the origin secret, shared with the lock API`, 'm'));
    const resumeNothing = await cli(['keys', 'split-tailer', '--resume']);
    assert.equal(resumeNothing.code, 2, resumeNothing.stdout + resumeNothing.stderr);
    assert.match(resumeNothing.stderr, /--resume: there is no .*tailer-secret\.next/);
    const split = await cli(['keys', 'split-tailer']);
    assert.equal(split.code, 0, split.stdout + split.stderr);
    assert.match(split.stdout, /checkpoints: [1-9]\d* proved again, 1 left/);
    assert.match(split.stdout, /segments: 1 proved again/);
    assert.match(split.stdout, /restoreGaps: 1 proved again/);
    assert.match(split.stdout, /quarantine: 2 proved again\n/);
    // The old key was the API's too: what it vouched for that excuses or explains is named for review.
    assert.match(split.stdout, /review: restore gap of generation 9 \(revisions 5-6\) carried over/);
    const next = tailerKey({ dataDir: dir.dir });
    assert.equal(next.source, 'file');
    assert.deepEqual(next.key, Buffer.from(readFileSync(path.join(dir.dir, TAILER_SECRET_FILE), 'utf8').trim(), 'utf8'));
    assert.notDeepEqual(next.key, legacy);
    const listed = (await cli(['keys', 'list'])).stdout;
    assert.match(listed, new RegExp(`^tailer key ${proofKeyId(next.key)}  \\(.*tailer-secret\\)$`, 'm'));
    assert.match(listed, new RegExp(`^origin secret ${proofKeyId(legacy)}  `, 'm'));

    // 4. Every genuine row proves under the new key (and, read FINAL, no longer under the old one); the forged one under neither.
    assert.deepEqual(await provenPosition(store, label, next.key, inEffect), { position: inEffect });
    assert.deepEqual(
      (await readDurable(store, label, timeline, 0n, next.key)).map((d) => [d.from, d.through]),
      [[last + 10n, last + 20n]],
    );
    assert.deepEqual(
      (await provenRestores(store, label, next.key)).map((g) => g.generation),
      [9],
    );
    assert.deepEqual(await provenRestores(store, label, legacy), []);
    const range = { fromMs: Date.now() - 3_600_000, toMs: Date.now() + 60_000 };
    assert.deepEqual(await checkQuarantine(store, label, range, { tailerSecret: next.key }), []);
    assert.equal((await checkQuarantine(store, label, range, { tailerSecret: legacy })).length, 2, 'the entries were proved again, not copied');

    // 5. The tailer on its new key resumes where it stood: no replay alarm, capture goes on.
    const after = new HealthState();
    r = replica(after, next.key);
    try {
      const more = BigInt((await client.put(`/l/${ns}/after`).value('{"holder":"h"}').exec()).header.revision);
      await waitFor('capture goes on', async () => ((await capturedRows(store, label, more, more)).length === 1 ? true : undefined));
      assert.equal(
        after.alarms().find((a) => a.code === 'LOCKAUDIT_ALARM_RESUME_UNPROVEN'),
        undefined,
      );
      // The test's restore gap (generation 9, of no timeline before it) is no restore recorded half-way: a tailer once
      // "finished" it once per generation up to 9, each a restore alarmed and recorded (a CI run timed out here).
      assert.deepEqual(
        after.alarms().filter((a) => /RESTORE/.test(a.code)),
        [],
      );
      assert.ok((await headRevision(client)) >= more);
    } finally {
      await r.close();
    }

    // 6. Once split, the command refuses, naming the key in place.
    const again = await cli(['keys', 'split-tailer']);
    assert.equal(again.code, 2, again.stdout + again.stderr);
    assert.match(again.stderr, /already has a key of its own \(.*tailer-secret\)/);
  });
});
