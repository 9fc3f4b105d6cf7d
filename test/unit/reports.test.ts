// Pure parts of the reports: cursor codec, CSV/HTML rendering, waiver status,
// buckets, overlap, the rate limiter, SQL headers and report windows.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isLockauditError } from '../../core/errors.js';
import { decodeCursor, encodeCursor, filterDigest } from '../../reports/grantHistory/cursor.js';
import { sealCursor } from '../../reports/cursor.js';
import { decodeQuarantineCursor, encodeQuarantineCursor } from '../../reports/quarantine/index.js';
import { grantsCsv, planPage, resolvePage, type GrantHistoryDeps, type GrantItem } from '../../reports/grantHistory/index.js';
import { isTimeout } from '../../platform/reportQuery.js';
import { csvCell, toCsv } from '../../grants/csv.js';
import { escapeHtml } from '../../reports/render.js';
import { registerHtml } from '../../reports/riskRegister/index.js';
import { scheduledAt } from '../../reports/riskRegister/job.js';
import { dateInZone, waiverState } from '../../reports/riskRegister/status.js';
import { overlaps } from '../../reports/unprotected/overlap.js';
import { bucketFor, resolveWindow } from '../../reports/window.js';

const code = (c: string) => (err: unknown) => isLockauditError(err) && err.code === c;

describe('grant-history cursor', () => {
  const filters = filterDigest({ key: 'a/b', from: undefined });
  const secret = Buffer.from('k'.repeat(32));
  const cursor = {
    after: { grantedAtMs: 1_764_400_000_123, cluster: 'c1', key: 'pay/acct-1', grantRevision: '18446744073709551615', spoolId: '', timeline: 4 },
    toMs: 1_764_400_999_000,
    filters,
  };

  it('round-trips, 64-bit revisions exact', () => {
    assert.deepEqual(decodeCursor(encodeCursor(cursor, secret), filters, secret), cursor);
    assert.match(encodeCursor(cursor, secret), /^[A-Za-z0-9_-]+$/);
  });
  it('is bound to its filters (order of keys does not matter; values do)', () => {
    assert.equal(filterDigest({ a: 1, b: 'x' }), filterDigest({ b: 'x', a: 1 }));
    assert.notEqual(filterDigest({ a: 1 }), filterDigest({ a: 2 }));
    assert.throws(() => decodeCursor(encodeCursor(cursor, secret), filterDigest({ key: 'other/key' }), secret), code('LOCKAUDIT_ERR_REPORT_CURSOR'));
  });
  it('rejects garbage and forged values with a 400 naming the cursor', () => {
    const forged = (arr: unknown) => Buffer.from(JSON.stringify(arr)).toString('base64url');
    for (const text of [
      '',
      'not-base64!',
      forged({}),
      forged([2, 0, 'c', 'k', '1', '', 0, filters]),
      forged([1, -1, 'c', 'k', '1', '', 0, filters]),
      forged([1, 0, 'c', 'k', '18446744073709551616', '', 0, filters]),
      forged([1, 0, 'c', 'k', '01', '', 0, filters]),
      forged([1, 0.5, 'c', 'k', '1', '', 0, filters]),
    ]) {
      assert.throws(() => decodeCursor(text, filters, secret), code('LOCKAUDIT_ERR_REPORT_CURSOR'), text);
    }
    // Signed, but a timeline that is no UInt32, or a field too many.
    for (const timeline of [-1, 0.5, 4_294_967_296, '1', null]) {
      const text = sealCursor('grants/2', [1, 'c', 'k', '1', '', 2, filters, timeline], secret);
      assert.throws(() => decodeCursor(text, filters, secret), code('LOCKAUDIT_ERR_REPORT_CURSOR'), String(timeline));
    }
    assert.throws(
      () => decodeCursor(sealCursor('grants/2', [1, 'c', 'k', '1', '', 2, filters, 0, 0], secret), filters, secret),
      code('LOCKAUDIT_ERR_REPORT_CURSOR'),
    );
  });
  it('reads a cursor issued before the timeline joined the position as after every timeline there (how it paged then)', () => {
    const old = sealCursor('grants/2', [cursor.after.grantedAtMs, 'c1', 'pay/acct-1', '7', '', cursor.toMs, filters], secret);
    assert.deepEqual(decodeCursor(old, filters, secret).after, {
      grantedAtMs: cursor.after.grantedAtMs,
      cluster: 'c1',
      key: 'pay/acct-1',
      grantRevision: '7',
      spoolId: '',
      timeline: 4_294_967_295,
    });
  });
  it('refuses a cursor whose values were edited, or signed with another secret (toMs 9e15 never reaches a Date)', () => {
    const issued = encodeCursor(cursor, secret);
    const payload = JSON.parse(Buffer.from(issued.slice(0, -22), 'base64url').toString('utf8')) as unknown[];
    payload[6] = 9e15;
    const edited = Buffer.from(JSON.stringify(payload)).toString('base64url') + issued.slice(-22);
    const message = (err: unknown) => code('LOCKAUDIT_ERR_REPORT_CURSOR')(err) && /querystring\.cursor/.test((err as Error).message);
    assert.throws(() => decodeCursor(edited, filters, secret), message);
    assert.throws(() => decodeCursor(encodeCursor(cursor, Buffer.from('x'.repeat(32))), filters, secret), message);
    assert.throws(() => decodeCursor(encodeCursor({ ...cursor, toMs: 9e15 }, secret), filters, secret), message);
  });
});

