// GET /v1/quarantine (issue 11, defect 8): quarantined changes with revision,
// key, reason and the raw value, by cluster and time, paged; auditor and
// investigator only; every read recorded.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { buildApp, type App } from '../../api/app.js';
import { quarantineRoutes } from '../../api/routes/quarantine.js';
import { tailerRoutes } from '../../api/routes/tailers.js';
import { grantRoutes } from '../../api/routes/grants.js';
import { reportRoutes } from '../../api/routes/reports.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { HealthState } from '../../platform/health.js';
import { QUARANTINE_PAGE_BYTES, QUARANTINE_VALUE_BYTES } from '../../reports/quarantine/index.js';
import { tempStore, testConfig } from '../support/env.js';

const T0 = Date.now() - 60_000;
const BAD = '{"holder":"x","session":"1","class":"c","epoch":70000,"waitMs":1e21,"at":0}';
let store: AuditStore;
let closeStore: () => Promise<void>;
let app: App;
const tokens: Record<string, string> = {};

before(async () => {
  ({ store, close: closeStore } = await tempStore());
  await store.insert('quarantine', [
    { cluster: 'qa', revision: '18446744073709551000', key: '/l/pay/acct-1', op: 'put', value: BAD, reason: 'decode: waitMs out of range', at: T0 },
    { cluster: 'qa', revision: '12', key: '/l/pay/acct-2', op: 'put', value: 'not json', reason: 'decode: not JSON', at: T0 + 1_000 },
    { cluster: 'qb', revision: '7', key: '/l/pay/acct-3', op: 'put', value: '{}', reason: 'decode: missing holder', at: T0 + 2_000 },
  ]);
  // Captured clusters (a tailer wrote their checkpoints): a filter naming any other is a 400.
  await store.insert('checkpoints', [
    { cluster: 'qa', revision: '20', leader: 't' },
    { cluster: 'qb', revision: '20', leader: 't' },
  ]);
  app = await buildApp(
    { config: testConfig(), logger: createLogger('warn'), store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: new Registry() },
    [quarantineRoutes, tailerRoutes, grantRoutes, reportRoutes],
  );
  for (const [name, roles] of [
    ['auditor', ['auditor']],
    ['investigator', ['investigator']],
    ['client', ['client']],
    ['operator', ['lock-operator']],
  ] as const) {
    tokens[name] = (await createApiToken(store, `${name}@q`, [...roles])).token;
  }
});
after(async () => {
  await app?.close();
  await closeStore?.();
});

