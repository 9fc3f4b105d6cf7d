// The completeness oracle for tailer tests: etcd's history read
// independently (the test's own watch over the captured prefixes /l/, /q/,
// /sys/ — every change there is one event row, election keys included as
// 'other'), compared with the events table under FINAL.
import assert from 'node:assert/strict';
import type { Etcd3, IWatchResponse } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import type { ExpectedEvent } from './workload.js';
import { writeClock } from '../../tailer/clock/clockWriter.js';
import { originSecret } from '../../core/originSecret.js';
import { testConfig } from './env.js';

const CAPTURED = ['/l/', '/q/', '/sys/'];

/** Every (revision, key) in [from, to] under the captured prefixes, by a watch of our own. */
export async function etcdHistory(client: Etcd3, from: bigint, to: bigint): Promise<Set<string>> {
  const seen = new Set<string>();
  // A put after `to` ends the read: the watch delivers in order, so seeing it means everything before it arrived.
  // Signed as the tailer leader signs it: an unsigned one would be a foreign write to a tailer watching.
  const stopAt = await writeClock(client, originSecret(testConfig()));
  if (stopAt <= to) throw new Error('sentinel must be after the range');
  const watcher = client.watch().inRange({ start: '/l/', end: '/sys0' }).startRevision(from.toString()).watcher();
  try {
    await new Promise<void>((resolve, reject) => {
      watcher.on('error', reject);
      watcher.on('data', (res: IWatchResponse) => {
        for (const ev of res.events) {
          const rev = BigInt(ev.kv.mod_revision);
          if (rev >= stopAt) return resolve();
          const key = ev.kv.key.toString('utf8');
          if (rev <= to && CAPTURED.some((p) => key.startsWith(p))) seen.add(`${rev}|${key}`);
        }
      });
    });
  } finally {
    await watcher.cancel().catch(() => undefined);
  }
  return seen;
}

export interface CapturedRow {
  revision: string;
  key: string;
  event_type: string;
}

export async function capturedRows(store: AuditStore, cluster: string, from: bigint, to: bigint): Promise<CapturedRow[]> {
  return store.rows<CapturedRow>(
    `SELECT revision, key, event_type FROM {db:Identifier}.events FINAL
     WHERE cluster = {cluster:String} AND op IN ('put', 'delete') AND revision BETWEEN {from:UInt64} AND {to:UInt64}`,
    { cluster, from: from.toString(), to: to.toString() },
  );
}

/** Exactly etcd's history in [from, to]: no more, no less, one row each, with the expected types. */
export async function assertExactCapture(
  store: AuditStore,
  cluster: string,
  client: Etcd3,
  from: bigint,
  to: bigint,
  expected: readonly ExpectedEvent[],
): Promise<number> {
  const history = await etcdHistory(client, from, to);
  const rows = await capturedRows(store, cluster, from, to);
  const got = new Set(rows.map((r) => `${r.revision}|${r.key}`));
  assert.equal(got.size, rows.length, 'one row per (revision, key) under FINAL');
  const missing = [...history].filter((k) => !got.has(k));
  const extra = [...got].filter((k) => !history.has(k));
  assert.deepEqual(missing.slice(0, 20), [], `${missing.length} changes missing from ClickHouse`);
  assert.deepEqual(extra.slice(0, 20), [], `${extra.length} rows that etcd does not have`);
  const typeOf = new Map(rows.map((r) => [`${r.revision}|${r.key}`, r.event_type]));
  const wrong = expected
    .filter((e) => BigInt(e.revision) >= from && BigInt(e.revision) <= to)
    .filter((e) => typeOf.get(`${e.revision}|${e.key}`) !== e.type)
    .map((e) => `${e.revision} ${e.key}: expected ${e.type}, got ${typeOf.get(`${e.revision}|${e.key}`) ?? 'nothing'}`);
  assert.deepEqual(wrong.slice(0, 20), [], `${wrong.length} events with the wrong type`);
  return rows.length;
}

/**
 * Polls `fn` until it returns something other than undefined/false. Each check is raced against the deadline:
 * a check that never returns (an etcd call with no deadline, a store query stuck) fails the wait at its deadline,
 * saying so, instead of holding the test until the runner's timeout.
 */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<'stuck'>((resolve) => {
      timer = setTimeout(() => resolve('stuck'), Math.max(0, deadline - Date.now()) + 5_000);
    });
    const v = await Promise.race([Promise.resolve(fn()), stuck]).finally(() => clearTimeout(timer));
    if (v === 'stuck') throw new Error(`timed out waiting for ${what}: its check had not returned ${timeoutMs / 1000 + 5} s after the wait began`);
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** etcd's current revision (a count-only read of one key). */
export async function headRevision(client: Etcd3): Promise<bigint> {
  return BigInt((await client.kv.range({ key: Buffer.from('/sys/clock'), count_only: true })).header.revision);
}

/** Start capture of `cluster` just after etcd's head: a checkpoint there. Returns the first revision to capture. */
export async function checkpointAtHead(store: AuditStore, client: Etcd3, cluster: string): Promise<bigint> {
  const head = await headRevision(client);
  await store.insert('checkpoints', [{ cluster, revision: head.toString(), leader: 'test' }]);
  return head + 1n;
}
