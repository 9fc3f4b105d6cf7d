// Unprotected-grant reconciliation (DESIGN §4): grants issued without quorum
// in a window, each with the other grants that overlapped it on the same key
// (possible double holders: protected grants, and unprotected grants of other
// API replicas during the same outage), and a reconcile action with a note, stored
// with who and when (append-only: every note is kept).
import Type, { type Static } from 'typebox';
import { LockauditError } from '../../core/errors.js';
import { GrantItemSchema, toItem, type GrantItem } from '../grantHistory/index.js';
import { Instant, NullableNumber, NullableString } from '../../grants/schemas.js';
import { NarrowedSchema, scopeParams, scopeRead, type ReadScope } from '../../grants/scope.js';
import { reportRows, type ReportDeps } from '../../platform/reportQuery.js';
import { num } from '../render.js';
import { loadSql } from '../../platform/sql.js';
import { resolveWindow } from '../window.js';
import { overlaps } from './overlap.js';

const LIST = loadSql('reports/unprotected/list.sql');
const FIND = loadSql('reports/unprotected/find.sql');
const OVERLAPS = loadSql('reports/unprotected/overlaps.sql');
const RECONCILIATIONS = loadSql('reports/unprotected/reconciliations.sql');

/** Most unprotected grants one answer lists; `truncated` says when there were more. */
export const MAX_UNPROTECTED = 5_000;

export const UnprotectedQuery = Type.Object(
  {
    from: Type.Optional(Instant({ description: 'Outage window start (unprotected grants granted at or after). Default: to − LOCKAUDIT_MAX_WINDOW_DAYS' })),
    to: Type.Optional(Instant({ description: 'Window end. Default now' })),
  },
  { additionalProperties: false },
);
export type UnprotectedParams = Static<typeof UnprotectedQuery>;

export const ReconcileParams = Type.Object({
  id: Type.String({ pattern: '^[0-9a-f]{32}$', description: 'The id of an unprotected grant in this report', examples: ['5f1d0c9a8e2b4d7f9a3c6e1b2d4f8a0c'] }),
});
export const ReconcileBody = Type.Object(
  {
    note: Type.String({
      minLength: 1,
      maxLength: 4000,
      description: 'What was checked and decided',
      examples: ['Both writers touched acct-42; ledger re-run by ops ticket OPS-1234'],
    }),
  },
  { additionalProperties: false },
);

export const ReconciliationSchema = Type.Object({
  id: Type.String(),
  note: Type.String(),
  reconciledBy: Type.String(),
  reconciledAt: Type.String({ format: 'date-time' }),
  notes: Type.Number({ description: 'How many notes the grant has (every note is kept)' }),
});
export type Reconciliation = Static<typeof ReconciliationSchema>;

export const UnprotectedItemSchema = Type.Object({
  id: Type.String(),
  cluster: Type.String(),
  key: Type.String(),
  holder: Type.String(),
  class: Type.String(),
  namespace: Type.String(),
  spoolId: Type.String(),
  grantedAt: Type.String({ format: 'date-time' }),
  endedAt: NullableString('null when its end is unknown (treated as held until now)'),
  durationMs: NullableNumber('null while open'),
  overlapping: Type.Array(GrantItemSchema, {
    description:
      'Other grants on the same key whose hold overlapped this one — protected ones, and unprotected ones (e.g. another API replica granting from memory during the same quorum loss): possible double holders',
  }),
  reconciliation: Type.Union([ReconciliationSchema, Type.Null()], { description: 'The latest reconcile note; null until reconciled' }),
});
export type UnprotectedItem = Static<typeof UnprotectedItemSchema>;

export const UnprotectedReportSchema = Type.Object(
  {
    from: Type.String({ format: 'date-time' }),
    to: Type.String({ format: 'date-time' }),
    items: Type.Array(UnprotectedItemSchema),
    truncated: Type.Boolean(),
    narrowedTo: Type.Optional(NarrowedSchema),
  },
  {
    examples: [
      {
        from: '2025-11-28T00:00:00.000Z',
        to: '2025-11-29T00:00:00.000Z',
        truncated: false,
        items: [
          {
            id: '5f1d0c9a8e2b4d7f9a3c6e1b2d4f8a0c',
            cluster: 'local',
            key: 'catalog/sku-9',
            holder: 'spiffe://corp/indexer',
            class: 'cache-refresh',
            namespace: 'catalog',
            spoolId: 'node-3:000042',
            grantedAt: '2025-11-28T10:00:01.000Z',
            endedAt: '2025-11-28T10:00:31.000Z',
            durationMs: 30000,
            // Typed: an example the compiler checks cannot lack a field its schema requires (test/integration/openapiExamples.test.ts checks them all).
            overlapping: [
              {
                cluster: 'local',
                key: 'catalog/sku-9',
                grantRevision: '88120',
                token: '11258999068514424',
                holder: 'spiffe://corp/pricer',
                class: 'cache-refresh',
                namespace: 'catalog',
                grantedAt: '2025-11-28T10:00:20.000Z',
                endedAt: '2025-11-28T10:00:25.000Z',
                endKind: 'release',
                endRevision: '88131',
                waitMs: 0,
                durationMs: 5000,
                unprotected: false,
                origin: 'api',
                timeline: 0,
                rolledBack: false,
                startKnown: true,
                endedAtErrorMs: 0,
              } satisfies GrantItem,
            ],
            reconciliation: null,
          },
        ],
      },
    ],
  },
);
export type UnprotectedReport = Static<typeof UnprotectedReportSchema>;

