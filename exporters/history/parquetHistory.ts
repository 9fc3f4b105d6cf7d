// Parquet history: grants and raw events per cluster and UTC day, in the
// history bucket (365-day lifecycle), Hive-style paths:
//   grants/cluster=<c>/date=<YYYY-MM-DD>/grants.parquet  (+ .manifest.json)
//   events/cluster=<c>/date=<YYYY-MM-DD>/events.parquet  (+ .manifest.json)
// A day is complete when its manifest exists and carries the digest key's
// signature (the worker signs every manifest it writes); re-running a day skips
// complete files and rewrites a file whose manifest never appeared (write, then
// manifest), so repeating a run is safe. The history bucket is not locked: a
// manifest the worker did not sign (placed by whoever holds the bucket's
// credentials, for a day not yet written) is alarmed and the day written
// anew over it, never skipped on its word. The file is streamed into the bucket
// as ClickHouse writes it (multipart; visible only once complete). Because a
// complete day is never written again, a day is written only once the
// cluster's capture has passed its end (historyDayNotOver).
import { createPublicKey } from 'node:crypto';
import type { Client } from 'minio';
import type { AuditStore } from '../../core/clickhouse.js';
import { isLockauditError, LockauditError } from '../../core/errors.js';
import { keyringOf, type DigestKeyring, type DigestSigner } from '../../core/digestKey.js';
import type { Logger } from '../../core/logger.js';
import { alarm } from '../../platform/alarms.js';
import type { HealthState } from '../../platform/health.js';
import { ExportGate, exportPlanToObject, type ExportProgress } from '../compliance/chunkedExport.js';
import { planEventsExport, planGrantsExport, DEFAULT_CHUNK_ROWS } from '../compliance/exportPlans.js';
import { assertGrantsMatchEvents } from '../checks/grantsCheck.js';
import { sealKey } from '../checks/grantSeals.js';
import type { ExportMetrics } from '../exportMetrics.js';
import { manifestSignatureProblem, signManifest } from '../digests/format.js';
import { buildManifest, manifestName, parseManifest, type Manifest } from '../storage/manifest.js';
import { objectExists, objectSha256, putJson, putJsonIfAbsent, readObjectText, withRetry, type RetryOptions } from '../storage/objectStore.js';
import { loadSql } from '../../platform/sql.js';

const PASSED = loadSql('exporters/sql/history_passed.sql');
const BEGAN = loadSql('exporters/sql/history_began.sql');
/**
 * How far past a day's end capture must be before the day is written: grant
 * times are the lock API hosts' clocks, so a revision just above the
 * checkpoint may still carry a time before midnight (the nightly job runs at
 * 01:30, well past it).
 */
export const HISTORY_SETTLE_MS = 15 * 60_000;

export const HISTORY_DATASETS = ['grants', 'events'] as const;
export type HistoryDataset = (typeof HISTORY_DATASETS)[number];

const DAY_MS = 86_400_000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

export function historyObjectName(dataset: HistoryDataset, cluster: string, date: string): string {
  return `${dataset}/cluster=${cluster}/date=${date}/${dataset}.parquet`;
}

/** Milliseconds of 00:00 UTC of a YYYY-MM-DD day; undefined when it is not a real date. */
export function dayStartMs(date: string): number | undefined {
  if (!DATE.test(date)) return undefined;
  const ms = Date.parse(`${date}T00:00:00Z`);
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== date ? undefined : ms;
}

export function formatDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Yesterday (UTC) relative to `now`. */
export function yesterday(now = Date.now()): string {
  return formatDay(Math.floor(now / DAY_MS) * DAY_MS - DAY_MS);
}

/** Every day from `from` to `to`, both included. */
export function daysBetween(from: string, to: string): string[] {
  const a = dayStartMs(from);
  const b = dayStartMs(to);
  if (a === undefined || b === undefined || b < a) return [];
  const out: string[] = [];
  for (let ms = a; ms <= b; ms += DAY_MS) out.push(formatDay(ms));
  return out;
}