const get = (url: string, who: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${tokens[who]}` } });

describe('GET /v1/quarantine', () => {
  it('lists revision, key, reason and the raw value, oldest first, filtered by cluster, paged by cursor', async () => {
    const all = await get('/v1/quarantine', 'auditor');
    assert.equal(all.statusCode, 200, all.body);
    const items = (all.json() as { items: Array<Record<string, string>> }).items;
    assert.deepEqual(
      items.map((i) => [i.cluster, i.revision, i.key]),
      [
        ['qa', '18446744073709551000', '/l/pay/acct-1'],
        ['qa', '12', '/l/pay/acct-2'],
        ['qb', '7', '/l/pay/acct-3'],
      ],
    );
    assert.equal(items[0]?.value, BAD, 'the raw value, as etcd held it');
    assert.equal(items[0]?.reason, 'decode: waitMs out of range');
    assert.ok(all.body.includes('"revision":"18446744073709551000"'), 'a 64-bit revision as a decimal string');

    const qb = await get('/v1/quarantine?cluster=qb', 'investigator');
    assert.deepEqual(
      (qb.json() as { items: Array<{ key: string }> }).items.map((i) => i.key),
      ['/l/pay/acct-3'],
    );
    const window = await get(`/v1/quarantine?from=${new Date(T0 + 500).toISOString()}&to=${new Date(T0 + 1_500).toISOString()}`, 'auditor');
    assert.deepEqual(
      (window.json() as { items: Array<{ key: string }> }).items.map((i) => i.key),
      ['/l/pay/acct-2'],
    );

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await get(`/v1/quarantine?limit=1${cursor ? `&cursor=${cursor}` : ''}`, 'auditor');
      assert.equal(res.statusCode, 200, res.body);
      const page = res.json() as { items: Array<{ key: string }>; nextCursor: string | null };
      seen.push(...page.items.map((i) => i.key));
      cursor = page.nextCursor;
    } while (cursor);
    assert.deepEqual(seen, ['/l/pay/acct-1', '/l/pay/acct-2', '/l/pay/acct-3'], 'every change once, in order');
  });

  it('refuses a hand-made cursor (it would carry its own window past LOCKAUDIT_MAX_WINDOW_DAYS) and a cursor of other filters', async () => {
    // The window from the epoch to now: far wider than any page could be asked for.
    const wide = await get(`/v1/quarantine?from=1970-01-01T00:00:00Z&to=${new Date().toISOString()}`, 'auditor');
    assert.equal(wide.statusCode, 400, 'the window limit holds for a request');
    const handMade = Buffer.from(JSON.stringify({ fromMs: 0, toMs: Date.now(), atMs: 0, cluster: '', revision: '0', key: '' })).toString('base64url');
    const forged = await get(`/v1/quarantine?cursor=${handMade}`, 'auditor');
    assert.equal(forged.statusCode, 400, `a hand-made cursor is refused, not served: ${forged.body}`);
    assert.match(forged.json().message, /querystring\.cursor: is not a cursor this API issued/);
    const first = (await get('/v1/quarantine?limit=1&cluster=qa', 'auditor')).json() as { nextCursor: string };
    assert.ok(first.nextCursor);
    const other = await get(`/v1/quarantine?limit=1&cluster=qb&cursor=${first.nextCursor}`, 'auditor');
    assert.equal(other.statusCode, 400);
    assert.match(other.json().message, /querystring\.cursor: was issued for other filters/);
    const edited = `${first.nextCursor.slice(0, 5)}${first.nextCursor[5] === 'A' ? 'B' : 'A'}${first.nextCursor.slice(6)}`;
    assert.equal((await get(`/v1/quarantine?limit=1&cluster=qa&cursor=${edited}`, 'auditor')).statusCode, 400);
  });

  it('answers the auditor and investigator roles only, names bad fields, and records every read', async () => {
    assert.equal((await get('/v1/quarantine', 'client')).statusCode, 403);
    assert.equal((await get('/v1/quarantine', 'operator')).statusCode, 403);
    assert.equal((await app.inject({ method: 'GET', url: '/v1/quarantine' })).statusCode, 401);
    const bad = await get('/v1/quarantine?limit=0', 'auditor');
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /limit/);
    assert.equal((await get('/v1/quarantine?cursor=AAAA', 'auditor')).statusCode, 400);
    // A cluster no tailer captured (a typo) is named, not answered with an empty page that reads as "nothing" (before: 200, []).
    for (const route of ['/v1/quarantine', '/v1/gaps']) {
      const typo = await get(`${route}?cluster=qz`, 'auditor');
      assert.equal(typo.statusCode, 400, `${route}: ${typo.body}`);
      assert.match(typo.json().message, /querystring\.cluster: no etcd cluster named "qz" is configured or captured/);
      assert.equal((await get(`${route}?cluster=qa`, 'auditor')).statusCode, 200, route);
    }
    // And on grant history, the key timeline and the tailer lag (before: 200 and an empty answer; investigator review).
    for (const route of ['/v1/grants?key=pay/acct-1&', '/v1/reports/timeline?key=pay/acct-1&', '/v1/tailers/lag?']) {
      const typo = await get(`${route}cluster=qz`, 'investigator');
      assert.equal(typo.statusCode, 400, `${route}: ${typo.body}`);
      assert.match(typo.json().message, /querystring\.cluster: no etcd cluster named "qz" is configured or captured/);
      assert.equal((await get(`${route}cluster=qa`, 'investigator')).statusCode, 200, route);
    }
    const reads = await store.rows<{ identity: string; format: string }>(
      "SELECT identity, format FROM {db:Identifier}.grant_history_reads WHERE format = 'quarantine'",
    );
    assert.ok(reads.some((r) => r.identity === 'auditor@q'));
    assert.ok(reads.some((r) => r.identity === 'investigator@q'));
  });
});

describe('GET /v1/quarantine: bounded whatever etcd held', () => {
  it("answers a value's first bytes with its size and sha256, and shortens a page rather than growing it", async () => {
    // 30 values of 1 MiB, as an insider can put under the keyspace (etcd takes up to 1.5 MiB): the store keeps them whole.
    const big = (i: number): string => `${String(i).padStart(4, '0')}${'x'.repeat(1_048_576 - 4)}`;
    for (let i = 0; i < 30; i += 1) {
      await store.insert('quarantine', [
        { cluster: 'qa', revision: String(1_000 + i), key: `/l/pay/big-${i}`, op: 'put', value: big(i), reason: 'decode: not JSON', at: T0 + 10_000 + i },
      ]);
    }
    const from = new Date(T0 + 9_000).toISOString();
    const seen: Array<{ key: string; value: string; valueBytes: number; valueSha256: string; valueTruncated: boolean }> = [];
    let url = `/v1/quarantine?cluster=qa&from=${from}&limit=1000`;
    let pages = 0;
    for (;;) {
      const res = await get(url, 'auditor');
      assert.equal(res.statusCode, 200, res.body.slice(0, 300));
      assert.ok(res.body.length <= QUARANTINE_PAGE_BYTES + 65_536, `a page of ${res.body.length} bytes`);
      const body = res.json() as { items: typeof seen; nextCursor: string | null };
      seen.push(...body.items);
      pages += 1;
      if (!body.nextCursor) break;
      url = `/v1/quarantine?cluster=qa&from=${from}&limit=1000&cursor=${body.nextCursor}`;
    }
    assert.equal(pages, 1, 'thirty first bytes fit one page');
    assert.deepEqual(
      seen.map((s) => s.key),
      Array.from({ length: 30 }, (_, i) => `/l/pay/big-${i}`),
      'every one, once, in order',
    );
    for (const [i, s] of seen.entries()) {
      assert.equal(s.valueBytes, 1_048_576);
      assert.equal(s.valueTruncated, true);
      assert.equal(s.value, big(i).slice(0, QUARANTINE_VALUE_BYTES));
      assert.equal(s.valueSha256, createHash('sha256').update(big(i)).digest('hex'));
    }
    // 300 more of 8 KiB: their first bytes pass a page's bound, so the page stops short with a cursor.
    await store.insert('checkpoints', [{ cluster: 'qc', revision: '20', leader: 't' }]);
    for (let i = 0; i < 300; i += 1) {
      await store.insert('quarantine', [
        {
          cluster: 'qc',
          revision: String(5_000 + i),
          key: `/l/pay/mid-${i}`,
          op: 'put',
          value: 'y'.repeat(8_192),
          reason: 'decode: not JSON',
          at: T0 + 20_000 + i,
        },
      ]);
    }
    const first = await get(`/v1/quarantine?cluster=qc&from=${from}&limit=1000`, 'auditor');
    const firstBody = first.json() as { items: typeof seen; nextCursor: string | null };
    assert.ok(first.body.length <= QUARANTINE_PAGE_BYTES + 65_536, `a page of ${first.body.length} bytes`);
    assert.ok(firstBody.items.length < 300 && firstBody.nextCursor, `cut short at ${firstBody.items.length} with a cursor`);
    const rest = (await get(`/v1/quarantine?cluster=qc&from=${from}&limit=1000&cursor=${firstBody.nextCursor}`, 'auditor')).json() as {
      items: typeof seen;
      nextCursor: string | null;
    };
    assert.equal(firstBody.items.length + rest.items.length, 300);
    assert.equal(rest.nextCursor, null);
    // A small value is whole, and says so.
    const small = (await get('/v1/quarantine?cluster=qb', 'auditor')).json() as { items: typeof seen };
    assert.deepEqual(
      small.items.map((s) => [s.value, s.valueBytes, s.valueTruncated]),
      [['{}', 2, false]],
    );
  });
});
