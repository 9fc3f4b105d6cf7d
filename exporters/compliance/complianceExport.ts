// Compliance exports: an auditor's request for grants over a range with
// filters becomes a row in `exports` (the durable state: queued → running with
// progress → done | failed) and a job. The job streams one Parquet, Arrow IPC or CSV file
// into the history bucket under exports/<id>/ (a multipart upload that grows
// while ClickHouse computes: nothing is visible until it is complete), then
// its manifest, then marks the export done: an export is never presented as
// done before its object is complete. Every request, completion and download
// is in `export_audit`.
import { randomUUID } from 'node:crypto';
import type { AuditStore } from '../../core/clickhouse.js';
import { LockauditError } from '../../core/errors.js';
import { parseInstantOrUtc } from '../../core/instant.js';
import { loadSql } from '../../platform/sql.js';
import { readGrantFilters } from '../../grants/filter.js';
import { clusterInScope, type ReadScope } from '../../grants/scope.js';
import { ARROW_STREAM_TYPE } from './arrowStream.js';
import { ExportGate, exportPlanToObject, runExportPlan, type ExportFormat, type ExportPlan, type ExportProgress, type WrittenFile } from './chunkedExport.js';
import { planGrantsExport, DEFAULT_CHUNK_ROWS, type GrantFilters } from './exportPlans.js';
import { assertGrantsMatchEvents, type ExportCheckOptions } from '../checks/grantsCheck.js';
import { sealKey } from '../checks/grantSeals.js';
import { LatestOnly } from './latestOnly.js';
import { buildManifest, manifestName } from '../storage/manifest.js';
import { putJsonIfAbsent, withRetry } from '../storage/objectStore.js';
import type { HistoryDeps } from '../history/parquetHistory.js';
import type { DigestSigner } from '../../core/digestKey.js';
import { chainSegment, signManifest, type Digest } from '../digests/format.js';
import { readChain } from '../digests/worker.js';

export const EXPORT_FORMATS = ['parquet', 'csv', 'arrow'] as const;
export const MAX_EXPORT_RANGE_DAYS = 400;
const ACTIVE_SQL = loadSql('exporters/sql/exports_active.sql');

export type ExportStatus = 'queued' | 'running' | 'done' | 'failed';

export interface ExportRequest {
  format: ExportFormat;
  fromMs: number;
  toMs: number;
  filters: GrantFilters;
  requestedBy: string;
  /** The requesting token's scope (grants/scope.ts): the export holds only its grants. Default null: unscoped. */
  scope?: ReadScope;
}

export interface ExportState extends ExportRequest {
  scope: ReadScope;
  id: string;
  kind: 'grants';
  requestedAt: number;
  status: ExportStatus;
  rowsDone: bigint;
  rowsTotal: bigint;
  percent: number;
  objectKey: string;
  bytes: number;
  sha256: string;
  error: string;
  updatedAt: number;
}

/**
 * Checks a range and filters given as text (API body or CLI flags); every
 * problem names its field. Returns the parsed request parts.
 */
export function parseExportInput(
  input: { from: string; to: string; filters?: Record<string, string | undefined> },
  names: { from: string; to: string; filter: (name: string) => string } = { from: 'from', to: 'to', filter: (n) => `filters.${n}` },
  maxRangeDays = MAX_EXPORT_RANGE_DAYS,
): { fromMs: number; toMs: number; filters: GrantFilters } {
  const problems: string[] = [];
  // A date or a date-time without a zone is UTC, whatever TZ the process runs in.
  const fromMs = parseInstantOrUtc(input.from) ?? NaN;
  const toMs = parseInstantOrUtc(input.to) ?? NaN;
  const dateRule = 'is not a date (YYYY-MM-DD) or date-time (RFC 3339; read as UTC without a zone), years 1970–2299';
  if (Number.isNaN(fromMs)) problems.push(`${names.from}: ${dateRule}`);
  if (Number.isNaN(toMs)) problems.push(`${names.to}: ${dateRule}`);
  if (!Number.isNaN(fromMs) && !Number.isNaN(toMs)) {
    if (toMs <= fromMs) problems.push(`${names.to}: must be after ${names.from}`);
    else if (toMs - fromMs > maxRangeDays * 86_400_000)
      problems.push(`${names.to}: the range is longer than ${maxRangeDays} days (LOCKAUDIT_EXPORT_MAX_RANGE_DAYS)`);
  }
  // The grant filter's own reading (grants/filter*.sql): an export accepts what grant history does.
  const filters = readGrantFilters(input.filters ?? {}, names.filter, problems);
  if (problems.length) throw new LockauditError('LOCKAUDIT_ERR_EXPORT_INVALID', problems.join('; '), { details: problems });
  return { fromMs, toMs, filters };
}