describe("a token lookup's plan", () => {
  it("checks the request (page size, cursor) before it asks the store for the token's key", async () => {
    const store = { rows: () => Promise.reject(new Error('the store was asked')) };
    const deps = {
      store,
      limits: { maxPageSize: 1000, maxWindowDays: 31, queryTimeoutMs: 1000, maxConcurrentQueries: 1 },
      cursorKey: Buffer.from('k'.repeat(32)),
    } as unknown as GrantHistoryDeps;
    await assert.rejects(planPage(deps, { token: '5', limit: 1001 }, Date.now()), code('LOCKAUDIT_ERR_LIMIT_PAGE_SIZE'));
    await assert.rejects(planPage(deps, { token: '5', cursor: 'AAAA' }, Date.now()), code('LOCKAUDIT_ERR_REPORT_CURSOR'));
    await assert.rejects(planPage(deps, { token: '5' }, Date.now()), /the store was asked/);
  });
});

describe("a key's page window", () => {
  it('a key or token with `to` and no `from` searches all time up to `to`, not the 31 days before it (investigator review)', () => {
    const deps = {
      limits: { maxPageSize: 1000, maxWindowDays: 31, queryTimeoutMs: 1000, maxConcurrentQueries: 1 },
      cursorKey: Buffer.from('k'.repeat(32)),
    } as unknown as GrantHistoryDeps;
    const to = '2026-06-01T00:00:00.000Z';
    assert.deepEqual(resolvePage(deps, { key: 'ns/a', to }, Date.now()).window, { fromMs: 0, toMs: Date.parse(to) });
    assert.deepEqual(resolvePage(deps, { token: '5', to }, Date.now()).window, { fromMs: 0, toMs: Date.parse(to) });
    // Broader filters keep the widest window allowed; a `from` is taken as given.
    assert.equal(resolvePage(deps, { keyPrefix: 'ns/', to }, Date.now()).window.fromMs, Date.parse(to) - 31 * 86_400_000);
    assert.equal(resolvePage(deps, { key: 'ns/a', from: '2026-05-01T00:00:00.000Z', to }, Date.now()).window.fromMs, Date.parse('2026-05-01T00:00:00.000Z'));
  });
});

