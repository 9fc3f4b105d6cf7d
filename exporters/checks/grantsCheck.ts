// The grants an export holds, checked against the events they were derived
// from before anything is in place or signed (issue 25 F7; it runs beside the
// export's chunk queries, and the file or object takes its name only once it
// has passed: chunkedExport.ts ExportGate). Digests hash the
// events; exports and the grants history file read the `grants` table, which
// the tailer derives from them. Someone with write access to ClickHouse who
// alters, deletes, reopens or invents a grant row — without also rewriting
// the events, which the digests would name — gets the export refused, the
// grants named, instead of the alteration signed into a manifest.
// Both directions run over the export's own filter and range: each grant row
// against its start and end events (grants_check.sql), and each start event
// against its grant row (grants_check_events.sql: a row deleted, or altered
// out of the filter's reach).
import type { KeyObject } from 'node:crypto';
import type { AuditStore } from '../../core/clickhouse.js';
import { LockauditError } from '../../core/errors.js';
import { PREFIX } from '../../core/keyspace.js';
import { hasValidQuarantinedGrantProof } from '../../core/proof.js';
import { loadSql } from '../../platform/sql.js';
import { grantFilterParams, type GrantFilters } from '../../grants/filter.js';
import { clusterInScope, type ReadScope } from '../../grants/scope.js';
import { EXPORT_WINDOW_RULE, type TimeRange } from '../compliance/exportPlans.js';
import { unsealedStretches } from './grantSeals.js';

const SQL = {
  span: loadSql('exporters/sql/grants_check_span.sql'),
  steps: loadSql('exporters/sql/grants_check_steps.sql'),
  detail: loadSql('exporters/sql/grants_check_detail.sql'),
  rows: loadSql('exporters/sql/grants_check.sql'),
  events: loadSql('exporters/sql/grants_check_events.sql'),
  durable: loadSql('exporters/sql/grants_check_durable.sql'),
  excused: loadSql('exporters/sql/grants_check_excused.sql'),
  clusters: loadSql('exporters/sql/grants_check_clusters.sql'),
};

/** Proven quarantined grant rows read at most (they are what ClickHouse refused: rare). */
const EXCUSED_MAX = 100_000;

export interface GrantProblem {
  cluster: string;
  key: string;
  grantRevision: string;
  spoolId: string;
  timeline: number;
  problem: string;
}

/** A problem row as the queries return it: `compare` names the event a hash disagreed with (start | end). */
interface FoundRow extends GrantProblem {
  compare: '' | 'start' | 'end';
  eventRevision: string;
  eventKey: string;
  eventTimeline: number;
}

// grants_check_detail.sql's columns, in order: the grant's start columns, then its end time and error bound.
const DETAIL = [
  'namespace',
  'lock_path',
  'class',
  'holder',
  'session',
  'token',
  'epoch',
  'wait_ms',
  'origin',
  'unprotected',
  'granted_at',
  'ended_at',
  'ended_at_error_ms',
];
const START_COLUMNS = new Set(DETAIL.slice(0, 11));
const END_COLUMNS = new Set([...DETAIL.slice(0, 10), 'ended_at', 'ended_at_error_ms']);

/** Names the columns in which a grant row and its event differ (the queries compare hashes). */
async function named(store: AuditStore, p: FoundRow): Promise<string> {
  if (p.compare === '') return p.problem;
  const [row] = await store.rows<{ grantFields: string[]; eventFields: string[] }>(SQL.detail.text, {
    cluster: p.cluster,
    key: p.key,
    grantRevision: p.grantRevision,
    spoolId: p.spoolId,
    timeline: p.timeline,
    eventRevision: p.eventRevision,
    eventKey: p.eventKey,
    eventTimeline: p.eventTimeline,
  });
  if (!row) return p.problem;
  const columns = p.compare === 'start' ? START_COLUMNS : END_COLUMNS;
  const differ = DETAIL.filter((c, i) => columns.has(c) && row.grantFields[i] !== row.eventFields[i]);
  return differ.length ? `${p.problem} in ${differ.join(', ')}` : p.problem;
}