interface ExportRow {
  id: string;
  kind: string;
  format: string;
  requested_by: string;
  requested_at_ms: string;
  from_ms: string;
  to_ms: string;
  filters: string;
  scope_namespaces: string[];
  scope_clusters: string[];
  status: string;
  rows_done: string;
  rows_total: string;
  percent: number;
  object_key: string;
  bytes: string;
  sha256: string;
  error: string;
  updated_at_ms: string;
}

let versionCounter = 0;
/** Row versions: wall-clock based (several processes write), strictly increasing within one. */
function nextVersion(): string {
  versionCounter = (versionCounter + 1) % 1000;
  return (BigInt(Date.now()) * 1000n + BigInt(versionCounter)).toString();
}

/** The `exports` and `export_audit` tables. */
export class ExportRecords {
  constructor(private readonly store: AuditStore) {}

  async create(request: ExportRequest): Promise<ExportState> {
    const now = Date.now();
    const state: ExportState = {
      ...request,
      scope: request.scope ?? null,
      id: `exp_${randomUUID().replace(/-/g, '')}`,
      kind: 'grants',
      requestedAt: now,
      status: 'queued',
      rowsDone: 0n,
      rowsTotal: 0n,
      percent: 0,
      objectKey: '',
      bytes: 0,
      sha256: '',
      error: '',
      updatedAt: now,
    };
    await this.#write(state);
    await this.audit(state.id, 'request', request.requestedBy, {
      format: request.format,
      from: new Date(request.fromMs).toISOString(),
      to: new Date(request.toMs).toISOString(),
      filters: request.filters,
      ...(request.scope ? { scope: request.scope } : {}),
    });
    return state;
  }

  async #write(s: ExportState): Promise<void> {
    await this.store.insert('exports', [
      {
        id: s.id,
        kind: s.kind,
        format: s.format,
        requested_by: s.requestedBy,
        requested_at: s.requestedAt,
        from_ms: s.fromMs,
        to_ms: s.toMs,
        filters: JSON.stringify(s.filters),
        scope_namespaces: s.scope?.namespaces ?? [],
        scope_clusters: s.scope?.clusters ?? [],
        status: s.status,
        rows_done: s.rowsDone.toString(),
        rows_total: s.rowsTotal.toString(),
        percent: s.percent,
        object_key: s.objectKey,
        bytes: s.bytes,
        sha256: s.sha256,
        error: s.error,
        updated_at: Date.now(),
        version: nextVersion(),
      },
    ]);
  }

  async update(
    state: ExportState,
    patch: Partial<Pick<ExportState, 'status' | 'rowsDone' | 'rowsTotal' | 'percent' | 'objectKey' | 'bytes' | 'sha256' | 'error'>>,
  ): Promise<ExportState> {
    const next = { ...state, ...patch, updatedAt: Date.now() };
    await this.#write(next);
    return next;
  }

  /** How many exports `who` has queued or running, requested within the last day (a record a crashed job left behind stops counting then). */
  async activeFor(who: string): Promise<number> {
    const [r] = await this.store.rows<{ n: string }>(ACTIVE_SQL.text, { who });
    return Number(r?.n ?? 0);
  }

  async get(id: string): Promise<ExportState | undefined> {
    const rows = await this.store.rows<ExportRow>(
      `SELECT id, kind, format, requested_by, toString(toUnixTimestamp64Milli(requested_at)) AS requested_at_ms, toString(from_ms) AS from_ms, toString(to_ms) AS to_ms,
              filters, scope_namespaces, scope_clusters, status, rows_done, rows_total, percent, object_key, toString(bytes) AS bytes, sha256, error, toString(toUnixTimestamp64Milli(updated_at)) AS updated_at_ms
       FROM {db:Identifier}.exports FINAL WHERE id = {id:String}`,
      { id },
    );
    const r = rows[0];
    if (!r) return undefined;
    return {
      id: r.id,
      kind: 'grants',
      format: r.format as ExportFormat,
      requestedBy: r.requested_by,
      requestedAt: Number(r.requested_at_ms),
      fromMs: Number(r.from_ms),
      toMs: Number(r.to_ms),
      filters: JSON.parse(r.filters) as GrantFilters,
      scope: r.scope_namespaces.length || r.scope_clusters.length ? { namespaces: r.scope_namespaces, clusters: r.scope_clusters } : null,
      status: r.status as ExportStatus,
      rowsDone: BigInt(r.rows_done),
      rowsTotal: BigInt(r.rows_total),
      percent: Number(r.percent),
      objectKey: r.object_key,
      bytes: Number(r.bytes),
      sha256: r.sha256,
      error: r.error,
      updatedAt: Number(r.updated_at_ms),
    };
  }

  async audit(
    exportId: string,
    action: 'request' | 'complete' | 'fail' | 'download' | 'local-export',
    actor: string,
    detail: Record<string, unknown> = {},
  ): Promise<void> {
    await this.store.insert('export_audit', [{ export_id: exportId, action, actor, at: Date.now(), detail: JSON.stringify(detail) }]);
  }

  async auditTrail(exportId: string): Promise<Array<{ action: string; actor: string; at: string; detail: string }>> {
    return this.store.rows(`SELECT action, actor, toString(at) AS at, detail FROM {db:Identifier}.export_audit WHERE export_id = {id:String} ORDER BY at`, {
      id: exportId,
    });
  }
}