export interface HistoryDeps {
  store: AuditStore;
  s3: Client;
  bucket: string;
  logger: Logger;
  metrics?: ExportMetrics;
  retry?: RetryOptions;
  chunkRows?: number;
  /** The digest key: every manifest is signed with it, and one it did not sign is no proof that a day was written. */
  signer: DigestSigner;
  /** Every key the deployment signed with (a manifest outlives a rotation). Default: the signer's own. */
  keyring?: DigestKeyring;
  /** Where an unsigned manifest is alarmed (LOCKAUDIT_ALARM_HISTORY_UNSIGNED). */
  health?: Pick<HealthState, 'raise'>;
  /** The tailer's key: the grants check excuses a grant row in quarantine only on its proof (grantsCheck.ts). */
  tailerSecret?: Buffer;
  /** The digest period: the grants of periods a grant seal covers (grantSeals.ts) are not checked again. */
  grantSealPeriodMs?: number;
}

export interface HistoryFileResult {
  dataset: HistoryDataset;
  cluster: string;
  date: string;
  object: string;
  /** before-capture: the day ended before anything of the cluster was captured; no file (captureBegan). */
  status: 'written' | 'complete' | 'before-capture';
  manifest?: Manifest;
}

/** Exports one dataset of one cluster for one UTC day (skips it when already complete). */
export async function exportHistoryFile(
  deps: HistoryDeps,
  target: { dataset: HistoryDataset; cluster: string; date: string },
  onProgress?: (p: ExportProgress) => void,
): Promise<HistoryFileResult> {
  const { dataset, cluster, date } = target;
  const start = dayStartMs(date);
  if (start === undefined) throw new RangeError(`not a date: ${date}`);
  const object = historyObjectName(dataset, cluster, date);
  const manifestObject = manifestName(object);
  const retry = deps.retry ?? {};
  let replace = false;
  if (await withRetry(() => objectExists(deps.s3, deps.bucket, manifestObject), retry)) {
    const problem = await manifestProblem(deps, manifestObject, object);
    if (problem === undefined) {
      deps.metrics?.historyFiles.inc({ dataset, outcome: 'complete' });
      return { dataset, cluster, date, object, status: 'complete' };
    }
    // Not the worker's, or not the file under it: the day is written anew over it (the history bucket is not locked), and alarmed.
    deps.health?.raise(alarm('LOCKAUDIT_ALARM_HISTORY_UNSIGNED', { cluster }, { object: `${deps.bucket}/${manifestObject}`, problem }));
    deps.logger.error({ dataset, cluster, date, object: manifestObject, problem }, 'history manifest not signed by the digest key: writing the day again');
    replace = true;
  }
  const range = { fromMs: start, toMs: start + DAY_MS };
  const chunkRows = deps.chunkRows ?? DEFAULT_CHUNK_ROWS;
  // A grants file is written only of grants that agree with the events the digests cover (grantsCheck.ts): the
  // check runs beside the plan and the chunk queries, and the upload completes only once it has passed.
  const gate =
    dataset === 'grants'
      ? new ExportGate(
          assertGrantsMatchEvents(deps.store, { cluster }, range, {
            tailerSecret: deps.tailerSecret,
            seals: deps.grantSealPeriodMs ? { publicKey: sealKey(deps.signer), periodMs: deps.grantSealPeriodMs } : undefined,
          }),
        )
      : undefined;
  try {
    const planning =
      dataset === 'grants' ? planGrantsExport(deps.store, { cluster }, range, chunkRows) : planEventsExport(deps.store, cluster, range, chunkRows);
    const plan = await (gate ? gate.guard(planning) : planning);
    const file = await exportPlanToObject(
      deps.store,
      plan,
      'parquet',
      { s3: deps.s3, bucket: deps.bucket, object, contentType: 'application/vnd.apache.parquet', retry },
      { onProgress, revisionColumn: dataset === 'grants' ? 'grant_revision' : 'revision', gate },
    );
    const manifest = signManifest(
      buildManifest(file, {
        dataset,
        object,
        cluster,
        date,
        from: new Date(range.fromMs).toISOString(),
        to: new Date(range.toMs).toISOString(),
        ...(dataset === 'grants' ? { grantsCheckedAgainstEvents: true } : {}),
      }),
      deps.signer,
    );
    // Only now is the file complete. A manifest already there means another run finished it first (unless it is
    // the unsigned one this run replaces).
    if (replace || (await putJsonIfAbsent(deps.s3, deps.bucket, manifestObject, manifest, retry)) === 'exists') {
      // A manifest put meanwhile counts only as the worker's signed manifest of the file now there (one placed during
      // the export would otherwise stand: review); else ours goes over it.
      const raced = replace ? undefined : await manifestProblem(deps, manifestObject, object);
      if (replace || raced !== undefined) {
        if (raced !== undefined)
          deps.health?.raise(alarm('LOCKAUDIT_ALARM_HISTORY_UNSIGNED', { cluster }, { object: `${deps.bucket}/${manifestObject}`, problem: raced }));
        await putJson(deps.s3, deps.bucket, manifestObject, manifest, retry);
      }
    }
    deps.metrics?.historyFiles.inc({ dataset, outcome: 'written' });
    deps.logger.info({ dataset, cluster, date, rows: manifest.rows, bytes: manifest.bytes }, 'history file written');
    return { dataset, cluster, date, object, status: 'written', manifest };
  } catch (err) {
    deps.metrics?.historyFiles.inc({ dataset, outcome: 'failed' });
    throw err;
  }
}

