// The reporting API (issue 5) against a real embedded ClickHouse: known-answer
// fixtures for grant history, contention, the risk register and unprotected
// grants; paging while the tailer appends; 64-bit exactness; roles; bad input;
// limits; the read audit; the OpenAPI document.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DataType, tableFromIPC } from 'apache-arrow';
import { buildApp, type App } from '../../api/app.js';
import { grantRoutes } from '../../api/routes/grants.js';
import { reportRoutes } from '../../api/routes/reports.js';
import { HealthState } from '../../platform/health.js';
import { ApiTokenVerifier, createApiToken, type Role } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { isLockauditError } from '../../core/errors.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { reportRows } from '../../platform/reportQuery.js';
import { buildRegister, runRegister } from '../../reports/riskRegister/index.js';
import { dateInZone } from '../../reports/riskRegister/status.js';
import { parseSql } from '../../platform/sql.js';
import type { GrantRow } from '../../tailer/types.js';
import { addDays, advisoryClass, classEvent, fencedClass, grantRows, tokenOf, type GrantSpec } from '../support/grants.js';
import { tempStore, testConfig } from '../support/env.js';

const NOW = Date.now();
const T0 = Math.floor(NOW / 60_000) * 60_000 - 3_600_000; // a minute boundary an hour ago
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
const WINDOW = `from=${encodeURIComponent(iso(T0 - 60_000))}&to=${encodeURIComponent(iso(T0 + 60_000))}`;

// The known-answer fixture (numbers in the tests below are computed by hand from it).
const G: Record<string, GrantSpec> = {
  g1: { key: 'pay/acct-1', class: 'ledger', holder: 'h-a', rev: 101, at: T0, waitMs: 10, end: { kind: 'release', at: T0 + 1000, rev: 105 } },
  g2: { key: 'pay/acct-1', class: 'ledger', holder: 'h-b', rev: 110, at: T0 + 1500, waitMs: 30, end: { kind: 'expiry', at: T0 + 5500, rev: 115 } },
  g3: { key: 'pay/acct-1', class: 'ledger', holder: 'h-a', rev: 120, at: T0 + 6000, waitMs: 50, end: { kind: 'force', at: T0 + 8000, rev: 125 } },
  g4: { key: 'pay/acct-1', class: 'ledger', holder: 'h-c', rev: 130, at: T0 + 9000, waitMs: 70 },
  g5: { key: 'pay/acct-2', class: 'ledger', holder: 'h-b', rev: 102, at: T0 + 100, waitMs: 20, end: { kind: 'release', at: T0 + 600, rev: 104 } },
  g6: { key: 'pay/acct-2', class: 'ledger', holder: 'h-a', rev: 140, at: T0 + 700, waitMs: 40, end: { kind: 'release', at: T0 + 900, rev: 141 } },
  g7: { key: 'cat/sku-1', class: 'cache', holder: 'h-d', rev: 103, at: T0 + 200, waitMs: 0, end: { kind: 'session-close', at: T0 + 2200, rev: 106 } },
  g8: { key: 'cat/sku-1', class: 'cache', holder: 'h-e', rev: 0, spool: 'n1:000001', at: T0 + 2000, end: { kind: 'release', at: T0 + 3000, rev: 0 } },
  g9: { key: 'cat/sku-1', class: 'cache', holder: 'h-d', rev: 150, at: T0 + 2500, waitMs: 5, end: { kind: 'expiry', at: T0 + 4500, rev: 151 } },
  g10: { key: 'cat/sku-1', class: 'cache', holder: 'h-f', rev: 160, at: T0 + 5000, waitMs: 15, end: { kind: 'release', at: T0 + 5100, rev: 161 } },
  g11: { key: 'cat/sku-2', class: 'cache', holder: 'h-e', rev: 0, spool: 'n1:000002', at: T0 + 50_000 },
  g12: { key: 'cat/sku-3', class: 'cache', holder: 'h-d', rev: 90, at: NOW - 3 * DAY, waitMs: 1, end: { kind: 'expiry', at: NOW - 3 * DAY + 1000, rev: 91 } },
  g13: { key: 'cat/sku-3', class: 'cache', holder: 'h-d', rev: 20, at: NOW - 40 * DAY, waitMs: 1, end: { kind: 'release', at: NOW - 40 * DAY + 10, rev: 21 } },
};
// Writes around the lock API in the advisory class flags (issue 11, defect 7), outside the contention window:
// foreign grants at −5 h, −10 d and −40 d (not in 30 d); holds deleted by hand at −4 h and −10 d.
const F: Record<string, GrantSpec> = {
  f1: {
    key: 'cfg/a',
    class: 'flags',
    holder: 'etcdctl',
    rev: 400,
    at: NOW - 5 * 3_600_000,
    origin: 'foreign',
    end: { kind: 'release', at: NOW - 5 * 3_600_000 + 1000, rev: 401 },
  },
  f2: { key: 'cfg/a', class: 'flags', holder: 'h-g', rev: 402, at: NOW - 4 * 3_600_000, end: { kind: 'deleted', at: NOW - 4 * 3_600_000 + 2000, rev: 403 } },
  f3: {
    key: 'cfg/b',
    class: 'flags',
    holder: 'etcdctl',
    rev: 404,
    at: NOW - 10 * DAY,
    origin: 'foreign',
    end: { kind: 'deleted', at: NOW - 10 * DAY + 1000, rev: 405 },
  },
  f4: {
    key: 'cfg/b',
    class: 'flags',
    holder: 'etcdctl',
    rev: 406,
    at: NOW - 40 * DAY,
    origin: 'foreign',
    end: { kind: 'release', at: NOW - 40 * DAY + 1000, rev: 407 },
  },
  // Long holds: granted before the 30 days, deleted by hand inside them (counted by end time) or before them (not
  // counted) — their open rows are older than 30 days either way, so the register must not filter on them alone.
  f5: { key: 'cfg/c', class: 'flags', holder: 'h-h', rev: 408, at: NOW - 35 * DAY, end: { kind: 'deleted', at: NOW - 2 * DAY, rev: 409 } },
  f6: { key: 'cfg/d', class: 'flags', holder: 'h-h', rev: 410, at: NOW - 45 * DAY, end: { kind: 'deleted', at: NOW - 35 * DAY, rev: 411 } },
  // Still held since before the 30 days: no count of the register (its open row is dropped before FINAL: usage.sql).
  f7: { key: 'cfg/e', class: 'flags', holder: 'h-h', rev: 412, at: NOW - 40 * DAY },
};
const TODAY = dateInZone(NOW, 'UTC');