export interface GrantsCheckOptions {
  /** The scope of the reader the export is for (grants/scope.ts): only its grants and events are checked, as only they are written. Default: every one. */
  scope?: ReadScope;
  /** Problems reported at most (per direction). Default 20. */
  limit?: number;
  /**
   * Events ingested this recently do not judge (the tailer writes a batch's events before its grants, so a grant in
   * flight lacks its row for a moment). Default 120 000 ms.
   */
  settleMs?: number;
  /**
   * The range is checked a window at a time, each of about this many start events (hold puts, gap snapshots, spool
   * lines; a window's joins hold its start events in memory). Default 1 000 000.
   */
  windowStartEvents?: number;
  /** Windows begin and end on steps of this much wall time from the range's start. Default one hour. */
  stepMs?: number;
  /**
   * The tailer's key: a start event whose grant row the store refused is excused only when its quarantine row
   * carries the tailer's proof (sql/240). Without it, nothing in quarantine excuses a missing row.
   */
  tailerSecret?: Buffer;
  /** Events timed before this (ms) are never in flight: the periods a digest sealed (verify passes its chain's end). Default 0. */
  sealedBeforeMs?: number;
}

/** An export's check: with `seals`, the periods whose grants a valid grant seal covers are not checked again. */
export interface ExportCheckOptions extends GrantsCheckOptions {
  seals?: { publicKey: KeyObject; periodMs: number };
  /** Told, per cluster, what the seals covered and what was checked in full (tests, the bench). */
  onCoverage?: (c: { cluster: string; sealedPeriods: number; checked: TimeRange[] }) => void;
}

/** What every window's queries share: how far each timeline is durable, and the proven quarantined grant rows (numbers as bigint: a numeric array of strings is quoted). */
async function checkContext(
  store: AuditStore,
  cluster: string,
  secret: Buffer | undefined,
): Promise<{ durableKeys: string[]; durableRevisions: bigint[]; excused: bigint[] }> {
  const durable = await store.rows<{ key: string; revision: string }>(SQL.durable.text, { cluster });
  const excused = secret
    ? (
        await store.rows<{ cluster: string; timeline: number; revisionText: string; key: string; proof: string; id: string }>(SQL.excused.text, {
          cluster,
          limit: EXCUSED_MAX,
        })
      )
        .filter((q) =>
          hasValidQuarantinedGrantProof(secret, { cluster: q.cluster, timeline: Number(q.timeline), revision: q.revisionText, key: q.key }, q.proof),
        )
        .map((q) => BigInt(q.id))
    : [];
  return { durableKeys: durable.map((d) => d.key), durableRevisions: durable.map((d) => BigInt(d.revision)), excused };
}

interface Window {
  fromMs: number;
  toMs: number;
}

/**
 * The windows the check walks: consecutive steps of the range joined while they hold at most `budget` start events
 * (a step holding more is a window of its own), from the step of the span's first grant or start event to the range's
 * end. Disjoint and without holes: the 'granted' rule puts each grant and its start event in exactly one, and a grant
 * row far from any event (a forged one) still falls in some window.
 */
export function checkWindows(range: Window, first: number, steps: ReadonlyArray<{ step: number; starts: number }>, stepMs: number, budget: number): Window[] {
  const starts = [range.fromMs + Math.floor((first - range.fromMs) / stepMs) * stepMs];
  let held = 0;
  for (const s of steps) {
    const at = range.fromMs + s.step * stepMs;
    if (held > 0 && held + s.starts > budget && at > starts[starts.length - 1]!) {
      starts.push(at);
      held = 0;
    }
    held += s.starts;
  }
  return starts.map((fromMs, i) => ({ fromMs, toMs: starts[i + 1] ?? range.toMs }));
}