/**
 * Why `date` cannot be written for `cluster` yet (undefined: it can): the
 * cluster's capture has not passed the day's end — the day is today or later,
 * or the tailer lags, or no tailer ever captured a cluster of that name. A
 * day written early would be complete, and short, for good.
 */
export async function historyDayNotOver(store: AuditStore, cluster: string, date: string): Promise<string | undefined> {
  const start = dayStartMs(date);
  if (start === undefined) return `not a date: ${date}`;
  const [pos] = await store.rows<{ checkpoint: string; passed_ms: string }>(PASSED.text, { cluster });
  if (!pos || pos.checkpoint === '0') return `cluster "${cluster}" has no tailer checkpoint: no tailer has captured a cluster of that name`;
  const passed = Number(pos.passed_ms);
  if (passed < start + DAY_MS + HISTORY_SETTLE_MS) {
    const at = passed > 0 ? new Date(passed).toISOString() : 'unknown';
    return `${date} of cluster "${cluster}" is not over for its tailer yet (captured up to ${at}; a day is written once capture is ${HISTORY_SETTLE_MS / 60_000} min past its end): a history day is written once, after its end is captured`;
  }
  return undefined;
}

/**
 * The earliest time anything of `cluster` was captured (ms; undefined when nothing was). A history day that ends
 * before it is not written: an empty file would say no lock was granted that day, when nothing of that day was
 * captured (a backfill from before the install wrote one such file per day).
 */
export async function captureBegan(store: AuditStore, cluster: string): Promise<number | undefined> {
  const [row] = await store.rows<{ events_ms: string; grants_ms: string }>(BEGAN.text, { cluster });
  // '' is "none of the cluster's rows"; 0 (1970) or a negative time is a time (review: read as none, a queue value at 0
  // dropped the events' minimum and let the days before the first grant go unwritten).
  const times = [row?.events_ms ?? '', row?.grants_ms ?? ''].filter((ms) => ms !== '').map(Number);
  return times.length === 0 ? undefined : Math.min(...times);
}

