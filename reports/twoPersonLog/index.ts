// The life of every two-person request (force-release, epoch advance) as the lock API recorded it (sql/200):
// requested, approved, rejected, cancelled, and every approval refused and why — an edited or hand-written
// request, one other than its approver was shown, a self-approval, an expired one. Newest first; the next
// page is `to` = the oldest `at` of this one.
import Type, { type Static } from 'typebox';
import { CLUSTER_NAME_PATTERN } from '../../core/config.js';
import { loadSql } from '../../platform/sql.js';
import { reportRows, type ReportDeps } from '../../platform/reportQuery.js';
import { keyScopeParams, NarrowedSchema, scopeRead, type ReadScope } from '../../grants/scope.js';
import { Instant } from '../../grants/schemas.js';
import { resolveWindow } from '../window.js';
import type { TwoPersonLogRow } from '../../core/twoPersonLogRow.js';

const LIST = loadSql('reports/twoPersonLog/list.sql');

export const TwoPersonLogQuery = Type.Object(
  {
    cluster: Type.Optional(Type.String({ pattern: CLUSTER_NAME_PATTERN, description: 'Only this cluster; default all' })),
    kind: Type.Optional(Type.Union([Type.Literal('force-release'), Type.Literal('epoch-advance')], { description: 'Only this kind of request' })),
    requestId: Type.Optional(Type.String({ pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', description: 'Only this request' })),
    from: Type.Optional(Instant({ description: 'Acts at or after. Default: to − LOCKAUDIT_MAX_WINDOW_DAYS' })),
    to: Type.Optional(Instant({ description: 'Acts at or before (the next page: the oldest `at` of this one). Default now' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size' })),
  },
  { additionalProperties: false },
);
export type TwoPersonLogParams = Static<typeof TwoPersonLogQuery>;

export const TwoPersonActSchema = Type.Object({
  at: Type.String({ format: 'date-time' }),
  cluster: Type.String(),
  kind: Type.String({ description: 'force-release or epoch-advance' }),
  action: Type.String({ description: 'requested, approved, rejected, cancelled, refused-unproven, refused-changed, refused-self or refused-expired' }),
  requestId: Type.String(),
  requestHash: Type.String({ description: 'sha256 of the request as the API wrote it; empty when the value under its key was no request at all' }),
  actor: Type.String({ description: 'Who acted' }),
  requester: Type.String({ description: 'The requester the request names' }),
  key: Type.String({ description: 'The lock a force-release names; empty for an epoch advance' }),
  reason: Type.String(),
  revision: Type.String({ description: 'etcd revision of the act (decimal string)' }),
});
export const TwoPersonLogSchema = Type.Object({ acts: Type.Array(TwoPersonActSchema), narrowedTo: Type.Optional(NarrowedSchema) });
export type TwoPersonLogPage = Static<typeof TwoPersonLogSchema>;

/** The two-person acts of a window; a scoped reader's only of its scope (a cluster outside it: 403). */
export async function twoPersonLog(deps: ReportDeps, p: TwoPersonLogParams, nowMs: number, scope: ReadScope = null): Promise<TwoPersonLogPage> {
  const narrowed = scopeRead(scope, { cluster: p.cluster }, (n) => `querystring.${n}`);
  const { fromMs, toMs } = resolveWindow(p, deps.limits.maxWindowDays, nowMs);
  const rows = await reportRows<TwoPersonLogRow>(deps, LIST, {
    cluster: p.cluster ?? '',
    kind: p.kind ?? '',
    requestId: p.requestId ?? '',
    fromMs,
    toMs,
    limit: p.limit ?? 100,
    ...keyScopeParams(scope),
  });
  return {
    acts: rows.map((r) => ({
      at: new Date(Number(r.at_ms)).toISOString(),
      cluster: r.cluster,
      kind: r.kind,
      action: r.action,
      requestId: r.request_id,
      requestHash: r.request_hash,
      actor: r.actor,
      requester: r.requester,
      key: r.key,
      reason: r.reason,
      revision: r.revision,
    })),
    ...(narrowed ? { narrowedTo: narrowed } : {}),
  };
}