/** The grants (of the export's filter and range) that disagree with the events, each with what disagrees. */
export async function checkGrantsAgainstEvents(
  store: AuditStore,
  filters: GrantFilters,
  range: TimeRange,
  options: GrantsCheckOptions = {},
): Promise<GrantProblem[]> {
  // Every end kind: a row whose end was altered must not drop out of the check by the export's endKind filter.
  const { endKind: _endKind, ...rest } = filters;
  const limit = options.limit ?? 20;
  const stepMs = options.stepMs ?? 3_600_000;
  const seen = new Set<string>();
  const out: GrantProblem[] = [];
  // Only the part of the range that holds grants or start events (an export of years over days of record).
  const [span] = await store.rows<{ minMs: string; maxMs: string }>(SQL.span.text, { cluster: rest.cluster ?? '', fromMs: range.fromMs, toMs: range.toMs });
  const first = Number(span?.minMs ?? 0);
  const last = Number(span?.maxMs ?? -1);
  if (first > last) return [];
  // Windows sized by the start events they hold, not by wall time: each window's queries read the whole grants table.
  const filterParams = grantFilterParams(rest, { ...range, rule: EXPORT_WINDOW_RULE }, options.scope ?? null, 'filters.token', 'include');
  const steps = await store.rows<{ step: string; starts: string }>(SQL.steps.text, { ...filterParams, stepMs });
  const windows = checkWindows(
    range,
    first,
    steps.map((s) => ({ step: Number(s.step), starts: Number(s.starts) })),
    stepMs,
    options.windowStartEvents ?? 1_000_000,
  );
  const context = await checkContext(store, rest.cluster ?? '', options.tailerSecret);
  for (const window of windows) {
    if (out.length >= limit) break;
    const params = {
      ...grantFilterParams(rest, { ...window, rule: EXPORT_WINDOW_RULE }, options.scope ?? null, 'filters.token', 'include'),
      holdPrefix: PREFIX.hold,
      settleMs: options.settleMs ?? 120_000,
      sealedBeforeMs: options.sealedBeforeMs ?? 0,
      ...context,
      limit,
    };
    // Both settled before either's failure is thrown: no query of a failed check runs on after it (ExportGate.fail).
    const settled = await Promise.allSettled([store.rows<FoundRow>(SQL.rows.text, params), store.rows<FoundRow>(SQL.events.text, params)]);
    const found: FoundRow[] = [];
    for (const r of settled) {
      if (r.status === 'rejected') throw r.reason;
      found.push(...r.value);
    }
    for (const p of found) {
      const id = `${p.cluster}\u0000${p.key}\u0000${p.grantRevision}\u0000${p.spoolId}\u0000${p.timeline}\u0000${p.problem}`;
      if (seen.has(id) || out.length >= limit) continue;
      seen.add(id);
      out.push({
        cluster: p.cluster,
        key: p.key,
        grantRevision: p.grantRevision,
        spoolId: p.spoolId,
        timeline: Number(p.timeline),
        problem: await named(store, p),
      });
    }
  }
  return out.slice(0, limit);
}

/** One grant's problem as a line: cluster, lock, grant revision (or spool id), timeline. */
export function formatGrantProblem(p: GrantProblem): string {
  const grant = p.spoolId ? `spool line ${p.spoolId}` : `grant revision ${p.grantRevision}`;
  return `${p.cluster} ${p.key || '(spool)'} ${grant} timeline ${p.timeline}: ${p.problem}`;
}

/** The export's range checked, but the periods grant seals cover (grantSeals.ts), cluster by cluster. */
async function checkUnsealed(
  store: AuditStore,
  filters: GrantFilters,
  range: TimeRange,
  options: ExportCheckOptions & { seals: NonNullable<ExportCheckOptions['seals']> },
): Promise<GrantProblem[]> {
  const clusters = filters.cluster
    ? [filters.cluster]
    : (await store.rows<{ cluster: string }>(SQL.clusters.text, { fromMs: range.fromMs, toMs: range.toMs }))
        .map((c) => c.cluster)
        .filter((c) => clusterInScope(options.scope ?? null, c));
  const limit = options.limit ?? 20;
  const out: GrantProblem[] = [];
  for (const cluster of clusters) {
    const { stretches, sealedPeriods } = await unsealedStretches(store, cluster, range, options.seals);
    options.onCoverage?.({ cluster, sealedPeriods, checked: stretches });
    for (const stretch of stretches) {
      if (out.length >= limit) return out;
      out.push(...(await checkGrantsAgainstEvents(store, { ...filters, cluster }, stretch, { ...options, limit: limit - out.length })));
    }
  }
  return out;
}

/** Throws LOCKAUDIT_ERR_EXPORT_UNPROVEN naming the grants when any disagrees with its events. */
export async function assertGrantsMatchEvents(store: AuditStore, filters: GrantFilters, range: TimeRange, options: ExportCheckOptions = {}): Promise<void> {
  const { seals } = options;
  const problems = seals ? await checkUnsealed(store, filters, range, { ...options, seals }) : await checkGrantsAgainstEvents(store, filters, range, options);
  if (problems.length === 0) return;
  const first = problems.slice(0, 5).map(formatGrantProblem);
  throw new LockauditError(
    'LOCKAUDIT_ERR_EXPORT_UNPROVEN',
    `the grants table disagrees with the events it is derived from (${problems.length}${problems.length >= (options.limit ?? 20) ? '+' : ''} grants): ${first.join('; ')}`,
    { details: problems.map(formatGrantProblem) },
  );
}
