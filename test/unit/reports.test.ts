// Pure parts of the reports: cursor codec, CSV/HTML rendering, waiver status,
// buckets, overlap, the rate limiter, SQL headers and report windows.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { RateLimiter } from '../../api/rateLimit.js';
import { loadConfig } from '../../core/config.js';
import { isLockauditError } from '../../core/errors.js';
import { createLogger, redactUrl } from '../../core/logger.js';
import { projectRoot } from '../../core/paths.js';
import { decodeCursor, encodeCursor, filterDigest } from '../../reports/grantHistory/cursor.js';
import { grantsCsv, type GrantItem } from '../../reports/grantHistory/index.js';
import { isTimeout } from '../../reports/query.js';
import { csvCell, escapeHtml, toCsv } from '../../reports/render.js';
import { registerHtml } from '../../reports/riskRegister/index.js';
import { scheduledAt } from '../../reports/riskRegister/job.js';
import { dateInZone, waiverState } from '../../reports/riskRegister/status.js';
import { loadSql, parseSql } from '../../platform/sql.js';
import { overlaps } from '../../reports/unprotected/overlap.js';
import { bucketFor, resolveWindow } from '../../reports/window.js';

const code = (c: string) => (err: unknown) => isLockauditError(err) && err.code === c;

describe('grant-history cursor', () => {
  const filters = filterDigest({ key: 'a/b', from: undefined });
  const cursor = { after: { grantedAtMs: 1_764_400_000_123, cluster: 'c1', key: 'pay/acct-1', grantRevision: '18446744073709551615', spoolId: '' }, toMs: 1_764_400_999_000, filters };

  it('round-trips, 64-bit revisions exact', () => {
    assert.deepEqual(decodeCursor(encodeCursor(cursor), filters), cursor);
    assert.match(encodeCursor(cursor), /^[A-Za-z0-9_-]+$/);
  });
  it('is bound to its filters (order of keys does not matter; values do)', () => {
    assert.equal(filterDigest({ a: 1, b: 'x' }), filterDigest({ b: 'x', a: 1 }));
    assert.notEqual(filterDigest({ a: 1 }), filterDigest({ a: 2 }));
    assert.throws(() => decodeCursor(encodeCursor(cursor), filterDigest({ key: 'other/key' })), code('LOCKAUDIT_ERR_REPORT_CURSOR'));
  });
  it('rejects garbage and forged values with a 400', () => {
    const forged = (arr: unknown) => Buffer.from(JSON.stringify(arr)).toString('base64url');
    for (const text of ['', 'not-base64!', forged({}), forged([2, 0, 'c', 'k', '1', '', 0, filters]), forged([1, -1, 'c', 'k', '1', '', 0, filters]),
      forged([1, 0, 'c', 'k', '18446744073709551616', '', 0, filters]), forged([1, 0, 'c', 'k', '01', '', 0, filters]), forged([1, 0.5, 'c', 'k', '1', '', 0, filters])]) {
      assert.throws(() => decodeCursor(text, filters), code('LOCKAUDIT_ERR_REPORT_CURSOR'), text);
    }
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
    assert.equal(toCsv(['a', 'b'], [[1, 'x'], [null, 'y,z']]), 'a,b\r\n1,x\r\n,"y,z"\r\n');
  });
  it('writes tokens above 2^53 digit for digit', () => {
    const token = (2n ** 64n - 1n).toString();
    const item: GrantItem = { cluster: 'c', key: 'a/b', grantRevision: '281474976710655', token, holder: 'h', class: 'k', namespace: 'a', grantedAt: '2025-01-01T00:00:00.000Z', endedAt: null, endKind: null, endRevision: null, waitMs: 0, durationMs: null, unprotected: false, origin: 'api' };
    const line = grantsCsv([item]).split('\r\n')[1];
    assert.equal(line, `c,a/b,281474976710655,${token},h,k,a,2025-01-01T00:00:00.000Z,,,,0,,false,api`);
  });
  it('escapes every value in the HTML register', () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    const html = registerHtml({ runId: 'r<1>', date: '2025-11-29', asOf: '2025-11-29T02:00:00.000Z', trigger: 'manual', requestedBy: '<script>x</script>', classes: [] });
    assert.ok(!html.includes('<script>'));
    assert.match(html, /No advisory classes/);
  });
});