type HistoryRow = Parameters<typeof toItem>[0];
interface ListRow extends HistoryRow {
  id: string;
}
interface NoteRow {
  id: string;
  note: string;
  reconciled_by: string;
  reconciled_at_ms: string | number;
  notes: string | number;
}

/** The unprotected grants of a window; a scoped reader (grants/scope.ts) sees its scope's only, and is told so. */
export async function unprotectedReport(deps: ReportDeps, p: UnprotectedParams, nowMs: number, scope: ReadScope = null): Promise<UnprotectedReport> {
  const { fromMs, toMs } = resolveWindow({ from: p.from, to: p.to }, deps.limits.maxWindowDays, nowMs);
  const bound = scopeParams(scope);
  const rows = await reportRows<ListRow>(deps, LIST, { fromMs, toMs, limit: MAX_UNPROTECTED + 1, ...bound });
  const list = rows.slice(0, MAX_UNPROTECTED);
  const narrowed = scopeRead(scope, {}, (n) => n);
  const base = {
    from: new Date(fromMs).toISOString(),
    to: new Date(toMs).toISOString(),
    truncated: rows.length > MAX_UNPROTECTED,
    ...(narrowed ? { narrowedTo: narrowed } : {}),
  };
  if (list.length === 0) return { ...base, items: [] };
  const spans = list.map((r) => ({ row: r, cluster: r.cluster, key: r.key, grantedAtMs: Number(r.granted_at_ms), endedAtMs: num(r.ended_at_ms) }));
  const spanFrom = Math.min(...spans.map((s) => s.grantedAtMs));
  const spanTo = Math.max(...spans.map((s) => s.endedAtMs ?? nowMs));
  const [candidates, notes] = await Promise.all([
    reportRows<HistoryRow>(deps, OVERLAPS, { keys: [...new Set(list.map((r) => r.key))], fromMs: spanFrom, toMs: spanTo, ...bound }),
    reportRows<NoteRow>(deps, RECONCILIATIONS, { ids: list.map((r) => r.id) }),
  ]);
  const otherSpans = candidates.map((c) => ({
    item: toItem(c),
    identity: grantIdentity(c),
    cluster: c.cluster,
    key: c.key,
    grantedAtMs: Number(c.granted_at_ms),
    endedAtMs: num(c.ended_at_ms),
  }));
  const noteById = new Map(notes.map((n) => [n.id, n]));
  return {
    ...base,
    items: spans.map((s) => {
      const n = noteById.get(s.row.id);
      const self = grantIdentity(s.row);
      const overlapping: GrantItem[] = otherSpans.filter((p) => p.identity !== self && overlaps(s, p, nowMs)).map((p) => p.item);
      return {
        id: s.row.id,
        cluster: s.cluster,
        key: s.key,
        holder: s.row.holder,
        class: s.row.class,
        namespace: s.row.namespace,
        spoolId: s.row.spool_id,
        grantedAt: new Date(s.grantedAtMs).toISOString(),
        endedAt: s.endedAtMs === null ? null : new Date(s.endedAtMs).toISOString(),
        durationMs: num(s.row.duration_ms),
        overlapping,
        reconciliation: n
          ? {
              id: n.id,
              note: n.note,
              reconciledBy: n.reconciled_by,
              reconciledAt: new Date(Number(n.reconciled_at_ms)).toISOString(),
              notes: num(n.notes) ?? 1,
            }
          : null,
      };
    }),
  };
}

/** One grant row's identity (the grants table's sorting key). */
function grantIdentity(r: { cluster: string; key: string; grant_revision: string | number; spool_id?: string }): string {
  return [r.cluster, r.key, String(r.grant_revision), r.spool_id ?? ''].join('\u001f');
}

/** Records a reconcile note on an unprotected grant; 404 when no unprotected grant has the id. */
export async function reconcile(deps: ReportDeps, input: { id: string; note: string; by: string; atMs: number }): Promise<Reconciliation> {
  const [grant] = await reportRows<{ id: string; cluster: string; key: string; spool_id: string }>(deps, FIND, { id: input.id });
  if (!grant) throw new LockauditError('LOCKAUDIT_ERR_REPORT_NOT_FOUND', `params.id: no unprotected grant has the id ${input.id}`);
  await deps.store.insert('unprotected_reconciliations', [
    { id: grant.id, cluster: grant.cluster, key: grant.key, spool_id: grant.spool_id, note: input.note, reconciled_by: input.by, reconciled_at: input.atMs },
  ]);
  const [n] = await reportRows<NoteRow>(deps, RECONCILIATIONS, { ids: [grant.id] });
  return { id: grant.id, note: input.note, reconciledBy: input.by, reconciledAt: new Date(input.atMs).toISOString(), notes: num(n?.notes ?? null) ?? 1 };
}