describe('quarantine cursor (signed like the grant-history cursor: reports/cursor.ts)', () => {
  const secret = Buffer.from('k'.repeat(32));
  const filters = filterDigest({ cluster: 'qa', from: undefined, to: undefined });
  const q = {
    fromMs: 1_764_400_000_000,
    toMs: 1_764_400_999_000,
    atMs: 1_764_400_000_500,
    cluster: 'qa',
    revision: '18446744073709551615',
    key: '/l/pay/acct-1',
    filters,
  };
  it('round-trips; refuses an edited window, another secret, other filters and a grant-history cursor', () => {
    assert.deepEqual(decodeQuarantineCursor(encodeQuarantineCursor(q, secret), filters, secret), q);
    const issued = encodeQuarantineCursor(q, secret);
    const payload = JSON.parse(Buffer.from(issued.slice(0, -22), 'base64url').toString('utf8')) as unknown[];
    payload[1] = 0; // fromMs: a window from the epoch
    const widened = Buffer.from(JSON.stringify(payload)).toString('base64url') + issued.slice(-22);
    for (const [text, f] of [
      [widened, filters],
      [encodeQuarantineCursor(q, Buffer.from('x'.repeat(32))), filters],
      [issued, filterDigest({ cluster: 'qb' })],
    ] as const) {
      assert.throws(() => decodeQuarantineCursor(text, f, secret), code('LOCKAUDIT_ERR_REPORT_CURSOR'));
    }
    const grantCursor = encodeCursor(
      { after: { grantedAtMs: 1, cluster: 'qa', key: 'k', grantRevision: '1', spoolId: '', timeline: 0 }, toMs: 2, filters },
      secret,
    );
    assert.throws(() => decodeQuarantineCursor(grantCursor, filters, secret), /not a cursor of this report/);
    assert.throws(() => decodeCursor(issued, filters, secret), /not a cursor of this report/);
  });
});

describe('CSV and HTML rendering', () => {
  it('quotes per RFC 4180 and keeps formulas inert', () => {
    assert.equal(csvCell('plain'), 'plain');
    assert.equal(csvCell('a,b'), '"a,b"');
    assert.equal(csvCell('say "hi"'), '"say ""hi"""');
    assert.equal(csvCell('line\nbreak'), '"line\nbreak"');
    assert.equal(csvCell('=HYPERLINK("x")'), `"'=HYPERLINK(""x"")"`);
    assert.equal(csvCell('@SUM(A1)'), "'@SUM(A1)");
    assert.equal(csvCell(null), '');
    assert.equal(csvCell(-5), '-5');
    assert.equal(csvCell(false), 'false');
    assert.equal(
      toCsv(
        ['a', 'b'],
        [
          [1, 'x'],
          [null, 'y,z'],
        ],
      ),
      'a,b\r\n1,x\r\n,"y,z"\r\n',
    );
  });
  it('writes tokens above 2^53 digit for digit', () => {
    const token = (2n ** 64n - 1n).toString();
    const item: GrantItem = {
      cluster: 'c',
      key: 'a/b',
      grantRevision: '281474976710655',
      token,
      holder: 'h',
      class: 'k',
      namespace: 'a',
      grantedAt: '2025-01-01T00:00:00.000Z',
      endedAt: null,
      endKind: null,
      endRevision: null,
      waitMs: 0,
      durationMs: null,
      unprotected: false,
      origin: 'api',
      timeline: 0,
      rolledBack: false,
      startKnown: false,
      endedAtErrorMs: null,
    };
    const line = grantsCsv([item]).split('\r\n')[1];
    assert.equal(line, `c,a/b,281474976710655,${token},h,k,a,2025-01-01T00:00:00.000Z,,,,0,,false,api,0,false,false,`);
  });
  it('escapes every value in the HTML register', () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    const html = registerHtml({
      runId: 'r<1>',
      date: '2025-11-29',
      asOf: '2025-11-29T02:00:00.000Z',
      trigger: 'manual',
      requestedBy: '<script>x</script>',
      classes: [],
    });
    assert.ok(!html.includes('<script>'));
    assert.match(html, /No advisory classes/);
  });
});