describe('waiver status', () => {
  const cases: Array<[string | undefined, number | null, string]> = [
    ['2025-12-31', 32, 'ok'], ['2025-12-30', 31, 'ok'], ['2025-12-29', 30, 'expiring'], ['2025-11-29', 0, 'expiring'], ['2025-11-28', -1, 'expired'], [undefined, null, 'expired'],
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

describe('rate limiter', () => {
  it('gives each identity its own bucket of N a minute, refilled continuously', () => {
    let now = 0;
    const rl = new RateLimiter(3, () => now);
    assert.deepEqual([rl.take('a'), rl.take('a'), rl.take('a')], [0, 0, 0]);
    assert.equal(rl.take('a'), 20); // one request per 20 s
    assert.equal(rl.take('b'), 0);
    now += 20_000;
    assert.equal(rl.take('a'), 0);
    assert.ok(rl.take('a') > 0);
  });
});

describe('report SQL files', () => {
  it('every query names exactly its parameters in its header', () => {
    const dir = path.join(projectRoot, 'reports');
    const files = readdirSync(dir, { recursive: true }).map(String).filter((f) => f.endsWith('.sql'));
    assert.ok(files.length >= 10, files.join(', '));
    for (const f of files) {
      const sql = loadSql(path.join('reports', f));
      assert.ok(sql.params.includes('db'), `${f} names its tables through {db:Identifier}`);
      assert.ok(!/\$\{/.test(sql.text), `${f}: no template interpolation`);
    }
  });
  it('rejects a header that does not match the body', () => {
    assert.throws(() => parseSql('x.sql', 'SELECT {a:String}'), /no "-- Parameters:"/);
    assert.throws(() => parseSql('x.sql', '-- Parameters: {a:String}\nSELECT {b:String}'), /not in header: b; not in body: a/);
    assert.deepEqual(parseSql('x.sql', '-- q\n-- Parameters: {a:String} {db:Identifier}\nSELECT {a:String} FROM {db:Identifier}.t').params, ['a', 'db']);
  });
  it('recognises a ClickHouse timeout', () => {
    assert.equal(isTimeout({ code: '159', type: 'TIMEOUT_EXCEEDED' }), true);
    assert.equal(isTimeout(new Error('Timeout exceeded: elapsed 313 ms, maximum: 300 ms.')), true);
    assert.equal(isTimeout(new Error('Syntax error')), false);
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
    assert.throws(() => resolveWindow({ from: new Date(now - 32 * day).toISOString(), to: new Date(now).toISOString() }, 31, now), (err) => code('LOCKAUDIT_ERR_LIMIT_WINDOW')(err) && /LOCKAUDIT_MAX_WINDOW_DAYS \(31 days\)/.test((err as Error).message));
    assert.throws(() => resolveWindow({ from: new Date(now).toISOString(), to: new Date(now - 1).toISOString() }, 31, now), code('LOCKAUDIT_ERR_REPORT_WINDOW'));
  });
});

describe('report configuration', () => {
  const problems = (env: NodeJS.ProcessEnv): string => {
    try {
      loadConfig({ env, cwd: '/srv' });
    } catch (err) {
      return String((err as Error).message);
    }
    return '';
  };
  it('has documented defaults', () => {
    assert.deepEqual(loadConfig({ env: {}, cwd: '/srv' }).reports, { riskRegisterCron: '0 2 * * *', riskRegisterTz: 'UTC', maxWindowDays: 31, maxPageSize: 1000, queryTimeoutMs: 30_000, rateLimitPerMinute: 120 });
    const c = loadConfig({ env: { LOCKAUDIT_RISK_REGISTER_CRON: '*/2 * * * * *', LOCKAUDIT_RISK_REGISTER_TZ: 'Europe/Zurich', LOCKAUDIT_MAX_PAGE_SIZE: '50' }, cwd: '/srv' });
    assert.equal(c.reports.riskRegisterCron, '*/2 * * * * *');
    assert.equal(c.reports.riskRegisterTz, 'Europe/Zurich');
    assert.equal(c.reports.maxPageSize, 50);
  });
  it('rejects an unknown time zone, a cron that is not one, and limits out of range, naming the variable', () => {
    assert.match(problems({ LOCKAUDIT_RISK_REGISTER_TZ: 'Mars/Olympus' }), /LOCKAUDIT_RISK_REGISTER_TZ \(reports\.riskRegisterTz\): unknown time zone/);
    assert.match(problems({ LOCKAUDIT_RISK_REGISTER_CRON: 'nightly' }), /LOCKAUDIT_RISK_REGISTER_CRON \(reports\.riskRegisterCron\)/);
    assert.match(problems({ LOCKAUDIT_QUERY_TIMEOUT_MS: '5' }), /LOCKAUDIT_QUERY_TIMEOUT_MS \(reports\.queryTimeoutMs\): must be >= 100/);
    assert.match(problems({ LOCKAUDIT_RATE_LIMIT_PER_MINUTE: 'lots' }), /LOCKAUDIT_RATE_LIMIT_PER_MINUTE: must be an integer/);
  });
});

describe('request logs', () => {
  it('never carry a fencing token from a query string', () => {
    assert.equal(redactUrl('/v1/grants?key=a/b&token=11258999068426240&limit=5'), '/v1/grants?key=a/b&token=[redacted]&limit=5');
    assert.equal(redactUrl('/v1/grants?token=1'), '/v1/grants?token=[redacted]');
    const lines: string[] = [];
    const log = createLogger('info', {}, { write: (s: string) => void lines.push(s) });
    log.info({ req: { method: 'GET', url: '/v1/grants?token=11258999068426240' } }, 'incoming request');
    assert.ok(lines.length === 1 && !lines[0]?.includes('11258999068426240'), lines.join(''));
  });
});
