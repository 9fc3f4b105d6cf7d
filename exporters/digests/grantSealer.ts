// The digest worker's second job (issue 40 item 3): sealing the grants of
// digested periods once they are final (exporters/checks/grantSeals.ts says what a
// seal is and how exports use it). A period's grants are sealed when every
// one granted in it has ended and they all pass the grants check against the
// events (grantsCheck.ts), their hash the same before and after the check.
import type { AuditStore } from '../../core/clickhouse.js';
import type { DigestSigner } from '../../core/digestKey.js';
import { GRANT_SEAL_KIND, periodGrants, readGrantSeal, sealHolds, sealKey, signGrantSeal, type GrantSealBody } from '../checks/grantSeals.js';
import { checkGrantsAgainstEvents, formatGrantProblem } from '../checks/grantsCheck.js';
import { loadSql } from '../../platform/sql.js';

export type SealOutcome = { outcome: 'sealed' | 'already' | 'empty' | 'open' } | { outcome: 'unproven'; problems: string[] };

/** Seals the grants of `cluster` granted in [fromMs, toMs) (one digest period) when they are final and agree with the events. */
export async function sealGrantPeriod(
  store: AuditStore,
  signer: DigestSigner,
  cluster: string,
  period: { fromMs: number; toMs: number },
  options: { tailerSecret?: Buffer; now?: () => number } = {},
): Promise<SealOutcome> {
  const P = period.toMs - period.fromMs;
  const read = async () => (await periodGrants(store, cluster, period.fromMs, period.toMs, P))[0];
  const before = await read();
  if (!before) return { outcome: 'empty' };
  if (before.open !== '0') return { outcome: 'open' };
  const key = sealKey(signer);
  const stored = await store.rows<{ body: string; signature: string }>(loadSql('exporters/sql/grant_seals.sql').text, {
    cluster,
    fromMs: period.fromMs,
    toMs: period.toMs,
    limit: 100,
  });
  if (stored.some((s) => sealHolds(readGrantSeal(s.body, s.signature, key), before))) return { outcome: 'already' };
  // Settle 0: a digested period's events are durable, so nothing of it is in flight; a moment's doubt only delays the seal.
  const problems = await checkGrantsAgainstEvents(store, { cluster }, period, { tailerSecret: options.tailerSecret, limit: 5, settleMs: 0 });
  if (problems.length) return { outcome: 'unproven', problems: problems.map(formatGrantProblem) };
  // Rows written while the check ran were not checked: seal only what was both hashed and checked.
  const after = await read();
  if (!after || after.rows !== before.rows || after.sha256 !== before.sha256 || after.open !== '0') return { outcome: 'open' };
  const sealedAt = new Date((options.now ?? Date.now)()).toISOString();
  const body: GrantSealBody = {
    v: 1,
    kind: GRANT_SEAL_KIND,
    cluster,
    periodStart: new Date(period.fromMs).toISOString(),
    periodEnd: new Date(period.toMs).toISOString(),
    rows: before.rows,
    sha256: before.sha256,
    sealedAt,
    keyId: signer.keyId,
  };
  const signed = signGrantSeal(body, signer);
  await store.insert('grant_seals', [
    { cluster, period_start: period.fromMs, period_end: period.toMs, sealed_at: Date.parse(sealedAt), body: signed.body, signature: signed.signature },
  ]);
  return { outcome: 'sealed' };
}