describe('waiver status', () => {
  const cases: Array<[string | undefined, number | null, string]> = [
    ['2025-12-31', 32, 'ok'],
    ['2025-12-30', 31, 'ok'],
    ['2025-12-29', 30, 'expiring'],
    ['2025-11-29', 0, 'expiring'],
    ['2025-11-28', -1, 'expired'],
    [undefined, null, 'expired'],
  ];
  for (const [waiver, daysLeft, status] of cases) {
    it(`waiver ${waiver ?? 'missing'} on 2025-11-29 → ${daysLeft} days, ${status}`, () => {
      assert.deepEqual(waiverState(waiver, '2025-11-29'), { daysLeft, status });
    });
  }
  it('dates the register in its time zone', () => {
    const ms = Date.UTC(2025, 10, 29, 23, 30);
    assert.equal(dateInZone(ms, 'UTC'), '2025-11-29');
    assert.equal(dateInZone(ms, 'Europe/Zurich'), '2025-11-30');
    assert.equal(dateInZone(ms, 'America/New_York'), '2025-11-29');
  });
  it('takes the as-of of a scheduled job from its tick', () => {
    assert.equal(scheduledAt({ id: 'repeat:risk-register-nightly:1764381600000', opts: {}, timestamp: 1, delay: 0 }), 1_764_381_600_000);
    assert.equal(scheduledAt({ id: 'x', opts: { prevMillis: 42 } as never, timestamp: 1, delay: 0 }), 42);
    assert.equal(scheduledAt({ id: 'x', opts: {}, timestamp: 100, delay: 5 }), 105);
  });
});

describe('contention buckets and overlaps', () => {
  it('picks the smallest bucket giving at most 240 points', () => {
    assert.equal(bucketFor(60 * 60_000), 60);
    assert.equal(bucketFor(4 * 3_600_000), 60);
    assert.equal(bucketFor(5 * 3_600_000), 300);
    assert.equal(bucketFor(30 * 86_400_000), 10_800);
    assert.equal(bucketFor(3_650 * 86_400_000), 86_400);
  });
  it('treats holds as half-open intervals on the same key', () => {
    const a = { cluster: 'c', key: 'k/1', grantedAtMs: 100, endedAtMs: 200 };
    assert.equal(overlaps(a, { ...a, grantedAtMs: 150, endedAtMs: 300 }, 1000), true);
    assert.equal(overlaps(a, { ...a, grantedAtMs: 200, endedAtMs: 300 }, 1000), false); // starts as a ends
    assert.equal(overlaps(a, { ...a, grantedAtMs: 0, endedAtMs: 100 }, 1000), false);
    assert.equal(overlaps(a, { ...a, grantedAtMs: 50, endedAtMs: null }, 1000), true); // still held
    assert.equal(overlaps(a, { ...a, key: 'k/2', grantedAtMs: 150 }, 1000), false);
    assert.equal(overlaps(a, { ...a, cluster: 'd', grantedAtMs: 150 }, 1000), false);
  });
});

describe('report windows', () => {
  const now = Date.UTC(2025, 10, 29);
  const day = 86_400_000;
  it('defaults to the widest window ending now', () => {
    assert.deepEqual(resolveWindow({}, 31, now), { fromMs: now - 31 * day, toMs: now });
    assert.deepEqual(resolveWindow({ from: new Date(now - 2 * day).toISOString() }, 31, now), { fromMs: now - 2 * day, toMs: now });
  });
  it('names the limit when the window is too long, and rejects an inverted one', () => {
    assert.throws(
      () => resolveWindow({ from: new Date(now - 32 * day).toISOString(), to: new Date(now).toISOString() }, 31, now),
      (err) => code('LOCKAUDIT_ERR_LIMIT_WINDOW')(err) && /LOCKAUDIT_MAX_WINDOW_DAYS \(31 days\)/.test((err as Error).message),
    );
    assert.throws(
      () => resolveWindow({ from: new Date(now).toISOString(), to: new Date(now - 1).toISOString() }, 31, now),
      code('LOCKAUDIT_ERR_REPORT_WINDOW'),
    );
  });
});

describe('report queries', () => {
  it('recognises a ClickHouse timeout', () => {
    assert.equal(isTimeout({ code: '159', type: 'TIMEOUT_EXCEEDED' }), true);
    assert.equal(isTimeout(new Error('Timeout exceeded: elapsed 313 ms, maximum: 300 ms.')), true);
    assert.equal(isTimeout(new Error('Syntax error')), false);
  });
});