/** What a compliance export needs: a history export's (its own key is under `digests`), and the digests to carry in its signed manifest. */
export type ComplianceDeps = Omit<HistoryDeps, 'signer' | 'health'> & {
  /** `periodMs`: the digest period, which grant seals (grantSeals.ts) cover; with it, sealed periods are not checked again. */
  digests?: { signer: DigestSigner; archiveBucket: string; clusters: readonly string[]; objectPrefix?: string; periodMs?: number };
};

/** The digests of every cluster the export covers, over its range (the chain stretch: format.ts chainSegment). */
async function digestsFor(deps: ComplianceDeps, state: Pick<ExportState, 'fromMs' | 'toMs' | 'filters' | 'scope'>): Promise<Record<string, Digest[]>> {
  const d = deps.digests as NonNullable<ComplianceDeps['digests']>;
  const clusters = state.filters.cluster ? [state.filters.cluster] : d.clusters.filter((c) => clusterInScope(state.scope, c));
  const out: Record<string, Digest[]> = {};
  // No archive bucket (a deployment that never ran `migrate`): no digest exists; the manifest says so by carrying none.
  if (!(await withRetry(() => deps.s3.bucketExists(d.archiveBucket), deps.retry))) {
    deps.logger.warn({ bucket: d.archiveBucket }, 'compliance export: no archive bucket, so no digests to carry');
    for (const cluster of clusters) out[cluster] = [];
    return out;
  }
  for (const cluster of clusters) {
    const chain = (await readChain(deps.s3, d.archiveBucket, cluster, d.objectPrefix)).flatMap((e) => (e.digest ? [e.digest] : []));
    out[cluster] = chainSegment(chain, state.fromMs, state.toMs);
  }
  return out;
}

export const exportObjectName = (s: Pick<ExportState, 'id' | 'format' | 'fromMs' | 'toMs'>): string =>
  `exports/${s.id}/grants-${new Date(s.fromMs).toISOString().replace(/[:.]/g, '')}-${new Date(s.toMs).toISOString().replace(/[:.]/g, '')}.${s.format}`;

const planFor = (store: AuditStore, request: Pick<ExportRequest, 'fromMs' | 'toMs' | 'filters' | 'scope'>, chunkRows?: number): Promise<ExportPlan> =>
  planGrantsExport(store, request.filters, { fromMs: request.fromMs, toMs: request.toMs }, chunkRows ?? DEFAULT_CHUNK_ROWS, request.scope ?? null);

const CONTENT_TYPES: Record<ExportFormat, string> = { parquet: 'application/vnd.apache.parquet', csv: 'text/csv', arrow: ARROW_STREAM_TYPE };
const contentTypeOf = (format: ExportFormat): string => CONTENT_TYPES[format];

/** Writes the rows of a request to a local file (the CLI's path). */
export async function writeGrantsExport(
  store: AuditStore,
  request: Pick<ExportRequest, 'format' | 'fromMs' | 'toMs' | 'filters'>,
  outPath: string,
  options: {
    onProgress?: (p: ExportProgress) => void | Promise<void>;
    chunkRows?: number;
    signal?: AbortSignal;
    durable?: boolean;
    tailerSecret?: Buffer;
    seals?: ExportCheckOptions['seals'];
  } = {},
): Promise<WrittenFile> {
  // Nothing is written of grants that disagree with the events the digests cover (grantsCheck.ts): the check runs
  // beside the plan and the chunk queries, and the file takes its name only once it has passed.
  const gate = new ExportGate(assertGrantsMatchEvents(store, request.filters, request, { tailerSecret: options.tailerSecret, seals: options.seals }));
  const plan = await gate.guard(planFor(store, request, options.chunkRows));
  return runExportPlan(store, plan, request.format, outPath, {
    onProgress: options.onProgress,
    signal: options.signal,
    durable: options.durable,
    revisionColumn: request.format === 'parquet' ? 'grant_revision' : undefined,
    gate,
  });
}

