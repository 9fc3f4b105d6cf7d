// Sealing contention hours (sql/130, issue 22 item 1): an hour of a cluster is
// sealed once the tailer's checkpoint has passed it — its grants aggregated
// once into -State values that the contention report merges (hours.sql)
// instead of aggregating the hour's grants again. A seal is one attempt with
// its own increasing id; its seal row is written last, and readers take the
// newest seal row's id, so re-sealing an hour (a replay of the job, late
// grants, a restore) replaces its figures and never adds to them, and an
// attempt that died half-way is never read. Every read of a seal is bounded
// by the checkpoint it was taken at: rows for later revisions are left out
// before FINAL, so the seal's parts agree with each other.
import { randomUUID } from 'node:crypto';
import type { ReportDeps } from '../../platform/reportQuery.js';
import { loadSql } from '../../platform/sql.js';

const CANDIDATES = loadSql('reports/contention/sealCandidates.sql');
const FINGERPRINTS = loadSql('reports/contention/sealFingerprints.sql');
const IRREGULAR = loadSql('reports/contention/sealIrregular.sql');
const STATES = loadSql('reports/contention/sealStates.sql');
const PENDING = loadSql('reports/contention/sealPending.sql');
const HANDOFFS = loadSql('reports/contention/sealHandoffs.sql');
const KEYS = loadSql('reports/contention/sealKeys.sql');
const POSITION = loadSql('reports/contention/sealPosition.sql');
const CLUSTERS = loadSql('reports/contention/sealClusters.sql');

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

export interface SealOptions {
  /** Seal only this cluster (default: every cluster with a checkpoint). */
  cluster?: string;
  /** Seal as of this checkpoint instead of the stored one (the bench and tests). */
  checkpoint?: bigint;
  /** Seal hours that end at or before this instant instead of the checkpoint's time. */
  sealBeforeMs?: number;
  /** Seal exactly these hours (unix seconds) again, whatever their seals: a replay. Default: the hours that need one. */
  hours?: number[];
  /** Hours per batch (each batch reads its keys' grants over the lookback once). Default 24 × 92. */
  batchHours?: number;
  /** Where each attempt's seal id comes from (tests: two attempts with one id). Default: the clock (nextSealId). */
  sealIds?: () => bigint;
}

export interface SealResult {
  cluster: string;
  checkpoint: string;
  hours: number;
  irregularHours: number;
}

let lastSealId = 0n;
/**
 * Increasing per attempt, also across processes (the clock's microseconds),
 * never repeated in one — but two processes in one millisecond can take the
 * same id: each attempt's rows also carry its random `attempt` (sql/180),
 * which readers match with the id.
 */
function nextSealId(): bigint {
  const now = BigInt(Date.now()) * 1000n;
  lastSealId = now > lastSealId ? now : lastSealId + 1n;
  return lastSealId;
}

/**
 * Seals every hour of each cluster that the checkpoint has passed and that has
 * no seal matching its grants. `lookbackDays` must be at least the longest
 * report window (LOCKAUDIT_MAX_WINDOW_DAYS): the report reads only seals that
 * looked back that far.
 */
export async function sealContentionHours(deps: ReportDeps, opts: SealOptions = {}): Promise<SealResult[]> {
  const lookbackDays = deps.limits.maxWindowDays;
  const clusters = opts.cluster !== undefined ? [opts.cluster] : (await deps.store.rows<{ cluster: string }>(CLUSTERS.text, {})).map((r) => r.cluster);
  const results: SealResult[] = [];
  for (const cluster of clusters) {
    const [pos] = await deps.store.rows<{ checkpoint: string; passed_ms: string; generation: number | string }>(POSITION.text, { cluster });
    const checkpoint = opts.checkpoint ?? BigInt(pos?.checkpoint ?? '0');
    const sealBeforeMs = opts.sealBeforeMs ?? Number(pos?.passed_ms ?? 0);
    const generation = Number(pos?.generation ?? 0);
    const result: SealResult = { cluster, checkpoint: checkpoint.toString(), hours: 0, irregularHours: 0 };
    results.push(result);
    if (checkpoint === 0n || sealBeforeMs <= 0) continue;
    const candidates =
      opts.hours ??
      (await deps.store.rows<{ hour_s: number }>(CANDIDATES.text, { cluster, sealBeforeMs, lookbackDays, generation })).map((r) => Number(r.hour_s));
    const batch = opts.batchHours ?? 24 * 92;
    for (let i = 0; i < candidates.length; i += batch) {
      const hours = candidates.slice(i, i + batch);
      const sealed = await sealBatch(deps, { cluster, hours, checkpoint, generation, lookbackDays, sealId: (opts.sealIds ?? nextSealId)() });
      result.hours += sealed.hours;
      result.irregularHours += sealed.irregularHours;
    }
  }
  return results;
}

async function sealBatch(
  deps: ReportDeps,
  b: { cluster: string; hours: number[]; checkpoint: bigint; generation: number; lookbackDays: number; sealId: bigint },
): Promise<{ hours: number; irregularHours: number }> {
  const sealId = b.sealId.toString();
  const attempt = randomUUID();
  const checkpoint = b.checkpoint.toString();
  const base = { cluster: b.cluster, hours: b.hours, checkpoint };
  const lookbackMs = Math.min(...b.hours) * 1000 - b.lookbackDays * DAY_MS - HOUR_MS;
  const fingerprints = await deps.store.rows<{ hour_s: number; max_revision: string; spool_grants: string }>(FINGERPRINTS.text, base);
  const irregular = new Map(
    (await deps.store.rows<{ hour_s: number; irregular: string; grants: string; pending: string }>(IRREGULAR.text, { ...base, lookbackMs })).map((r) => [
      Number(r.hour_s),
      r,
    ]),
  );
  await deps.store.command(STATES.text, { ...base, sealId, attempt });
  await deps.store.command(PENDING.text, { ...base, sealId, attempt });
  await deps.store.command(HANDOFFS.text, { ...base, sealId, attempt, lookbackMs });
  await deps.store.command(KEYS.text, { ...base, sealId, attempt });
  // Last: the seal rows, which make the rows above the hours' figures.
  const seals = fingerprints.map((f) => {
    const i = irregular.get(Number(f.hour_s));
    return {
      cluster: b.cluster,
      hour: Number(f.hour_s),
      seal_id: sealId,
      attempt,
      max_revision: f.max_revision,
      spool_grants: f.spool_grants,
      generation: b.generation,
      lookback_days: b.lookbackDays,
      irregular: i?.irregular ?? '0',
      grants: i?.grants ?? '0',
      pending: i?.pending ?? '0',
      checkpoint,
    };
  });
  await deps.store.insert('contention_seals', seals);
  return { hours: seals.length, irregularHours: seals.filter((s) => s.irregular !== '0').length };
}
