// Export ranges and filters as the API body and the CLI flags give them:
// a date or zone-less date-time is UTC whatever TZ the process runs in, "1"
// is not a date, and filters follow the report routes' schemas.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isLockauditError } from '../../core/errors.js';
import { parseExportInput } from '../../exporters/compliance/complianceExport.js';

// Set before any date is read: Node applies TZ changes at run time.
process.env.TZ = 'America/New_York';

const problems = (input: Parameters<typeof parseExportInput>[0]): string[] => {
  try {
    parseExportInput(input);
    return [];
  } catch (err) {
    assert.ok(isLockauditError(err, 'LOCKAUDIT_ERR_EXPORT_INVALID'), String(err));
    return [...err.details];
  }
};

describe('export input', () => {
  it('reads dates and zone-less date-times as UTC under TZ=America/New_York', () => {
    assert.equal(new Date(2026, 2, 1).getTimezoneOffset(), 300, 'the test runs in New York time');
    const r = parseExportInput({ from: '2026-03-01', to: '2026-03-01T12:00:00' });
    assert.equal(r.fromMs, Date.UTC(2026, 2, 1));
    assert.equal(r.toMs, Date.UTC(2026, 2, 1, 12));
    assert.equal(parseExportInput({ from: '2026-03-01T00:00:00-05:00', to: '2026-03-02' }).fromMs, Date.UTC(2026, 2, 1, 5));
  });
  it('refuses what is not a date, naming the field', () => {
    for (const bad of ['1', '2026', '2026-02-30', '2016-12-31T23:59:60Z', 'yesterday', '2026-03-01 00:00', '']) {
      assert.match(problems({ from: bad, to: '2026-03-02' }).join('; '), /^from: is not a date/, bad);
    }
  });
  it('checks filters with the report schemas', () => {
    assert.match(problems({ from: '2026-03-01', to: '2026-03-02', filters: { key: 'no-namespace\u0000' } }).join(), /filters\.key: must match/);
    assert.match(problems({ from: '2026-03-01', to: '2026-03-02', filters: { holder: 'a b' } }).join(), /filters\.holder: must match/);
    assert.match(problems({ from: '2026-03-01', to: '2026-03-02', filters: { class: 'UPPER' } }).join(), /filters\.class: must match/);
    assert.deepEqual(
      problems({
        from: '2026-03-01',
        to: '2026-03-02',
        filters: { key: 'payments/acct-42', holder: 'spiffe://corp/w', class: 'ledger-entry', namespace: 'payments', token: '18446744073709551615' },
      }),
      [],
    );
  });
});