describe('reporting API', () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let app: App;
  const tokens: Partial<Record<Role | 'ops2', string>> = {};
  // The suite makes hundreds of calls; the rate limit has its own test below.
  const config = testConfig({ LOCKAUDIT_RATE_LIMIT_PER_MINUTE: '100000' });

  const ctxFor = (cfg = config) => ({
    config: cfg,
    logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    store,
    verifier: new ApiTokenVerifier(store),
    health: new HealthState(),
    metrics: createMetricsRegistry(),
  });
  const get = (url: string, who?: keyof typeof tokens, a = app) =>
    a.inject({ method: 'GET', url, headers: who ? { authorization: `Bearer ${tokens[who]}` } : {} });
  const post = (url: string, body: unknown, who?: keyof typeof tokens, a = app) =>
    a.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', ...(who ? { authorization: `Bearer ${tokens[who]}` } : {}) },
      payload: JSON.stringify(body ?? {}),
    });

  async function insertGrants(specs: GrantSpec[]): Promise<void> {
    // As the tailer does: open rows, later (another insert) the closed rows.
    await store.insert(
      'grants',
      specs.map((s) => grantRows(s).open),
    );
    const closed = specs.map((s) => grantRows(s).closed).filter((r): r is GrantRow => r !== undefined);
    await store.insert('grants', closed);
  }

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    await insertGrants(Object.values(G));
    await insertGrants(Object.values(F));
    await store.insert('grants', [grantRows(G.g1 as GrantSpec).closed as GrantRow]); // a tailer replay: must not show twice
    await store.insert('events', [
      classEvent('cache', advisoryClass('cache', 'cat', addDays(TODAY, 90), 'risk@corp'), 10, NOW - 50 * DAY),
      classEvent('flags', advisoryClass('flags', 'cfg', addDays(TODAY, 10)), 11, NOW - 50 * DAY),
      classEvent('report-gen', fencedClass('report-gen', 'rep'), 12, NOW - 50 * DAY),
      classEvent('report-gen', advisoryClass('report-gen', 'rep', addDays(TODAY, -5)), 13, NOW - 49 * DAY), // latest wins: advisory
      classEvent('old-adv', advisoryClass('old-adv', 'old', addDays(TODAY, 100)), 14, NOW - 50 * DAY),
      classEvent('old-adv', fencedClass('old-adv', 'old'), 15, NOW - 49 * DAY), // now fenced: not in the register
      classEvent('gone', advisoryClass('gone', 'old', addDays(TODAY, 100)), 16, NOW - 50 * DAY),
      classEvent('gone', null, 17, NOW - 49 * DAY), // deleted
      classEvent('ledger', fencedClass('ledger', 'pay'), 18, NOW - 50 * DAY),
      classEvent('late', advisoryClass('late', 'x', addDays(TODAY, 3)), 19, NOW + DAY), // defined after as-of
    ]);
    app = await buildApp(ctxFor(), [grantRoutes, reportRoutes]);
    const make = async (name: keyof typeof tokens, identity: string, roles: Role[]) => {
      tokens[name] = (await createApiToken(store, identity, roles)).token;
    };
    await make('investigator', 'ivy@corp', ['investigator']);
    await make('auditor', 'audrey@corp', ['auditor']);
    await make('lock-operator', 'ops@corp', ['lock-operator']);
    await make('admin', 'root@corp', ['admin']);
    await make('client', 'spiffe://corp/worker', ['client']);
  });
  after(async () => {
    await app?.close();
    await closeStore?.();
  });

  describe('grant history', () => {
    it("returns a key's grants with start, end, end kind, duration, wait and token (known answer)", async () => {
      // Newest first unless asked (audit logs open on the newest); oldest first with order=asc.
      const newest = await get('/v1/grants?key=pay/acct-1', 'investigator');
      assert.deepEqual(
        newest.json().items.map((i: { grantRevision: string }) => i.grantRevision),
        ['130', '120', '110', '101'],
      );
      const r = await get('/v1/grants?key=pay/acct-1&order=asc', 'investigator');
      assert.equal(r.statusCode, 200, r.body);
      const body = r.json();
      assert.equal(body.nextCursor, null);
      assert.deepEqual(
        body.items.map((i: { grantRevision: string }) => i.grantRevision),
        ['101', '110', '120', '130'],
      );
      assert.deepEqual(body.items, [...newest.json().items].reverse());
      assert.deepEqual(body.items[0], {
        cluster: 'c1',
        key: 'pay/acct-1',
        grantRevision: '101',
        token: tokenOf(G.g1 as GrantSpec),
        holder: 'h-a',
        class: 'ledger',
        namespace: 'pay',
        grantedAt: iso(T0),
        endedAt: iso(T0 + 1000),
        endKind: 'release',
        endRevision: '105',
        waitMs: 10,
        durationMs: 1000,
        unprotected: false,
        origin: 'api',
        timeline: 0,
        rolledBack: false,
        startKnown: true,
        endedAtErrorMs: 0,
      });
      assert.deepEqual(
        body.items.map((i: { endKind: string | null }) => i.endKind),
        ['release', 'expiry', 'force', null],
      );
      assert.deepEqual(body.items[3], {
        cluster: 'c1',
        key: 'pay/acct-1',
        grantRevision: '130',
        token: tokenOf(G.g4 as GrantSpec),
        holder: 'h-c',
        class: 'ledger',
        namespace: 'pay',
        grantedAt: iso(T0 + 9000),
        endedAt: null,
        endKind: null,
        endRevision: null,
        waitMs: 70,
        durationMs: null,
        unprotected: false,
        origin: 'api',
        timeline: 0,
        rolledBack: false,
        startKnown: true,
        endedAtErrorMs: null,
      });
    });

    it("says when a grant's start was not captured and how far an estimated end may be off (investigator review: both were dropped)", async () => {
      // A year before the fixture: outside every report window of this file (a key's history searches all time).
      const at = T0 - 365 * 86_400_000;
      const spec: GrantSpec = { key: 'gap/acct-1', class: 'ledger', holder: 'h-gap', rev: 7001, at, end: { kind: 'expiry', at: at + 4000, rev: 7009 } };
      const rows = grantRows(spec);
      await store.insert('grants', [
        { ...rows.open, start_known: 0 },
        { ...(rows.closed as GrantRow), start_known: 0, ended_at_error_ms: 480 },
      ]);
      const [item] = (await get('/v1/grants?key=gap/acct-1', 'investigator')).json().items;
      assert.equal(item.startKnown, false);
      assert.equal(item.endedAtErrorMs, 480);
      const csv = (await get('/v1/grants?key=gap/acct-1&format=csv', 'investigator')).body.trim().split('\r\n');
      assert.match(csv[1] ?? '', /,false,480$/);
    });

    it('answers "which grant held token T?" exactly, for tokens above 2^53, in JSON and CSV', async () => {
      const token = tokenOf(G.g3 as GrantSpec);
      assert.ok(BigInt(token) > 2n ** 53n);
      const r = await get(`/v1/grants?token=${token}`, 'investigator');
      assert.equal(r.statusCode, 200, r.body);
      assert.deepEqual(
        r.json().items.map((i: { grantRevision: string }) => i.grantRevision),
        ['120'],
      );
      // In the raw text: a quoted decimal, never a rounded JS number.
      assert.ok(r.body.includes(`"token":"${token}"`), r.body);
      const csv = await get(`/v1/grants?token=${token}&format=csv`, 'investigator');
      assert.equal(csv.statusCode, 200);
      assert.match(String(csv.headers['content-type']), /^text\/csv/);
      const lines = csv.body.trim().split('\r\n');
      assert.equal(
        lines[0],
        'cluster,key,grantRevision,token,holder,class,namespace,grantedAt,endedAt,endKind,endRevision,waitMs,durationMs,unprotected,origin,timeline,rolledBack,startKnown,endedAtErrorMs',
      );
      assert.equal(lines[1], `c1,pay/acct-1,120,${token},h-a,ledger,pay,${iso(T0 + 6000)},${iso(T0 + 8000)},force,125,50,2000,false,api,0,false,true,0`);
      const none = await get('/v1/grants?token=18446744073709551615', 'investigator');
      assert.deepEqual(none.json(), { items: [], nextCursor: null });
    });

    it('filters by holder, key prefix, namespace and class within a window, and by overlap with an instant', async () => {
      const revs = async (q: string) => {
        const r = await get(`/v1/grants?${q}&order=asc`, 'investigator');
        assert.equal(r.statusCode, 200, r.body);
        return r.json().items.map((i: { key: string; grantRevision: string; holder: string; spool?: string }) => `${i.key}#${i.grantRevision}`);
      };
      assert.deepEqual(await revs(`holder=h-a&${WINDOW}`), ['pay/acct-1#101', 'pay/acct-2#140', 'pay/acct-1#120']);
      assert.deepEqual(await revs(`keyPrefix=pay/&${WINDOW}`), [
        'pay/acct-1#101',
        'pay/acct-2#102',
        'pay/acct-2#140',
        'pay/acct-1#110',
        'pay/acct-1#120',
        'pay/acct-1#130',
      ]);
      assert.deepEqual(await revs(`namespace=cat&${WINDOW}`), ['cat/sku-1#103', 'cat/sku-1#0', 'cat/sku-1#150', 'cat/sku-1#160', 'cat/sku-2#0']);
      assert.deepEqual(await revs(`class=cache&from=${encodeURIComponent(iso(NOW - 4 * DAY))}&to=${encodeURIComponent(iso(NOW))}`), [
        'cat/sku-3#90',
        'cat/sku-1#103',
        'cat/sku-1#0',
        'cat/sku-1#150',
        'cat/sku-1#160',
        'cat/sku-2#0',
      ]);
      // Who held pay/acct-1 at T0+3 s? g2 (T0+1.5 s … T0+5.5 s).
      const at = encodeURIComponent(iso(T0 + 3000));
      assert.deepEqual(await revs(`key=pay/acct-1&from=${at}&to=${at}`), ['pay/acct-1#110']);
      // Unprotected grants carry token 0 and the flag.
      const u = (await get(`/v1/grants?key=cat/sku-2`, 'investigator')).json().items[0];
      assert.equal(u.unprotected, true);
      assert.equal(u.token, '0');
      assert.equal(u.endKind, null);
    });

    it('shows a replayed grant once (read with FINAL)', async () => {
      const r = await get('/v1/grants?key=pay/acct-1&limit=1000', 'investigator');
      assert.equal(r.json().items.filter((i: { grantRevision: string }) => i.grantRevision === '101').length, 1);
    });

    it('pages every grant exactly once while the tailer appends, ends and replays grants', async () => {
      const P = T0 - 30 * 60_000;
      const specs: GrantSpec[] = Array.from({ length: 40 }, (_, i) => ({
        cluster: i % 2 ? 'c2' : 'c1',
        key: `pg/k${i % 8}`,
        class: 'paging',
        holder: `h${i % 5}`,
        rev: 1000 + i,
        at: P + Math.floor(i / 3) * 1000, // ties on granted_at
        waitMs: i,
        ...(i % 4 === 0 ? {} : { end: { kind: 'release' as const, at: P + Math.floor(i / 3) * 1000 + 500, rev: 5000 + i } }),
      }));
      await store.insert(
        'grants',
        specs.map((s) => grantRows(s).open),
      ); // all open for now
      const seen: string[] = [];
      let cursor: string | null = null;
      let page = 0;
      const q = `namespace=pg&from=${encodeURIComponent(iso(P - 1000))}&limit=7`;
      do {
        const r = await get(`/v1/grants?${q}${cursor ? `&cursor=${cursor}` : ''}`, 'investigator');
        assert.equal(r.statusCode, 200, r.body);
        const body = r.json();
        for (const i of body.items) seen.push(`${i.cluster}/${i.key}#${i.grantRevision}`);
        cursor = body.nextCursor;
        // Between pages the tailer: ends grants, replays rows, and appends new grants.
        const closing = specs
          .slice(page * 6, page * 6 + 6)
          .map((s) => grantRows(s).closed)
          .filter((x): x is GrantRow => x !== undefined);
        await store.insert('grants', closing);
        await store.insert('grants', closing.slice(0, 2)); // replay
        const fresh: GrantSpec = { key: `pg/k${page}`, class: 'paging', holder: 'late', rev: 9000 + page, at: Date.now() };
        await store.insert('grants', [grantRows(fresh).open]);
        page += 1;
      } while (cursor && page < 50);
      const expected = specs.map((s) => `${s.cluster}/${s.key}#${s.rev}`);
      assert.equal(seen.length, expected.length, `served ${seen.length}: ${seen.join(' ')}`);
      assert.deepEqual([...seen].sort(), [...expected].sort());
      assert.equal(page, Math.ceil(40 / 7));
      // A new query (no cursor) sees the grants appended meanwhile.
      const fresh = await get(
        `/v1/grants?namespace=pg&holder=late&from=${encodeURIComponent(iso(P))}&to=${encodeURIComponent(iso(Date.now() + 60_000))}`,
        'investigator',
      );
      assert.equal(fresh.json().items.length, page);
    });

    it('serves grant history as an Arrow IPC stream another reader decodes: the JSON rows, uint64 tokens exact, the same pages', async () => {
      const token = tokenOf(G.g3 as GrantSpec);
      assert.ok(BigInt(token) > 2n ** 53n);
      const one = await get(`/v1/grants?token=${token}&format=arrow`, 'investigator');
      assert.equal(one.statusCode, 200, one.body);
      assert.equal(one.headers['content-type'], 'application/vnd.apache.arrow.stream');
      const t = tableFromIPC(one.rawPayload);
      assert.equal(t.numRows, 1);
      assert.ok(DataType.isInt(t.schema.fields.find((f) => f.name === 'token')?.type), 'token is an integer column');
      const tokenType = t.schema.fields.find((f) => f.name === 'token')?.type as { bitWidth: number; isSigned: boolean };
      assert.deepEqual([tokenType.bitWidth, tokenType.isSigned], [64, false]);
      assert.equal(t.getChild('token')?.get(0), BigInt(token)); // a bigint: exact above 2^53
      assert.equal(t.getChild('grantRevision')?.get(0), 120n);
      // No grant: still a stream a reader opens, with the schema and no rows.
      const none = await get('/v1/grants?token=18446744073709551615&format=arrow', 'investigator');
      assert.equal(none.statusCode, 200);
      const empty = tableFromIPC(none.rawPayload);
      assert.equal(empty.numRows, 0);
      assert.ok(empty.schema.fields.some((f) => f.name === 'token'));
      assert.equal(none.headers['x-next-cursor'], undefined);

      // Page by page, with the cursor in X-Next-Cursor: the same grants, in the same order, as JSON.
      const asJson = (row: Record<string, unknown>) => {
        const ms = (v: unknown) => (v === null ? null : new Date(Number(v)).toISOString());
        const big = (v: unknown) => (v === null ? null : String(v));
        return {
          cluster: row.cluster,
          key: row.key,
          grantRevision: big(row.grantRevision),
          token: big(row.token),
          holder: row.holder,
          class: row.class,
          namespace: row.namespace,
          grantedAt: ms(row.grantedAt),
          endedAt: ms(row.endedAt),
          endKind: row.endKind,
          endRevision: big(row.endRevision),
          waitMs: Number(row.waitMs),
          durationMs: row.durationMs === null ? null : Number(row.durationMs),
          unprotected: row.unprotected,
          origin: row.origin,
          timeline: Number(row.timeline),
          rolledBack: row.rolledBack,
          startKnown: row.startKnown,
          endedAtErrorMs: row.endedAtErrorMs === null ? null : Number(row.endedAtErrorMs),
        };
      };
      for (const q of [`keyPrefix=cat/&${WINDOW}`, `keyPrefix=pay/&${WINDOW}`, `holder=h-a&${WINDOW}`]) {
        const json = (await get(`/v1/grants?${q}&limit=1000`, 'investigator')).json().items;
        const arrow: unknown[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const r = await get(`/v1/grants?${q}&limit=2&format=arrow${cursor ? `&cursor=${cursor}` : ''}`, 'investigator');
          assert.equal(r.statusCode, 200, r.body);
          const table = tableFromIPC(r.rawPayload);
          assert.ok(table.numRows <= 2);
          for (const row of table) arrow.push(asJson(row.toJSON()));
          cursor = r.headers['x-next-cursor'] as string | undefined;
          pages += 1;
        } while (cursor && pages < 20);
        assert.ok(json.length > 2, q);
        assert.deepEqual(arrow, json, q);
        assert.equal(pages, Math.ceil(json.length / 2), q);
      }
      // Limits and cursors as for JSON; the read is recorded with its format.
      const big = await get('/v1/grants?key=pay/acct-1&limit=1001&format=arrow', 'investigator');
      assert.equal(big.json().error, 'LOCKAUDIT_ERR_LIMIT_PAGE_SIZE');
      assert.equal((await get('/v1/grants?key=pay/acct-1&format=arrow', 'auditor')).statusCode, 403);
      await get('/v1/grants?key=cat/sku-2&format=arrow', 'admin');
      const reads = await store.rows<{ format: string; filters: string }>(
        "SELECT format, filters FROM {db:Identifier}.grant_history_reads WHERE identity = 'root@corp' ORDER BY at DESC LIMIT 1",
      );
      assert.equal(reads[0]?.format, 'arrow');
      assert.equal(JSON.parse(reads[0]?.filters ?? '{}').key, 'cat/sku-2');
    });

    it('rejects a cursor of other filters, a forged cursor and a page size or window beyond the limits, naming them', async () => {
      const first = (await get(`/v1/grants?keyPrefix=pay/&${WINDOW}&limit=2`, 'investigator')).json();
      assert.ok(first.nextCursor);
      const other = await get(`/v1/grants?keyPrefix=cat/&${WINDOW}&limit=2&cursor=${first.nextCursor}`, 'investigator');
      assert.equal(other.statusCode, 400);
      assert.equal(other.json().error, 'LOCKAUDIT_ERR_REPORT_CURSOR');
      // A cursor keeps its order: a newest-first cursor never pages oldest first (it would serve the page again).
      const turned = await get(`/v1/grants?keyPrefix=pay/&${WINDOW}&limit=2&order=asc&cursor=${first.nextCursor}`, 'investigator');
      assert.equal(turned.statusCode, 400);
      assert.match(turned.json().message, /was issued for other filters/);
      const forged = Buffer.from(JSON.stringify([1, 0, 'c1', 'k', '99999999999999999999', '', 0, 'x'])).toString('base64url');
      for (const c of [forged, 'abc', Buffer.from('{"a":1}').toString('base64url')]) {
        const r = await get(`/v1/grants?keyPrefix=pay/&cursor=${c}`, 'investigator');
        assert.equal(r.statusCode, 400, `${c}: ${r.body}`);
        assert.match(r.json().message, /querystring\.cursor/);
      }
      const big = await get('/v1/grants?key=pay/acct-1&limit=1001', 'investigator');
      assert.equal(big.statusCode, 400);
      assert.equal(big.json().error, 'LOCKAUDIT_ERR_LIMIT_PAGE_SIZE');
      assert.match(big.json().message, /LOCKAUDIT_MAX_PAGE_SIZE \(1000\)/);
      const wide = await get(`/v1/grants?namespace=pay&from=${encodeURIComponent(iso(NOW - 40 * DAY))}&to=${encodeURIComponent(iso(NOW))}`, 'investigator');
      assert.equal(wide.statusCode, 400);
      assert.equal(wide.json().error, 'LOCKAUDIT_ERR_LIMIT_WINDOW');
      assert.match(wide.json().message, /LOCKAUDIT_MAX_WINDOW_DAYS \(31 days\)/);
      const inverted = await get(`/v1/grants?namespace=pay&from=${encodeURIComponent(iso(NOW))}&to=${encodeURIComponent(iso(NOW - DAY))}`, 'investigator');
      assert.equal(inverted.statusCode, 400);
    });

    it('records every read of grant history: who asked what, when', async () => {
      await get('/v1/grants?key=pay/acct-2&format=csv', 'admin');
      const reads = await store.rows<{ identity: string; token_id: string; filters: string; format: string }>(
        "SELECT identity, token_id, filters, format FROM {db:Identifier}.grant_history_reads WHERE identity = 'root@corp' ORDER BY at",
      );
      const last = reads[reads.length - 1];
      assert.ok(last);
      assert.equal(last.format, 'csv');
      assert.equal(JSON.parse(last.filters).key, 'pay/acct-2');
      assert.match(last.token_id, /^[0-9a-f]{12}$/);
      assert.ok(!last.filters.includes(tokens.admin as string));
      const ivy = await store.rows<{ n: string }>("SELECT count() AS n FROM {db:Identifier}.grant_history_reads WHERE identity = 'ivy@corp'");
      assert.ok(Number(ivy[0]?.n) >= 10);
    });
  });

  describe('contention', () => {
    it('computes per-namespace percentiles, handoff gaps, expiry ratio, hottest keys and the series (known answer)', async () => {
      const r = await get(`/v1/reports/contention?${WINDOW}&by=namespace&top=2`, 'investigator');
      assert.equal(r.statusCode, 200, r.body);
      const c = r.json();
      assert.deepEqual(c.groups, [
        // pay: waits 10,20,30,40,50,70 → ranks floor(p·6); holds 200,500,1000,2000,4000; handoffs g1→g2 500 ms, g5→g6 100 ms
        {
          group: 'pay',
          grants: 6,
          distinctHolders: 3,
          waitMs: { p50: 40, p95: 70, p99: 70 },
          holdMs: { p50: 1000, p99: 4000 },
          handoffGapMs: { p50: 500, p95: 500 },
          handoffs: 2,
          expiries: 1,
          expiryRatio: 1 / 6,
          forceReleases: 1,
        },
        // cat: waits 0,0,0,5,15; holds 100,1000,2000,2000; no release is followed by a grant of the same key
        {
          group: 'cat',
          grants: 5,
          distinctHolders: 3,
          waitMs: { p50: 0, p95: 15, p99: 15 },
          holdMs: { p50: 2000, p99: 2000 },
          handoffGapMs: { p50: null, p95: null },
          handoffs: 0,
          expiries: 1,
          expiryRatio: 0.2,
          forceReleases: 0,
        },
      ]);
      assert.deepEqual(c.hottestKeys, [
        { key: 'cat/sku-1', grants: 4, distinctHolders: 3, waitP95Ms: 15, expiries: 1, forceReleases: 0 },
        { key: 'pay/acct-1', grants: 4, distinctHolders: 3, waitP95Ms: 70, expiries: 1, forceReleases: 1 },
      ]);
      assert.equal(c.bucketSeconds, 60);
      // Bucket T0 holds g1–g11: waits 0,0,0,5,10,15,20,30,40,50,70 (n 11: ranks 5, 10, 10); the 9 ended holds
      // 100,200,500,1000,1000,2000,2000,2000,4000 (ranks 4, 8). Empty buckets: no percentiles (null), zero counts.
      const empty = { grants: 0, waitP95Ms: 0, waitMs: { p50: null, p95: null, p99: null }, holdMs: { p50: null, p99: null }, expiries: 0, forceReleases: 0 };
      assert.deepEqual(c.series, [
        { at: iso(T0 - 60_000), ...empty },
        { at: iso(T0), grants: 11, waitP95Ms: 70, waitMs: { p50: 15, p95: 70, p99: 70 }, holdMs: { p50: 1000, p99: 4000 }, expiries: 2, forceReleases: 1 },
        { at: iso(T0 + 60_000), ...empty },
      ]);
    });

    it('groups by key and by class, filtered', async () => {
      const byKey = (await get(`/v1/reports/contention?${WINDOW}&by=key&namespace=pay&top=5`, 'investigator')).json();
      assert.deepEqual(
        byKey.groups.map((g: { group: string; grants: number }) => [g.group, g.grants]),
        [
          ['pay/acct-1', 4],
          ['pay/acct-2', 2],
        ],
      );
      assert.deepEqual(byKey.groups[1].handoffGapMs, { p50: 100, p95: 100 });
      // Only the top keys get their own figures (contention.sql): the one kept still has all of them.
      const top1 = (await get(`/v1/reports/contention?${WINDOW}&by=key&namespace=pay&top=1`, 'investigator')).json();
      assert.deepEqual(top1.groups, [byKey.groups[0]]);
      assert.deepEqual(top1.hottestKeys, [byKey.hottestKeys[0]]);
      assert.deepEqual(top1.series, byKey.series);
      const byClass = (await get(`/v1/reports/contention?${WINDOW}&by=class&class=cache`, 'investigator')).json();
      assert.deepEqual(
        byClass.groups.map((g: { group: string; grants: number }) => [g.group, g.grants]),
        [['cache', 5]],
      );
    });
  });

  describe('advisory risk register', () => {
    const expectedRows = (date: string) => [
      {
        class: 'cache',
        namespace: 'cat',
        riskOwner: 'risk@corp',
        waiverExpires: addDays(TODAY, 90),
        daysLeft: 90 - dayDiff(date),
        status: 'ok',
        grants24h: 5,
        grants30d: 6,
        distinctKeys24h: 2,
        distinctKeys30d: 3,
        expiries24h: 1,
        expiries30d: 2,
        forceReleases24h: 0,
        forceReleases30d: 0,
        unprotected24h: 2,
        unprotected30d: 2,
        foreignGrants24h: 0,
        foreignGrants30d: 0,
        deleted24h: 0,
        deleted30d: 0,
      },
      // F: f1, f2 in 24 h; f3 in 30 d; f4 older; f5 granted before 30 d, deleted in them; f6 all before. A delete by hand is no expiry.
      {
        class: 'flags',
        namespace: 'cfg',
        riskOwner: 'flags-owner@corp',
        waiverExpires: addDays(TODAY, 10),
        daysLeft: 10 - dayDiff(date),
        status: 'expiring',
        grants24h: 2,
        grants30d: 3,
        distinctKeys24h: 1,
        distinctKeys30d: 2,
        expiries24h: 0,
        expiries30d: 0,
        forceReleases24h: 0,
        forceReleases30d: 0,
        unprotected24h: 0,
        unprotected30d: 0,
        foreignGrants24h: 1,
        foreignGrants30d: 2,
        deleted24h: 1,
        deleted30d: 3,
      },
      {
        class: 'report-gen',
        namespace: 'rep',
        riskOwner: 'report-gen-owner@corp',
        waiverExpires: addDays(TODAY, -5),
        daysLeft: -5 - dayDiff(date),
        status: 'expired',
        grants24h: 0,
        grants30d: 0,
        distinctKeys24h: 0,
        distinctKeys30d: 0,
        expiries24h: 0,
        expiries30d: 0,
        forceReleases24h: 0,
        forceReleases30d: 0,
        unprotected24h: 0,
        unprotected30d: 0,
        foreignGrants24h: 0,
        foreignGrants30d: 0,
        deleted24h: 0,
        deleted30d: 0,
      },
    ];
    const dayDiff = (date: string) => Math.round((Date.parse(date) - Date.parse(TODAY)) / DAY);

    it('builds one row per advisory class with owner, waiver, days left, status and 24 h / 30 d use (known answer)', async () => {
      const built = await buildRegister({ store, limits: config.reports }, NOW, 'UTC');
      assert.equal(built.date, TODAY);
      assert.deepEqual(built.classes, expectedRows(TODAY));
    });

    it('runs on demand, keeps every run, and serves JSON, CSV and HTML; a date without a register is 404', async () => {
      assert.equal((await get('/v1/reports/risk-register', 'auditor')).statusCode, 404);
      const run = await post('/v1/reports/risk-register/run', {}, 'auditor');
      assert.equal(run.statusCode, 201, run.body);
      const reg = run.json();
      assert.equal(reg.trigger, 'manual');
      assert.equal(reg.requestedBy, 'audrey@corp');
      assert.deepEqual(reg.classes, expectedRows(reg.date));
      // An older night's register stays readable by its date.
      await runRegister(
        { store, limits: config.reports },
        { runId: 'night-before', asOfMs: NOW - 2 * DAY, timeZone: 'UTC', trigger: 'schedule', requestedBy: 'scheduler' },
      );
      const older = await get(`/v1/reports/risk-register?date=${dateInZone(NOW - 2 * DAY, 'UTC')}`, 'auditor');
      assert.equal(older.statusCode, 200, older.body);
      assert.equal(older.json().runId, 'night-before');
      const latest = await get('/v1/reports/risk-register', 'auditor');
      assert.equal(latest.json().runId, reg.runId);
      assert.deepEqual(latest.json(), reg);
      const csv = await get(`/v1/reports/risk-register?date=${reg.date}&format=csv`, 'auditor');
      assert.match(String(csv.headers['content-type']), /^text\/csv/);
      const lines = csv.body.trim().split('\r\n');
      assert.equal(lines.length, 4);
      assert.equal(
        lines[0],
        'date,asOf,runId,class,namespace,riskOwner,waiverExpires,daysLeft,status,grants24h,grants30d,distinctKeys24h,distinctKeys30d,expiries24h,expiries30d,forceReleases24h,forceReleases30d,unprotected24h,unprotected30d,foreignGrants24h,foreignGrants30d,deleted24h,deleted30d',
      );
      assert.ok((lines[1] as string).includes(`,cache,cat,risk@corp,${addDays(TODAY, 90)},`));
      assert.ok((lines[1] as string).includes(',ok,5,6,2,3,1,2,0,0,2,2,'));
      assert.ok((lines[1] as string).endsWith(',ok,5,6,2,3,1,2,0,0,2,2,0,0,0,0'));
      assert.ok((lines[2] as string).endsWith(',expiring,2,3,1,2,0,0,0,0,0,0,1,2,1,3'), lines[2]);
      const html = await get(`/v1/reports/risk-register?date=${reg.date}&format=html`, 'admin');
      assert.match(String(html.headers['content-type']), /^text\/html/);
      assert.match(html.body, /<h1>Advisory risk register — \d{4}-\d{2}-\d{2}<\/h1>/);
      assert.match(html.body, /1 ok, 1 expiring within 30 days, 1 expired/);
      assert.match(html.body, /<th>Foreign grants 24 h<\/th><th>Foreign grants 30 d<\/th><th>Deleted by hand 24 h<\/th><th>Deleted by hand 30 d<\/th>/);
      assert.match(html.body, /<td>flags<\/td>.*<td class="n">1<\/td><td class="n">2<\/td><td class="n">1<\/td><td class="n">3<\/td><\/tr>/);
      assert.equal((await get('/v1/reports/risk-register?date=1999-01-01', 'auditor')).statusCode, 404);
    });
  });

  describe('unprotected grants', () => {
    it('lists grants issued without quorum with the protected grants that overlapped them (known answer), and records reconcile notes', async () => {
      const r = await get(`/v1/reports/unprotected?${WINDOW}`, 'lock-operator');
      assert.equal(r.statusCode, 200, r.body);
      const body = r.json();
      assert.equal(body.truncated, false);
      assert.deepEqual(
        body.items.map((i: { spoolId: string }) => i.spoolId),
        ['n1:000001', 'n1:000002'],
      );
      const [u8, u11] = body.items;
      // g8 held cat/sku-1 from T0+2 s to T0+3 s: g7 (T0+0.2…2.2 s) and g9 (T0+2.5…4.5 s) overlapped it; g10 (T0+5 s) did not.
      assert.deepEqual(
        u8.overlapping.map((g: { grantRevision: string; holder: string }) => [g.grantRevision, g.holder]),
        [
          ['103', 'h-d'],
          ['150', 'h-d'],
        ],
      );
      assert.equal(u8.overlapping[0].token, tokenOf(G.g7 as GrantSpec));
      assert.deepEqual(u11.overlapping, []);
      assert.equal(u11.endedAt, null);
      assert.equal(u8.reconciliation, null);
      assert.match(u8.id, /^[0-9a-f]{32}$/);

      const note = "checked: both wrote sku-1; cache rebuilt'; DROP TABLE grants; --";
      const rec = await post(`/v1/reports/unprotected/${u8.id}/reconcile`, { note }, 'lock-operator');
      assert.equal(rec.statusCode, 201, rec.body);
      assert.equal(rec.json().reconciledBy, 'ops@corp');
      assert.equal(rec.json().note, note);
      const again = await post(`/v1/reports/unprotected/${u8.id}/reconcile`, { note: 'second look: fine' }, 'admin');
      assert.equal(again.json().notes, 2);
      const after = (await get(`/v1/reports/unprotected?${WINDOW}`, 'investigator')).json();
      assert.equal(after.items[0].reconciliation.note, 'second look: fine');
      assert.equal(after.items[0].reconciliation.reconciledBy, 'root@corp');
      assert.equal(after.items[0].reconciliation.notes, 2);
      const kept = await store.rows<{ note: string; reconciled_by: string }>(
        'SELECT note, reconciled_by FROM {db:Identifier}.unprotected_reconciliations ORDER BY reconciled_at',
      );
      assert.deepEqual(kept, [
        { note, reconciled_by: 'ops@corp' },
        { note: 'second look: fine', reconciled_by: 'root@corp' },
      ]);
      const missing = await post(`/v1/reports/unprotected/${'0'.repeat(32)}/reconcile`, { note: 'x' }, 'lock-operator');
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.json().error, 'LOCKAUDIT_ERR_REPORT_NOT_FOUND');
    });
  });

  describe('access', () => {
    const routes: Array<{ name: string; call: (who?: keyof typeof tokens) => ReturnType<typeof get>; allowed: Array<keyof typeof tokens> }> = [
      { name: 'GET /v1/grants', call: (w) => get('/v1/grants?key=pay/acct-1', w), allowed: ['investigator', 'admin'] },
      { name: 'GET /v1/reports/contention', call: (w) => get(`/v1/reports/contention?${WINDOW}`, w), allowed: ['investigator', 'admin'] },
      { name: 'GET /v1/reports/risk-register', call: (w) => get('/v1/reports/risk-register?date=1999-01-01', w), allowed: ['auditor', 'admin'] },
      { name: 'POST /v1/reports/risk-register/run', call: (w) => post('/v1/reports/risk-register/run', {}, w), allowed: ['auditor', 'admin'] },
      { name: 'GET /v1/reports/unprotected', call: (w) => get(`/v1/reports/unprotected?${WINDOW}`, w), allowed: ['lock-operator', 'investigator', 'admin'] },
      {
        name: 'POST …/reconcile',
        call: (w) => post(`/v1/reports/unprotected/${'f'.repeat(32)}/reconcile`, { note: 'n' }, w),
        allowed: ['lock-operator', 'admin'],
      },
    ];
    for (const route of routes) {
      it(`${route.name}: only ${route.allowed.join(', ')}`, async () => {
        for (const who of ['investigator', 'auditor', 'lock-operator', 'admin', 'client'] as const) {
          const r = await route.call(who);
          if (route.allowed.includes(who)) assert.ok(r.statusCode !== 401 && r.statusCode !== 403, `${who}: ${r.statusCode} ${r.body}`);
          else {
            assert.equal(r.statusCode, 403, `${who}: ${r.body}`);
            assert.equal(r.json().error, 'LOCKAUDIT_ERR_AUTH_FORBIDDEN');
          }
        }
        const anon = await route.call();
        assert.equal(anon.statusCode, 401);
      });
    }

    it('answers the same whether or not the thing exists, and before looking at the input', async () => {
      const [existing] = (await get(`/v1/reports/unprotected?${WINDOW}`, 'admin')).json().items;
      const pairs: Array<[string, string]> = [
        [`/v1/reports/unprotected/${existing.id}/reconcile`, `/v1/reports/unprotected/${'0'.repeat(32)}/reconcile`],
        [`/v1/reports/unprotected/${existing.id}/reconcile`, '/v1/reports/unprotected/not-an-id/reconcile'],
      ];
      for (const [a, b] of pairs) {
        for (const who of ['investigator', undefined] as const) {
          const ra = await post(a, { note: 'n' }, who);
          const rb = await post(b, { bad: 1 }, who);
          assert.equal(ra.statusCode, who ? 403 : 401);
          assert.equal(ra.statusCode, rb.statusCode);
          assert.equal(ra.body, rb.body);
        }
      }
      const date = (await get('/v1/reports/risk-register', 'admin')).json().date;
      const ra = await get(`/v1/reports/risk-register?date=${date}`, 'investigator');
      const rb = await get('/v1/reports/risk-register?date=1999-01-01', 'investigator');
      assert.equal(ra.statusCode, 403);
      assert.equal(ra.body, rb.body);
      const ga = await get('/v1/grants?key=pay/acct-1', 'auditor');
      const gb = await get('/v1/grants?key=no/such-key', 'auditor');
      assert.equal(ga.body, gb.body);
    });
  });

  describe('bad input', () => {
    const hostile = [
      "' OR 1=1 --",
      "x'; DROP TABLE grants; --",
      '{db:Identifier}',
      'a\u0000b',
      '../../etc/passwd',
      '<script>alert(1)</script>',
      'pay/acct-1) OR (1=1',
      '%27%20OR%201%3D1',
      '-1',
      ' ',
      '1;SELECT 1',
    ];
    const cases: Array<[string, string[], keyof typeof tokens]> = [
      ['/v1/grants', ['key', 'keyPrefix', 'holder', 'class', 'namespace', 'token', 'from', 'to', 'cursor', 'limit', 'format', 'unknownField'], 'investigator'],
      ['/v1/reports/contention', ['from', 'to', 'namespace', 'class', 'by', 'top'], 'investigator'],
      ['/v1/reports/unprotected', ['from', 'to'], 'lock-operator'],
      ['/v1/reports/risk-register', ['date', 'format'], 'auditor'],
    ];
    for (const [path, fields, who] of cases) {
      it(`${path}: injection strings in every filter are a 400 naming the field, never a 500`, async () => {
        for (const field of fields) {
          for (const value of hostile) {
            const r = await get(`${path}?${field}=${encodeURIComponent(value)}`, who);
            assert.equal(r.statusCode, 400, `${field}=${JSON.stringify(value)}: ${r.statusCode} ${r.body}`);
            assert.match(r.json().message, new RegExp(`querystring\\.${field}`), `${field}=${JSON.stringify(value)}: ${r.body}`);
          }
        }
        const still = await store.rows<{ n: string }>("SELECT count() AS n FROM system.tables WHERE database = {db:String} AND name = 'grants'", {
          db: store.database,
        });
        assert.deepEqual(still, [{ n: '1' }]);
      });
    }

    it('rejects a token above 2^64, a bad reconcile body and a bad id', async () => {
      const t = await get('/v1/grants?token=18446744073709551616', 'investigator');
      assert.equal(t.statusCode, 400);
      assert.match(t.json().message, /querystring\.token/);
      const ok = `/v1/reports/unprotected/${'a'.repeat(32)}/reconcile`;
      for (const body of [{}, { note: '' }, { note: 5 }, { note: 'x', extra: 1 }, { note: 'x'.repeat(4001) }]) {
        const r = await post(ok, body, 'lock-operator');
        assert.equal(r.statusCode, 400, `${JSON.stringify(body)}: ${r.body}`);
        assert.match(r.json().message, /body/);
      }
      for (const id of ["1' OR '1'='1", 'A'.repeat(32), 'abc']) {
        const r = await post(`/v1/reports/unprotected/${encodeURIComponent(id)}/reconcile`, { note: 'x' }, 'lock-operator');
        assert.equal(r.statusCode, 400, `${id}: ${r.body}`);
        assert.match(r.json().message, /params\.id/);
      }
    });
  });

  describe('limits', () => {
    it('rate-limits report calls per identity with a 429 naming the limit', async () => {
      const limited = await buildApp(ctxFor(testConfig({ LOCKAUDIT_RATE_LIMIT_PER_MINUTE: '3' })), [grantRoutes, reportRoutes]);
      try {
        const codes: number[] = [];
        for (let i = 0; i < 4; i++) codes.push((await get('/v1/grants?key=pay/acct-1', 'investigator', limited)).statusCode);
        assert.deepEqual(codes, [200, 200, 200, 429]);
        const r = await get(`/v1/reports/contention?${WINDOW}`, 'investigator', limited); // one budget across report routes
        assert.equal(r.statusCode, 429);
        assert.equal(r.json().error, 'LOCKAUDIT_ERR_LIMIT_RATE');
        assert.match(r.json().message, /LOCKAUDIT_RATE_LIMIT_PER_MINUTE \(3\)/);
        assert.ok(Number(r.headers['retry-after']) >= 1);
        // Another identity has its own budget.
        assert.equal((await get('/v1/grants?key=pay/acct-1', 'admin', limited)).statusCode, 200);
      } finally {
        await limited.close();
      }
    });

    it('stops a query at LOCKAUDIT_QUERY_TIMEOUT_MS and says so (400)', async () => {
      const slow = parseSql(
        'test/slow.sql',
        '-- A deliberately slow query.\n-- Parameters: {n:UInt64}\nSELECT max(sleepEachRow(0.001)) AS m FROM numbers({n:UInt64}) SETTINGS max_block_size = 10',
      );
      await assert.rejects(reportRows({ store, limits: { ...config.reports, queryTimeoutMs: 200 } }, slow, { n: 5000 }), (err) => {
        assert.ok(isLockauditError(err, 'LOCKAUDIT_ERR_LIMIT_QUERY_TIMEOUT'));
        assert.equal(err.status, 400);
        assert.match(err.message, /LOCKAUDIT_QUERY_TIMEOUT_MS \(200 ms\)/);
        return true;
      });
    });
  });

  it('documents every report route in OpenAPI at /docs, with examples', async () => {
    const doc = (await get('/docs/json')).json();
    const ops: Array<[string, string]> = [
      ['/v1/grants', 'get'],
      ['/v1/reports/risk-register', 'get'],
      ['/v1/reports/risk-register/run', 'post'],
      ['/v1/reports/contention', 'get'],
      ['/v1/reports/unprotected', 'get'],
      ['/v1/reports/unprotected/{id}/reconcile', 'post'],
    ];
    for (const [path, method] of ops) {
      const op = doc.paths[path]?.[method];
      assert.ok(op, `${method} ${path} missing from ${Object.keys(doc.paths).join(', ')}`);
      assert.ok(op.summary && op.description, `${path}: summary/description`);
      const ok = op.responses['200'] ?? op.responses['201'];
      assert.match(JSON.stringify(ok), /"example/, `${path}: success response without example`);
      assert.ok(op.responses['401'] && op.responses['403'] && op.responses['400'] && op.responses['429'], `${path}: error responses`);
    }
    assert.ok(doc.paths['/v1/grants'].get.responses['200'].content['text/csv'], 'CSV documented');
    assert.ok(doc.paths['/v1/reports/risk-register'].get.responses['200'].content['text/html'], 'HTML documented');
    assert.ok(
      doc.paths['/v1/grants'].get.parameters.some(
        (p: { name: string; example?: unknown; examples?: unknown; schema?: { examples?: unknown } }) =>
          p.name === 'key' && (p.example ?? p.examples ?? p.schema?.examples),
      ),
    );
    assert.ok((await get('/docs')).statusCode < 400);
  });
});
