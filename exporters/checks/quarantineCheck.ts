// The quarantine view checked against what backs it (issue 40 item 3): the
// changes the tailer could not decode are events rows (type 'other') that the
// digests hash, so each must have its quarantine entry with the same op and
// value; and every entry must be backed by such a change or carry its writer's
// proof (the tailer's or the spool shipper's, core/proof.ts), which binds its
// value and reason. An entry written, edited or removed by hand in the store is
// named with its revision and key. Run by `lockaudit verify` beside the grants
// check. An entry from before proofs (no proof, backed by its change) is judged
// by its op and value only: its reason is not evidence.
import type { AuditStore } from '../../core/clickhouse.js';
import { PREFIX } from '../../core/keyspace.js';
import { hasValidQuarantinedGrantProof, hasValidQuarantineRowProof } from '../../core/proof.js';
import { loadSql } from '../../platform/sql.js';
import type { TimeRange } from '../compliance/exportPlans.js';

const SPAN = loadSql('exporters/sql/quarantine_check_span.sql');
const MISSING = loadSql('exporters/sql/quarantine_check_missing.sql');
const ROWS = loadSql('exporters/sql/quarantine_check_rows.sql');

export interface QuarantineProblem {
  cluster: string;
  revision: string;
  key: string;
  timeline: number;
  problem: string;
}

export interface QuarantineCheckOptions {
  /** The tailer's key (core/tailerSecret.ts): without it no proof can be checked, so only entries backed by a captured change pass. */
  tailerSecret?: Buffer | undefined;
  /** At most this many problems (default 20). */
  limit?: number;
  /** Entries read at most (default 1 000 000): past it the rest are named as unchecked, never passed. */
  maxRows?: number;
  /** Entries per read (default 10 000). */
  pageRows?: number;
}

interface EntryRow {
  revisionText: string;
  keyText: string;
  timelineNo: number | string;
  opText: string;
  valueSha256: string;
  reason: string;
  proof: string;
  backed: number | string;
  /** The size the entry says its value has, and the bytes it keeps (the same for a value kept whole). */
  wholeBytes: number | string;
  keptBytes: number | string;
}

/** The problems of one cluster's quarantine for the changes timed in the range (and spool lines quarantined in it). */
export async function checkQuarantine(
  store: AuditStore,
  cluster: string,
  range: TimeRange,
  options: QuarantineCheckOptions = {},
): Promise<QuarantineProblem[]> {
  const limit = options.limit ?? 20;
  const maxRows = options.maxRows ?? 1_000_000;
  const pageRows = options.pageRows ?? 10_000;
  const [span] = await store.rows<{ lo: string; hi: string }>(SPAN.text, { cluster, fromMs: range.fromMs, toMs: range.toMs });
  const lo = span?.lo ?? '1';
  const hi = span?.hi ?? '0';
  const problems: QuarantineProblem[] = [];
  const missing = await store.rows<{ revisionText: string; keyText: string; timelineNo: number | string; problem: string }>(MISSING.text, {
    cluster,
    lo,
    hi,
    electionPrefix: PREFIX.election,
    limit,
  });
  for (const m of missing) problems.push({ cluster, revision: m.revisionText, key: m.keyText, timeline: Number(m.timelineNo), problem: m.problem });
  // One problem an entry: one named against its change is not named again for what its own row shows.
  const named = new Set(problems.map((p) => `${p.revision}|${p.timeline}|${p.key}`));
  // Exclusive: no entry has key '' (a spool line's key never is empty), so the first page starts at the first entry.
  let after = { afterRevision: '0', afterKey: '', afterTimeline: 0 };
  let read = 0;
  while (problems.length < limit) {
    const page = await store.rows<EntryRow>(ROWS.text, { cluster, lo, hi, fromMs: range.fromMs, toMs: range.toMs, ...after, limit: pageRows });
    for (const e of page) {
      const problem = named.has(`${e.revisionText}|${Number(e.timelineNo)}|${e.keyText}`) ? undefined : judge(cluster, e, options.tailerSecret);
      if (problem) problems.push({ cluster, revision: e.revisionText, key: e.keyText, timeline: Number(e.timelineNo), problem });
      if (problems.length >= limit) break;
    }
    read += page.length;
    const last = page.at(-1);
    if (!last || page.length < pageRows) break;
    if (read >= maxRows) {
      problems.push({
        cluster,
        revision: last.revisionText,
        key: last.keyText,
        timeline: Number(last.timelineNo),
        problem: `more than ${maxRows} quarantine entries in the range: the rest were not checked`,
      });
      break;
    }
    after = { afterRevision: last.revisionText, afterKey: last.keyText, afterTimeline: Number(last.timelineNo) };
  }
  return problems.slice(0, limit);
}

/** Why one entry is not what its writer wrote, or undefined. */
function judge(cluster: string, e: EntryRow, secret: Buffer | undefined): string | undefined {
  const timeline = Number(e.timelineNo);
  const [revision, key, op] = [e.revisionText, e.keyText, e.opText];
  if (op === 'grants-row') {
    // Its proof binds the change (the grants check excuses the missing grant row only with it).
    if (secret && hasValidQuarantinedGrantProof(secret, { cluster, timeline, revision, key }, e.proof)) return undefined;
    return "a refused grant row without the tailer's proof of it: written by hand (it excuses nothing in the grants check)";
  }
  // A value kept whole: its size is not in the proof (proofs from before sizes were kept hold), so it must be the text's.
  if (!e.valueSha256.includes('/') && Number(e.wholeBytes) !== Number(e.keptBytes))
    return `its size says ${e.wholeBytes} bytes, and the value it keeps whole is ${e.keptBytes}: edited`;
  if (e.proof !== '') {
    if (secret && hasValidQuarantineRowProof(secret, { cluster, timeline, revision, key, op, valueSha256: e.valueSha256, reason: e.reason }, e.proof))
      return undefined;
    if (!secret) return Number(e.backed) ? undefined : "cannot be checked without the tailer's key, and no captured change backs it";
    return 'its proof does not match: the entry was edited (value, reason, op or place) or proved with another key';
  }
  if (Number(e.backed)) return undefined; // quarantine_check_missing.sql compares its op and value with the change
  return 'an entry no captured change backs and no writer proved: written by hand (or before quarantine entries carried proofs)';
}

/** One problem as a line. */
export function formatQuarantineProblem(p: QuarantineProblem): string {
  return `quarantine: ${p.cluster} revision ${p.revision} ${p.key} timeline ${p.timeline}: ${p.problem}`;
}