/**
 * Runs one export to completion; safe to repeat (a done export returns at
 * once; a half-written one starts over from ClickHouse).
 */
export async function runComplianceExport(deps: ComplianceDeps, id: string, onProgress?: (p: ExportProgress) => void | Promise<void>): Promise<ExportState> {
  const records = new ExportRecords(deps.store);
  let state = await records.get(id);
  if (!state) throw new LockauditError('LOCKAUDIT_ERR_EXPORT_NOT_FOUND', `no export ${id}`);
  if (state.status === 'done') return state;
  const queued = state;
  // The check of the grants against the events the digests cover (grantsCheck.ts: nothing is written or signed of
  // grants that disagree) runs beside the plan (a scan), the state write and the chunk queries: the upload is
  // completed, and the manifest signed, only once it has passed.
  const gate = new ExportGate(
    assertGrantsMatchEvents(deps.store, queued.filters, queued, {
      scope: queued.scope,
      tailerSecret: deps.tailerSecret,
      seals: deps.digests?.periodMs ? { publicKey: sealKey(deps.digests.signer), periodMs: deps.digests.periodMs } : undefined,
    }),
  );
  const [running, plan] = await gate.guard(
    Promise.all([records.update(queued, { status: 'running', error: '' }), planFor(deps.store, queued, deps.chunkRows)]),
  );
  state = running;
  // Progress rows are ClickHouse inserts: written beside the export, never holding up the next chunk.
  const progress = new LatestOnly<ExportProgress>(
    async (p) => {
      state = await records.update(running, { rowsDone: p.rows, rowsTotal: p.total, percent: p.percent });
      await onProgress?.(p);
    },
    (err) => deps.logger.warn({ exportId: id, err: (err as Error).message }, 'export progress not recorded'),
  );
  const object = exportObjectName(running);
  let file;
  try {
    file = await exportPlanToObject(
      deps.store,
      plan,
      running.format,
      { s3: deps.s3, bucket: deps.bucket, object, contentType: contentTypeOf(running.format), retry: deps.retry },
      {
        // Not the start (the 'running' row says it) nor the end (the 'done' row follows): a ClickHouse insert less each, beside the chunk queries.
        onProgress: (p) => (p.chunksDone > 0 && p.chunksDone < p.chunks ? progress.push(p) : undefined),
        revisionColumn: running.format === 'parquet' ? 'grant_revision' : undefined,
        gate,
      },
    );
  } finally {
    await progress.flush();
  }
  const built = buildManifest(file, {
    dataset: 'compliance',
    exportId: running.id,
    object,
    from: new Date(running.fromMs).toISOString(),
    to: new Date(running.toMs).toISOString(),
    filters: Object.fromEntries(Object.entries(running.filters).filter((e): e is [string, string] => typeof e[1] === 'string')),
    // Signed with the rest: the file says it holds one scope's grants only, so no one reads it as the whole record.
    ...(running.scope ? { scope: running.scope } : {}),
    grantsCheckedAgainstEvents: true,
  });
  // Signed, with the digests of the periods it covers: checkable by an auditor with the public key alone (docs/verify-export.mjs).
  const manifest = deps.digests ? signManifest({ ...built, digests: await digestsFor(deps, running) }, deps.digests.signer) : built;
  await putJsonIfAbsent(deps.s3, deps.bucket, manifestName(object), manifest, deps.retry);
  // Only now, with the object and its manifest stored, is the export done.
  [state] = await Promise.all([
    records.update(state, {
      status: 'done',
      rowsDone: file.rows,
      rowsTotal: file.rows,
      percent: 100,
      objectKey: object,
      bytes: file.bytes,
      sha256: file.sha256,
    }),
    records.audit(id, 'complete', 'system', { rows: file.rows.toString(), bytes: file.bytes, sha256: file.sha256, object }),
  ]);
  deps.metrics?.exportRows.inc({ kind: 'compliance', format: state.format }, Number(file.rows));
  deps.logger.info({ exportId: id, rows: file.rows.toString(), bytes: file.bytes }, 'compliance export done');
  return state;
}

/** Marks an export failed for good (its job ran out of attempts or its input is bad). */
export async function failComplianceExport(store: AuditStore, id: string, error: string): Promise<void> {
  const records = new ExportRecords(store);
  const state = await records.get(id);
  if (!state || state.status === 'done') return;
  await records.update(state, { status: 'failed', error });
  await records.audit(id, 'fail', 'system', { error });
}
