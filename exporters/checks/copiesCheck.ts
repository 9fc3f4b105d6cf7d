// The copies of `grants` that reports read — grants_by_key (key history),
// grants_by_holder (a holder's history) and grant_tokens (where a token lookup
// goes) — checked against `grants` (issue 40 item 3). `grants` is checked
// against the signed events (grantsCheck.ts), so a copy equal to it is covered
// by the digests too; a copy edited on its own is named here with the grant
// and what a report would show wrong. Run by `lockaudit verify` beside the
// grants check (exporters/sql/copies_check.sql says what "equal" means for each).
import type { AuditStore } from '../../core/clickhouse.js';
import { loadSql } from '../../platform/sql.js';
import type { TimeRange } from '../compliance/exportPlans.js';

const SQL = loadSql('exporters/sql/copies_check.sql');

export interface CopyProblem {
  copy: 'grants' | 'grants_by_key' | 'grants_by_holder' | 'grant_tokens';
  cluster: string;
  key: string;
  grantRevision: string;
  spoolId: string;
  timeline: number;
  problem: string;
}

/** The grants of one cluster timed in the range whose copies disagree with `grants`, at most `limit` (default 20). */
export async function checkCopiesAgainstGrants(store: AuditStore, cluster: string, range: TimeRange, limit = 20): Promise<CopyProblem[]> {
  const rows = await store.rows<CopyProblem>(SQL.text, { cluster, fromMs: range.fromMs, toMs: range.toMs, limit });
  return rows.map((r) => ({ ...r, timeline: Number(r.timeline) }));
}

/** One problem as a line: the table, then the grant as formatGrantProblem names one. */
export function formatCopyProblem(p: CopyProblem): string {
  const grant = p.spoolId ? `spool line ${p.spoolId}` : `grant revision ${p.grantRevision}`;
  return `${p.copy}: ${p.cluster} ${p.key || '(spool)'} ${grant} timeline ${p.timeline}: ${p.problem}`;
}
