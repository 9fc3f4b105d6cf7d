// A long catch-up killed (-9) five times keeps its progress (issue 22 item 4)
// over history written around the lock API: holds put and deleted by hand, no
// /sys/clock write (test/support/handHistory.ts). For 1 window and for
// BENCH_KILLS_WINDOWS windows: one uninterrupted catch-up in a child tailer
// (the same-run baseline: its time and events written), then the same
// catch-up killed -9 five times — each run killed at a random point of the
// second after it made a tenth of the history's events durable — and finished: the stored checkpoint after each
// kill, the events each run wrote above it (replayed by the next), and the
// totals beside the uninterrupted run. Both end exact. Ratios, not pass/fail.
// Scale: BENCH_KILLS_REVISIONS (default 40 000), BENCH_KILLS_WINDOWS (default 8).
import path from 'node:path';
import { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { readCheckpoint } from '../../tailer/sink/offsets.js';
import { assertExactCapture, headRevision } from '../support/capture.js';
import { startTailerChild } from '../support/children.js';
import { tempDir, testConfig, uniqueId } from '../support/env.js';
import { handHistory } from '../support/handHistory.js';
import { heading, report } from './report.js';

const REVISIONS = Number(process.env.BENCH_KILLS_REVISIONS ?? 40_000);
const WINDOWS = Number(process.env.BENCH_KILLS_WINDOWS ?? 8);
const KILLS = 5;
const ORIGIN_SECRET = 'bench-kills-origin-secret-0123456789abcdef';
const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const client = createEtcdClient({ name: 'bench', endpoints });
const tmp = tempDir('lockaudit-bench-kills-');

async function withStore<T>(chdbPath: string, fn: (store: AuditStore) => Promise<T>): Promise<T> {
  const store = new AuditStore({ mode: 'embedded', path: chdbPath, database: 'lockaudit' });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

interface Run {
  seconds: number;
  events: number;
}

/** One child tailer from the stored checkpoint: to the end (`killAt` undefined, then SIGTERM), or kill -9 once it made `killAt` events durable. */
async function run(chdbPath: string, label: string, from: bigint, to: bigint, windows: number, killAt?: number): Promise<Run> {
  const child = startTailerChild({
    chdbPath,
    cluster: { name: label, endpoints },
    initialCheckpoint: (from - 1n).toString(),
    originSecret: ORIGIN_SECRET,
    options: { electionTtlSeconds: 3, checkpointIntervalMs: 250, catchUpWindows: windows, splitMinRevisions: 1_000 },
    replicaId: uniqueId('kills-'),
  });
  const started = performance.now();
  try {
    if (killAt === undefined) {
      await child.waitFor((c) => c.checkpoint >= to, 1_800_000);
      await child.term();
    } else {
      // Then at a random point of the next second: not always right after a flush, before the checkpoint's timer.
      await child.waitFor((c) => c.durable >= killAt || c.checkpoint >= to, 1_800_000);
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 1_000)));
      await child.kill9();
    }
  } finally {
    await child.kill9();
  }
  return { seconds: (performance.now() - started) / 1000, events: child.durable };
}

heading(`a catch-up killed -9 ${KILLS}× over ≥ ${REVISIONS.toLocaleString('en-US')} revisions of hand puts and deletes, no clock write`);
const ns = uniqueId('kills');
const from = (await headRevision(client)) + 1n;
const writeStarted = performance.now();
const historyEvents = await handHistory(client, ns, REVISIONS);
const to = await headRevision(client);
process.stdout.write(
  `wrote ${(to - from + 1n).toLocaleString('en-US')} revisions, ${historyEvents.toLocaleString('en-US')} events in ${((performance.now() - writeStarted) / 1000).toFixed(1)} s\n`,
);

for (const windows of [...new Set([1, WINDOWS])]) {
  // The baseline: one uninterrupted catch-up.
  const basePath = path.join(tmp.dir, `base-${windows}`);
  const baseLabel = uniqueId('base');
  const base = await run(basePath, baseLabel, from, to, windows);
  process.stdout.write(`${windows} window(s), uninterrupted: ${base.seconds.toFixed(1)} s, ${base.events.toLocaleString('en-US')} events written\n`);
  await withStore(basePath, (store) => assertExactCapture(store, baseLabel, client, from, to, []));

  // Killed KILLS times, each once it made a tenth of the history durable, then finished.
  const killPath = path.join(tmp.dir, `kill-${windows}`);
  const label = uniqueId('kill');
  const killAt = Math.ceil(historyEvents / 10);
  let seconds = 0;
  let events = 0;
  let kept = 0;
  const checkpoints: string[] = [];
  for (let i = 0; i <= KILLS; i += 1) {
    const last = i === KILLS;
    const before = i === 0 ? from - 1n : await withStore(killPath, (store) => readCheckpoint(store, label));
    const r = await run(killPath, label, from, to, windows, last ? undefined : killAt);
    seconds += r.seconds;
    events += r.events;
    if (last) break;
    const after = await withStore(killPath, (store) => readCheckpoint(store, label));
    const covered = after - before;
    checkpoints.push(after.toString());
    if (after > before) kept += 1;
    process.stdout.write(
      `${windows} window(s), kill ${i + 1}: ${r.events.toLocaleString('en-US')} events durable, checkpoint ${before} → ${after} (+${covered.toLocaleString('en-US')} revisions)\n`,
    );
  }
  await withStore(killPath, (store) => assertExactCapture(store, label, client, from, to, []));
  const replayed = events - base.events;
  process.stdout.write(
    `${windows} window(s): checkpoint after each kill ${checkpoints.join(' → ')}; ${events.toLocaleString('en-US')} events written in all, ${replayed.toLocaleString('en-US')} replayed\n`,
  );
  report({
    name: `${windows} win: kills that advanced the checkpoint`,
    value: kept,
    baselineName: 'kills mid catch-up',
    baseline: KILLS,
    unit: 'kills',
    higherIsBetter: true,
  });
  report({
    name: `${windows} win: events written, killed ${KILLS}×`,
    value: events,
    baselineName: 'uninterrupted catch-up',
    baseline: base.events,
    unit: 'events',
    higherIsBetter: false,
  });
  report({
    name: `${windows} win: events replayed after ${KILLS} kills`,
    value: replayed,
    baselineName: `durable at the kills (${KILLS} × ${killAt})`,
    baseline: KILLS * killAt,
    unit: 'events',
    higherIsBetter: false,
  });
  report({
    name: `${windows} win: catch-up time, killed ${KILLS}×`,
    value: seconds,
    baselineName: 'uninterrupted catch-up',
    baseline: base.seconds,
    unit: 's',
    higherIsBetter: false,
  });
}

client.close();
tmp.remove();
