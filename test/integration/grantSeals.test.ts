// Grant seals (issue 40 item 3) on real chdb: the grants of a digest period
// whose holds have all ended are checked against their events once and sealed
// with the digest key; an export then checks only the periods no valid seal
// covers. Attacked: a grant edited after sealing (its period is checked again
// and the export refused, naming it), a seal signed with another key, a seal
// replayed across a restore; a period with a held lock is not sealed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { generateDigestSigner } from '../../core/digestKey.js';
import { sealGrantPeriod } from '../../exporters/digests/grantSealer.js';
import { assertGrantsMatchEvents } from '../../exporters/checks/grantsCheck.js';
import { GRANT_SEAL_KIND, sealKey, signGrantSeal } from '../../exporters/checks/grantSeals.js';
import { insertGrants } from '../support/exportData.js';
import { tempStore, uniqueId } from '../support/env.js';

const HOUR = 3_600_000;
const DAY1 = Date.parse('2026-03-02T00:00:00Z');
const signer = generateDigestSigner();
const seals = { publicKey: sealKey(signer), periodMs: HOUR };

describe('grant seals', () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  before(async () => ({ store, close: closeStore } = await tempStore()));
  after(async () => closeStore());

  /** Exports' check with seals: what it covered and checked, and its error if it refused. */
  async function exportCheck(cluster: string, range: { fromMs: number; toMs: number }) {
    const coverage: Array<{ sealedPeriods: number; checked: Array<{ fromMs: number; toMs: number }> }> = [];
    const err = await assertGrantsMatchEvents(store, { cluster }, range, { seals, settleMs: 0, onCoverage: (c) => coverage.push(c) }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    return { sealed: coverage.reduce((n, c) => n + c.sealedPeriods, 0), checked: coverage.flatMap((c) => c.checked.map((r) => (r.fromMs - DAY1) / HOUR)), err };
  }

  it('seals the final periods once; an export checks only what no valid seal covers, and a grant edited after sealing is named', async () => {
    const cluster = uniqueId('gs');
    // 6 hours of grants, one every 6 s, all ended; hour 4 gets a held lock too.
    await insertGrants(store, cluster, 3_600, DAY1, 6_000, 0);
    const range = { fromMs: DAY1, toMs: DAY1 + 6 * HOUR };
    const period = (h: number) => ({ fromMs: DAY1 + h * HOUR, toMs: DAY1 + (h + 1) * HOUR });
    await store.command(
      `ALTER TABLE {db:Identifier}.grants UPDATE end_kind = '', end_revision = 0, ended_at = NULL, duration_ms = NULL WHERE cluster = {c:String} AND granted_at = fromUnixTimestamp64Milli({at:Int64}, 'UTC')`,
      { c: cluster, at: DAY1 + 4 * HOUR },
      { mutations_sync: '2' },
    );
    await store.command(
      `ALTER TABLE {db:Identifier}.events DELETE WHERE cluster = {c:String} AND op = 'delete' AND grant_revision = {r:UInt64}`,
      { c: cluster, r: 1_000_000 + 4 * 600 },
      { mutations_sync: '2' },
    );
    assert.deepEqual(await exportCheck(cluster, range), { sealed: 0, checked: [0], err: undefined }, 'no seal yet: the whole range is checked (one stretch)');
    const outcomes = [];
    for (let h = 0; h < 6; h++) outcomes.push((await sealGrantPeriod(store, signer, cluster, period(h))).outcome);
    assert.deepEqual(outcomes, ['sealed', 'sealed', 'sealed', 'sealed', 'open', 'sealed'], 'the hour with a held lock is not sealed');
    assert.equal((await sealGrantPeriod(store, signer, cluster, period(0))).outcome, 'already');
    assert.deepEqual(await exportCheck(cluster, range), { sealed: 5, checked: [4], err: undefined }, 'only the open hour is checked');
    // A part of a sealed hour: its seal covers every grant of the hour, so the part too.
    assert.deepEqual(await exportCheck(cluster, { fromMs: DAY1 + 30 * 60_000, toMs: DAY1 + 90 * 60_000 }), { sealed: 2, checked: [], err: undefined });

    // The insider edits a sealed grant (and its copies are not the point here): hour 2 is checked again, the export refused.
    await store.command(
      `ALTER TABLE {db:Identifier}.grants UPDATE holder = 'spiffe://corp/mallory' WHERE cluster = {c:String} AND grant_revision = {r:UInt64}`,
      { c: cluster, r: 1_000_000 + 2 * 600 + 7 },
      { mutations_sync: '2' },
    );
    const edited = await exportCheck(cluster, range);
    assert.equal(edited.sealed, 4);
    assert.deepEqual(edited.checked, [2, 4]);
    assert.match(
      edited.err?.message ?? '',
      new RegExp(`grant revision ${1_000_000 + 2 * 600 + 7} timeline 0: differs from its start event \\(grant at revision \\d+\\) in holder`),
    );
    // A range with no grant is checked as empty (the span of an empty range read as [0, 0] and the check walked
    // everything before it, refusing an export of an empty hour for a grant hours away).
    await assertGrantsMatchEvents(store, { cluster }, { fromMs: DAY1 + 10 * HOUR, toMs: DAY1 + 11 * HOUR }, { settleMs: 0 });
    // Nor does a seal of the edited rows help unless the digest key signed it: one signed with another key is ignored.
    const rows = await store.rows<{ body: string }>(
      "SELECT body FROM {db:Identifier}.grant_seals WHERE cluster = {c:String} AND period_start = fromUnixTimestamp64Milli({at:Int64}, 'UTC')",
      { c: cluster, at: DAY1 + 2 * HOUR },
    );
    const genuine = JSON.parse((rows[0] as { body: string }).body) as Record<string, string>;
    const [now] = await store.rows<{ rows: string; sha256: string }>(
      "SELECT toString(count()) AS rows, '' AS sha256 FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND granted_at >= fromUnixTimestamp64Milli({f:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({t:Int64}, 'UTC')",
      { c: cluster, f: DAY1 + 2 * HOUR, t: DAY1 + 3 * HOUR },
    );
    assert.equal(now?.rows, genuine.rows);
    const other = generateDigestSigner();
    const { periodGrants } = await import('../../exporters/checks/grantSeals.js');
    const [edit] = await periodGrants(store, cluster, DAY1 + 2 * HOUR, DAY1 + 3 * HOUR, HOUR);
    const forged = signGrantSeal(
      {
        v: 1,
        kind: GRANT_SEAL_KIND,
        cluster,
        periodStart: genuine.periodStart as string,
        periodEnd: genuine.periodEnd as string,
        rows: edit?.rows ?? '',
        sha256: edit?.sha256 ?? '',
        sealedAt: new Date().toISOString(),
        keyId: signer.keyId,
      },
      other,
    );
    await store.insert('grant_seals', [
      { cluster, period_start: DAY1 + 2 * HOUR, period_end: DAY1 + 3 * HOUR, sealed_at: Date.now(), body: forged.body, signature: forged.signature },
    ]);
    assert.deepEqual((await exportCheck(cluster, range)).checked, [2, 4], 'a seal another key signed covers nothing');
    // The sealer itself refuses to seal the edited hour.
    assert.equal((await sealGrantPeriod(store, signer, cluster, period(2))).outcome, 'unproven');

    // A restore recorded after the seals: its marks may change rows, so no earlier seal counts.
    await store.insert('gaps', [{ cluster, from_revision: '1', to_revision: '2', kind: 'restore', reason: 'test', detected_at: Date.now() + 1_000 }]);
    assert.deepEqual((await exportCheck(cluster, range)).checked, [0], 'every hour checked again (one stretch)');
  });
});