/** Why `date` has no history file for a cluster whose capture began at `began` (undefined: it may have one). */
export function historyDayBeforeCapture(cluster: string, date: string, began: number | undefined): string | undefined {
  const start = dayStartMs(date);
  if (start === undefined || began === undefined || start + DAY_MS > began) return undefined;
  return `${date} of cluster "${cluster}" ended before its capture began (the earliest captured time is ${new Date(began).toISOString()}): nothing of it was captured, so no file is written`;
}

/**
 * Why the manifest at `name` does not stand for the file `object` — not a manifest, not the digest key's signature,
 * or not the bytes now stored there — or undefined when it does. A day is complete only on such a manifest.
 */
async function manifestProblem(deps: HistoryDeps, name: string, object: string): Promise<string | undefined> {
  const m = parseManifest(await withRetry(() => readObjectText(deps.s3, deps.bucket, name), deps.retry ?? {}));
  if (!m) return 'not a manifest';
  if (m.object !== object) return `it names ${m.object}`;
  const unsigned = manifestSignatureProblem(m, deps.keyring ?? keyringOf([createPublicKey(deps.signer.publicKeyPem)]));
  if (unsigned !== undefined) return unsigned;
  // The history bucket is not locked: the file under a genuine manifest can be swapped.
  const got = await withRetry(() => objectSha256(deps.s3, deps.bucket, object), deps.retry ?? {});
  if (got === 'missing') return 'the file it describes is missing';
  if (got.sha256 !== m.sha256 || got.bytes !== m.bytes)
    return `the file under it is not the one it describes (sha256 ${got.sha256.slice(0, 12)}…, ${got.bytes} bytes; it says ${m.sha256.slice(0, 12)}…, ${m.bytes} bytes)`;
  return undefined;
}

/** Every dataset of every cluster for one day; a cluster whose capture has not passed the day's end is left for later (throws once the others are written). */
export async function exportHistoryDay(
  deps: HistoryDeps,
  date: string,
  clusters: readonly string[],
  datasets: readonly HistoryDataset[] = HISTORY_DATASETS,
): Promise<HistoryFileResult[]> {
  const results: HistoryFileResult[] = [];
  const notOver: string[] = [];
  const refused: string[] = [];
  for (const cluster of clusters) {
    const why = await historyDayNotOver(deps.store, cluster, date);
    if (why) {
      notOver.push(why);
      continue;
    }
    const before = historyDayBeforeCapture(cluster, date, await captureBegan(deps.store, cluster));
    if (before !== undefined) {
      deps.logger.info({ cluster, date, datasets }, before);
      for (const dataset of datasets) {
        deps.metrics?.historyFiles.inc({ dataset, outcome: 'before-capture' });
        results.push({ dataset, cluster, date, object: historyObjectName(dataset, cluster, date), status: 'before-capture' });
      }
      continue;
    }
    for (const dataset of datasets) {
      try {
        results.push(await exportHistoryFile(deps, { dataset, cluster, date }));
      } catch (err) {
        // A cluster whose grants disagree with their events stops its own grants file, not the day's other files.
        if (!isLockauditError(err, 'LOCKAUDIT_ERR_EXPORT_UNPROVEN')) throw err;
        deps.logger.error({ cluster, date, dataset, err: (err as Error).message }, 'history file refused: its grants disagree with their events');
        refused.push(`${cluster} ${dataset}: ${(err as Error).message}`);
      }
    }
  }
  if (notOver.length > 0) throw new HistoryDayNotOverError([...notOver, ...refused].join('; '));
  // Permanent (the history job does not retry it): written again, the same grants disagree again.
  if (refused.length > 0) throw new LockauditError('LOCKAUDIT_ERR_EXPORT_UNPROVEN', `history ${date}: ${refused.join('; ')}`);
  return results;
}

/** A history day asked before its end was captured: worth retrying later (the tailer catches up). */
export class HistoryDayNotOverError extends Error {
  override name = 'HistoryDayNotOverError';
}
