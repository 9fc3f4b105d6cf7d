// GET /v1/quarantine (issue 11, defect 8): quarantined changes with revision,
// key, reason and the raw value, by cluster and time, paged; auditor and
// investigator only; every read recorded.
import assert from 'node:assert/strict';
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
  await store.insert('checkpoints', [{ cluster: 'qa', revision: '20', leader: 't' }, { cluster: 'qb', revision: '20', leader: 't' }]);
  app = await buildApp({ config: testConfig(), logger: createLogger('warn'), store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: new Registry() }, [quarantineRoutes, tailerRoutes, grantRoutes, reportRoutes]);
  for (const [name, roles] of [['auditor', ['auditor']], ['investigator', ['investigator']], ['client', ['client']], ['operator', ['lock-operator']]] as const) {
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
    assert.deepEqual(items.map((i) => [i.cluster, i.revision, i.key]), [['qa', '18446744073709551000', '/l/pay/acct-1'], ['qa', '12', '/l/pay/acct-2'], ['qb', '7', '/l/pay/acct-3']]);
    assert.equal(items[0]?.value, BAD, 'the raw value, as etcd held it');
    assert.equal(items[0]?.reason, 'decode: waitMs out of range');
    assert.ok(all.body.includes('"revision":"18446744073709551000"'), 'a 64-bit revision as a decimal string');

    const qb = await get('/v1/quarantine?cluster=qb', 'investigator');
    assert.deepEqual((qb.json() as { items: Array<{ key: string }> }).items.map((i) => i.key), ['/l/pay/acct-3']);
    const window = await get(`/v1/quarantine?from=${new Date(T0 + 500).toISOString()}&to=${new Date(T0 + 1_500).toISOString()}`, 'auditor');
    assert.deepEqual((window.json() as { items: Array<{ key: string }> }).items.map((i) => i.key), ['/l/pay/acct-2']);

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
    const reads = await store.rows<{ identity: string; format: string }>("SELECT identity, format FROM {db:Identifier}.grant_history_reads WHERE format = 'quarantine'");
    assert.ok(reads.some((r) => r.identity === 'auditor@q'));
    assert.ok(reads.some((r) => r.identity === 'investigator@q'));
  });
});
