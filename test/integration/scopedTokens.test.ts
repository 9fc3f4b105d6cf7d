// Read access scoped to namespaces and clusters (issue 44 item 1), through the
// API against the real store: two scoped investigator tokens and an unscoped
// one over the same grants. A scoped token reads only its scope's grants (JSON,
// CSV, Arrow, a token lookup); a namespace, key, key prefix or cluster outside
// it is a 403 naming the field and the scope, never an empty page; a request
// that pins nothing is narrowed and says so; a cursor pages only under the
// scope that made it; a route that does not serve scoped tokens refuses them,
// and cluster-wide health stays readable. Tokens show their scope.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { tableFromIPC } from 'apache-arrow';
import { buildApp, type App } from '../../api/app.js';
import { grantRoutes } from '../../api/routes/grants.js';
import { quarantineRoutes } from '../../api/routes/quarantine.js';
import { reportRoutes } from '../../api/routes/reports.js';
import { stateRoutes } from '../../api/routes/state.js';
import { tailerRoutes } from '../../api/routes/tailers.js';
import { twoPersonLogRoutes } from '../../api/routes/twoPersonLog.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { HealthState } from '../../platform/health.js';
import { tokenKey } from '../../reports/grantHistory/index.js';
import type { GrantRow } from '../../tailer/types.js';
import { tempStore, testConfig } from '../support/env.js';
import { advisoryClass, classEvent, grantRows, tokenOf, type GrantSpec } from '../support/grants.js';

const T0 = Date.now() - 3_600_000;
const G: GrantSpec[] = [
  { cluster: 'c1', key: 'payments/acct-1', class: 'ledger', holder: 'pay-1', rev: 101, at: T0 + 1_000, end: { kind: 'release', at: T0 + 2_000, rev: 102 } },
  { cluster: 'c1', key: 'payments/acct-2', class: 'ledger', holder: 'pay-2', rev: 103, at: T0 + 3_000 },
  { cluster: 'c1', key: 'billing/run', class: 'batch', holder: 'bill-1', rev: 104, at: T0 + 4_000 },
  { cluster: 'c1', key: 'hr/payroll', class: 'batch', holder: 'hr-1', rev: 105, at: T0 + 5_000 },
  { cluster: 'c2', key: 'payments/acct-9', class: 'ledger', holder: 'pay-9', rev: 201, at: T0 + 6_000 },
  { cluster: 'c1', key: 'payroll-x/run', class: 'batch', holder: 'px-1', rev: 106, at: T0 + 7_000 },
  { cluster: 'c2', key: 'payments/acct-1', class: 'ledger', holder: 'pay-1b', rev: 202, at: T0 + 8_000 },
];

interface Page {
  items: { key: string; cluster: string; token: string }[];
  nextCursor: string | null;
  narrowedTo?: { namespaces: string[]; clusters: string[] };
}

describe('tokens scoped to namespaces and clusters', () => {
  let app: App;
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let admin: string;
  let everything: string;
  let payments: string;
  let paymentsBillingC1: string;

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    await store.insert(
      'grants',
      G.map((g) => grantRows(g).open),
    );
    await store.insert(
      'grants',
      G.map((g) => grantRows(g).closed).filter((r): r is GrantRow => r !== undefined),
    );
    await store.insert('checkpoints', [
      { cluster: 'c1', revision: '300', leader: 't' },
      { cluster: 'c2', revision: '300', leader: 't' },
    ]);
    app = await buildApp(
      {
        config: testConfig(),
        logger: createLogger('silent'),
        store,
        verifier: new ApiTokenVerifier(store),
        health: new HealthState(),
        metrics: createMetricsRegistry(),
      },
      [tailerRoutes, grantRoutes, reportRoutes, quarantineRoutes, stateRoutes, twoPersonLogRoutes],
    );
    admin = (await createApiToken(store, 'root@corp', ['admin'])).token;
    everything = (await createApiToken(store, 'ivy@corp', ['investigator'])).token;
    const scoped = async (identity: string, body: object): Promise<string> => {
      const res = await call('POST', '/v1/tokens', admin, { identity, roles: ['investigator'], ...body });
      assert.equal(res.statusCode, 201, res.body);
      return (res.json() as { token: string }).token;
    };
    payments = await scoped('pat@payments', { namespaces: ['payments'] });
    paymentsBillingC1 = await scoped('bo@finance', { namespaces: ['payments', 'billing'], clusters: ['c1'] });
  });
  after(async () => {
    await app.close();
    await closeStore();
  });

  const call = (method: 'GET' | 'POST', url: string, token: string, body?: unknown) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(body === undefined ? {} : { payload: body as object }) });
  /** An auditor token made through the API, with `scope` (namespaces, clusters) when given. */
  const auditorToken = async (identity: string, scope: object): Promise<string> =>
    ((await call('POST', '/v1/tokens', admin, { identity, roles: ['auditor'], ...scope })).json() as { token: string }).token;
  const page = async (token: string, query: string): Promise<Page> => {
    const res = await call('GET', `/v1/grants?${query}`, token);
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as Page;
  };
  const keys = (p: Page): string[] => p.items.map((g) => `${g.cluster}:${g.key}`).sort();
  const refused = async (token: string, url: string, field: RegExp, scope: RegExp) => {
    const res = await call('GET', url, token);
    assert.equal(res.statusCode, 403, `${url}: ${res.body}`);
    const body = res.json() as { error: string; message: string };
    assert.equal(body.error, 'LOCKAUDIT_ERR_AUTH_SCOPE', url);
    assert.match(body.message, field, url);
    assert.match(body.message, scope, url);
  };

  it('each token reads its scope of the grant history, and says when it narrowed the request', async () => {
    const all = await page(everything, 'order=asc');
    assert.equal(all.items.length, G.length);
    assert.equal(all.narrowedTo, undefined);

    const pay = await page(payments, 'order=asc');
    assert.deepEqual(keys(pay), ['c1:payments/acct-1', 'c1:payments/acct-2', 'c2:payments/acct-1', 'c2:payments/acct-9']);
    assert.deepEqual(pay.narrowedTo, { namespaces: ['payments'], clusters: [] });

    const fin = await page(paymentsBillingC1, 'order=asc');
    assert.deepEqual(keys(fin), ['c1:billing/run', 'c1:payments/acct-1', 'c1:payments/acct-2']);
    assert.deepEqual(fin.narrowedTo, { namespaces: ['billing', 'payments'], clusters: ['c1'] });

    // Pinned inside the scope: nothing narrowed (the cluster side still is for a cluster-scoped token).
    assert.equal((await page(payments, 'namespace=payments')).narrowedTo, undefined);
    assert.equal((await page(payments, `key=${encodeURIComponent('payments/acct-1')}`)).items.length, 2);
    assert.equal((await page(paymentsBillingC1, `key=${encodeURIComponent('payments/acct-1')}`)).items.length, 1);
    assert.equal((await page(payments, `keyPrefix=${encodeURIComponent('payments/')}`)).narrowedTo, undefined);
    assert.deepEqual((await page(paymentsBillingC1, 'namespace=billing')).narrowedTo, { namespaces: [], clusters: ['c1'] });
    assert.equal((await page(paymentsBillingC1, 'namespace=billing&cluster=c1')).narrowedTo, undefined);
    // A prefix that spans namespaces ("pay": payments and payroll-x) reads the scope's part and says so.
    const spanning = await page(payments, 'keyPrefix=pay');
    assert.deepEqual(keys(spanning), ['c1:payments/acct-1', 'c1:payments/acct-2', 'c2:payments/acct-1', 'c2:payments/acct-9']);
    assert.deepEqual(spanning.narrowedTo, { namespaces: ['payments'], clusters: [] });
    assert.equal((await page(everything, 'keyPrefix=pay')).items.length, 5);
  });

  it('a namespace, key, key prefix or cluster outside the scope is a 403 naming the field and the scope', async () => {
    await refused(payments, '/v1/grants?namespace=hr', /querystring\.namespace: namespace hr/, /namespaces payments/);
    await refused(payments, `/v1/grants?key=${encodeURIComponent('hr/payroll')}`, /querystring\.key: namespace hr/, /namespaces payments/);
    await refused(payments, `/v1/grants?keyPrefix=${encodeURIComponent('hr/pay')}`, /querystring\.keyPrefix: namespace hr/, /namespaces payments/);
    await refused(paymentsBillingC1, '/v1/grants?cluster=c2', /querystring\.cluster: cluster c2/, /namespaces billing, payments and clusters c1/);
    // Before the cluster is looked up: an unknown cluster is outside the scope too, not a 400 that tells it apart.
    await refused(paymentsBillingC1, '/v1/grants?cluster=nosuch', /querystring\.cluster/, /clusters c1/);
    await refused(payments, '/v1/grants?namespace=hr&format=csv', /querystring\.namespace/, /payments/);
    // The unscoped token reads them.
    assert.equal((await page(everything, 'namespace=hr')).items.length, 1);
  });

  it("a token lookup finds only the scope's grants, and says it looked within the scope", async () => {
    const hr = G[3] as GrantSpec;
    const pay = G[0] as GrantSpec;
    assert.equal((await page(everything, `token=${tokenOf(hr)}`)).items.length, 1);
    const hidden = await page(payments, `token=${tokenOf(hr)}`);
    assert.deepEqual(hidden.items, []);
    assert.deepEqual(hidden.narrowedTo, { namespaces: ['payments'], clusters: [] });
    assert.deepEqual(
      (await page(payments, `token=${tokenOf(pay)}`)).items.map((g) => g.key),
      ['payments/acct-1'],
    );
  });

  it('CSV and Arrow pages carry the same scope, with the narrowing in a header', async () => {
    const csv = await call('GET', '/v1/grants?format=csv&order=asc', payments);
    assert.equal(csv.statusCode, 200, csv.body);
    assert.equal(csv.headers['x-narrowed-to'], 'namespaces=payments');
    const lines = csv.body.trim().split('\r\n');
    assert.equal(lines.length, 5, csv.body); // header and four payments grants
    assert.ok(
      lines.slice(1).every((l) => l.includes('payments/')),
      csv.body,
    );
    const arrow = await call('GET', '/v1/grants?format=arrow', paymentsBillingC1);
    assert.equal(arrow.statusCode, 200);
    assert.equal(arrow.headers['x-narrowed-to'], 'namespaces=billing,payments; clusters=c1');
    const table = tableFromIPC(arrow.rawPayload);
    const read = [...table].map((r) => `${String(r.cluster)}:${String(r.key)}`).sort();
    assert.deepEqual(read, ['c1:billing/run', 'c1:payments/acct-1', 'c1:payments/acct-2']);
  });

  it('a cursor pages only under the scope that made it', async () => {
    const first = await page(payments, 'limit=1&order=asc');
    assert.ok(first.nextCursor);
    const next = await page(payments, `limit=1&order=asc&cursor=${first.nextCursor}`);
    assert.deepEqual(keys(next), ['c1:payments/acct-2']);
    for (const other of [everything, paymentsBillingC1]) {
      const res = await call('GET', `/v1/grants?limit=1&order=asc&cursor=${first.nextCursor}`, other);
      assert.equal(res.statusCode, 400, res.body);
      assert.equal((res.json() as { error: string }).error, 'LOCKAUDIT_ERR_REPORT_CURSOR');
    }
    const unscoped = await page(everything, 'limit=1&order=asc');
    const res = await call('GET', `/v1/grants?limit=1&order=asc&cursor=${unscoped.nextCursor}`, payments);
    assert.equal(res.statusCode, 400, 'an unscoped cursor does not page a scoped read');
  });

  it("the key timeline draws only the scope's keys and clusters", async () => {
    const to = new Date().toISOString();
    const timeline = async (token: string, query: string) => {
      const res = await call('GET', `/v1/reports/timeline?to=${to}&from=${new Date(T0).toISOString()}&${query}`, token);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as { lanes: string[]; grants: { cluster: string; key: string }[]; narrowedTo?: unknown };
    };
    const acct1 = `key=${encodeURIComponent('payments/acct-1')}`;
    assert.equal((await timeline(everything, acct1)).grants.length, 2);
    assert.deepEqual(
      (await timeline(paymentsBillingC1, acct1)).grants.map((g) => g.cluster),
      ['c1'],
    );
    const busiest = await timeline(payments, '');
    assert.deepEqual([...busiest.lanes].sort(), ['payments/acct-1', 'payments/acct-2', 'payments/acct-9']);
    assert.deepEqual(busiest.narrowedTo, { namespaces: ['payments'], clusters: [] });
    assert.equal((await timeline(everything, '')).lanes.length, 6);
    await refused(payments, `/v1/reports/timeline?key=${encodeURIComponent('hr/payroll')}`, /querystring\.key: namespace hr/, /namespaces payments/);
    await refused(paymentsBillingC1, '/v1/reports/timeline?cluster=c2', /querystring\.cluster: cluster c2/, /clusters c1/);
  });

  it("contention shows only the scope's grants, groups and hottest keys", async () => {
    const q = `/v1/reports/contention?by=namespace&from=${new Date(T0).toISOString()}&to=${new Date().toISOString()}`;
    const read = async (token: string, extra = '') => {
      const res = await call('GET', q + extra, token);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as { groups: { group: string; grants: number }[]; hottestKeys: { key: string }[]; narrowedTo?: unknown };
    };
    const all = await read(everything);
    assert.deepEqual(all.groups.map((g) => g.group).sort(), ['billing', 'hr', 'payments', 'payroll-x']);
    const pay = await read(payments);
    assert.deepEqual(
      pay.groups.map((g) => [g.group, g.grants]),
      [['payments', 4]],
    );
    assert.ok(pay.hottestKeys.every((k) => k.key.startsWith('payments/')));
    assert.deepEqual(pay.narrowedTo, { namespaces: ['payments'], clusters: [] });
    const fin = await read(paymentsBillingC1);
    assert.deepEqual(fin.groups.map((g) => [g.group, g.grants]).sort(), [
      ['billing', 1],
      ['payments', 2],
    ]);
    await refused(payments, `${q}&namespace=hr`, /querystring\.namespace: namespace hr/, /namespaces payments/);
  });

  it("unprotected grants: a scoped reader sees its scope's only, and is told so", async () => {
    // Added here, after the tests that count every grant: two grants made without quorum, one in each namespace.
    const spooled: GrantSpec[] = [
      { cluster: 'c1', key: 'payments/acct-3', class: 'ledger', holder: 'pay-3', rev: 0, at: T0 + 9_000, spool: 'sp-pay' },
      { cluster: 'c1', key: 'hr/payroll', class: 'batch', holder: 'hr-2', rev: 0, at: T0 + 9_500, spool: 'sp-hr' },
    ];
    await store.insert(
      'grants',
      spooled.map((g) => grantRows(g).open),
    );
    const q = `/v1/reports/unprotected?from=${new Date(T0).toISOString()}&to=${new Date().toISOString()}`;
    const read = async (token: string) => {
      const res = await call('GET', q, token);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as { items: { key: string }[]; narrowedTo?: unknown };
    };
    assert.deepEqual((await read(everything)).items.map((i) => i.key).sort(), ['hr/payroll', 'payments/acct-3']);
    const pay = await read(payments);
    assert.deepEqual(
      pay.items.map((i) => i.key),
      ['payments/acct-3'],
    );
    assert.deepEqual(pay.narrowedTo, { namespaces: ['payments'], clusters: [] });
  });

  it("quarantine: a scoped reader sees its clusters' changes of its namespaces' keys, never another's or a system key", async () => {
    const at = Date.now() - 60_000;
    await store.insert('quarantine', [
      { cluster: 'c1', revision: '401', key: '/l/payments/acct-1', op: 'put', value: 'not json', reason: 'decode: not JSON', at },
      { cluster: 'c1', revision: '402', key: '/q/payments/acct-1/7587862', op: 'put', value: 'x', reason: 'decode: not JSON', at: at + 1 },
      { cluster: 'c1', revision: '403', key: '/l/hr/payroll', op: 'put', value: 'x', reason: 'decode: not JSON', at: at + 2 },
      { cluster: 'c1', revision: '404', key: '/sys/epoch', op: 'put', value: 'x', reason: 'decode: not JSON', at: at + 3 },
      { cluster: 'c2', revision: '405', key: '/l/payments/acct-9', op: 'put', value: 'x', reason: 'decode: not JSON', at: at + 4 },
      { cluster: 'c1', revision: '406', key: '/l/paymentsx/a', op: 'put', value: 'x', reason: 'decode: not JSON', at: at + 5 },
    ]);
    const read = async (token: string, extra = '') => {
      const res = await call('GET', `/v1/quarantine?from=${new Date(at - 1000).toISOString()}${extra}`, token);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as { items: { revision: string }[]; nextCursor: string | null; narrowedTo?: unknown };
    };
    const revisions = (p: { items: { revision: string }[] }) => p.items.map((i) => i.revision);
    assert.deepEqual(revisions(await read(everything)), ['401', '402', '403', '404', '405', '406']);
    const pay = await read(payments);
    assert.deepEqual(revisions(pay), ['401', '402', '405']);
    assert.deepEqual(pay.narrowedTo, { namespaces: ['payments'], clusters: [] });
    assert.deepEqual(revisions(await read(paymentsBillingC1)), ['401', '402']);
    await refused(paymentsBillingC1, '/v1/quarantine?cluster=c2', /querystring\.cluster: cluster c2/, /clusters c1/);
    // Its cursor pages under its scope only.
    const first = await read(payments, '&limit=1');
    assert.ok(first.nextCursor);
    assert.deepEqual(revisions(await read(payments, `&limit=1&cursor=${first.nextCursor}`)), ['402']);
    assert.equal((await call('GET', `/v1/quarantine?limit=1&cursor=${first.nextCursor}`, everything)).statusCode, 400);
  });

  it('a route that does not serve scoped tokens refuses them; cluster-wide health stays readable, of its clusters only', async () => {
    const auditor = await auditorToken('aud@payments', { namespaces: ['payments'] });
    // Building the risk register is an act over every namespace.
    const build = await call('POST', '/v1/reports/risk-register/run', auditor, {});
    assert.equal(build.statusCode, 403, build.body);
    assert.equal(build.json().error, 'LOCKAUDIT_ERR_AUTH_SCOPE');
    assert.match(build.json().message, /does not serve scoped tokens.*namespaces payments/);
    // /metrics labels every namespace's series.
    await refused(payments, '/metrics', /every namespace/, /scoped/);
    assert.equal((await call('GET', '/metrics', everything)).statusCode, 200);
    for (const url of ['/v1/tailers', '/v1/gaps']) assert.equal((await call('GET', url, payments)).statusCode, 200, url);
    // A cluster-scoped token reads its clusters' health and gaps only (an insider's reviewer found c2's read by a c1 token).
    await store.insert('gaps', [
      { cluster: 'c1', from_revision: '10', to_revision: '20', detected_at: Date.now(), reason: 'test: c1' },
      { cluster: 'c2', from_revision: '30', to_revision: '40', detected_at: Date.now(), reason: 'test: c2' },
    ]);
    const gapsOf = async (token: string) =>
      ((await call('GET', '/v1/gaps', token)).json() as { items: { cluster: string }[] }).items.map((g) => g.cluster).sort();
    assert.deepEqual(await gapsOf(everything), ['c1', 'c2']);
    assert.deepEqual(await gapsOf(paymentsBillingC1), ['c1']);
    await refused(paymentsBillingC1, '/v1/gaps?cluster=c2', /querystring\.cluster: cluster c2/, /clusters c1/);
    await refused(paymentsBillingC1, '/v1/tailers/lag?cluster=c2', /querystring\.cluster: cluster c2/, /clusters c1/);
    const tailers = (await call('GET', '/v1/tailers', paymentsBillingC1)).json() as { items: { cluster: string }[] };
    assert.ok(
      tailers.items.every((t) => t.cluster === 'c1'),
      JSON.stringify(tailers.items),
    );
    assert.ok(((await call('GET', '/v1/tailers', everything)).json() as { items: { cluster: string }[] }).items.some((t) => t.cluster === 'c2'));
  });

  it('a token lookup routes a token granted outside the scope as one granted nowhere (no timing tells it apart)', async () => {
    const deps = { store, limits: testConfig().reports };
    const hr = G[3] as GrantSpec;
    assert.equal(await tokenKey(deps, { token: tokenOf(hr) }), 'hr/payroll');
    assert.equal(await tokenKey(deps, { token: tokenOf(hr) }, { namespaces: ['payments'], clusters: [] }), undefined);
    assert.equal(await tokenKey(deps, { token: tokenOf(G[4] as GrantSpec) }, { namespaces: ['payments'], clusters: ['c1'] }), undefined);
    assert.equal(await tokenKey(deps, { token: tokenOf(G[0] as GrantSpec) }, { namespaces: ['payments'], clusters: ['c1'] }), 'payments/acct-1');
  });

  it("the risk register: a namespace-scoped auditor reads its namespaces' classes; a cluster-scoped one none (use spans every cluster)", async () => {
    const day = new Date(Date.now() + 90 * 86_400_000).toISOString().slice(0, 10);
    await store.insert('events', [
      classEvent('ledger', advisoryClass('ledger', 'payments', day), 501, Date.now() - 3_600_000, 'c1'),
      classEvent('batch', advisoryClass('batch', 'hr', day), 502, Date.now() - 3_600_000, 'c1'),
    ]);
    assert.equal((await call('POST', '/v1/reports/risk-register/run', admin)).statusCode, 201);
    const read = async (token: string) => {
      const res = await call('GET', '/v1/reports/risk-register', token);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as { classes: { class: string }[]; narrowedTo?: unknown };
    };
    const unscoped = await auditorToken('aud@corp', {});
    const payAuditor = await auditorToken('aud2@payments', { namespaces: ['payments'] });
    const c1Auditor = await auditorToken('aud@c1', { clusters: ['c1'] });
    assert.deepEqual((await read(unscoped)).classes.map((c) => c.class).sort(), ['batch', 'ledger']);
    const pay = await read(payAuditor);
    assert.deepEqual(
      pay.classes.map((c) => c.class),
      ['ledger'],
    );
    assert.deepEqual(pay.narrowedTo, { namespaces: ['payments'], clusters: [] });
    const csv = await call('GET', '/v1/reports/risk-register?format=csv', payAuditor);
    assert.ok(!csv.body.includes('batch') && csv.body.includes('ledger'), csv.body);
    await refused(c1Auditor, '/v1/reports/risk-register', /every cluster/, /clusters \(c1\)/);
  });

  it("the two-person log: a scoped auditor sees its clusters' acts, its namespaces' force-releases and its clusters' epoch advances", async () => {
    const at = Date.now() - 60_000;
    const act = (i: number, cluster: string, kind: string, key: string) => ({
      at: at + i,
      cluster,
      kind,
      action: 'requested',
      request_id: `req-${i}`,
      request_hash: 'h',
      actor: 'op@corp',
      requester: 'op@corp',
      key,
      reason: 'test',
      revision: String(600 + i),
    });
    await store.insert('two_person_log', [
      act(1, 'c1', 'force-release', 'payments/acct-1'),
      act(2, 'c1', 'force-release', 'hr/payroll'),
      act(3, 'c1', 'epoch-advance', ''),
      act(4, 'c2', 'force-release', 'payments/acct-9'),
    ]);
    const ids = async (token: string, extra = '') => {
      const res = await call('GET', `/v1/two-person-log?from=${new Date(at - 1000).toISOString()}${extra}`, token);
      assert.equal(res.statusCode, 200, res.body);
      return (res.json() as { acts: { requestId: string }[] }).acts.map((a) => a.requestId).sort();
    };
    assert.deepEqual(await ids(await auditorToken('aud3@corp', {})), ['req-1', 'req-2', 'req-3', 'req-4']);
    assert.deepEqual(await ids(await auditorToken('aud3@payments', { namespaces: ['payments'] })), ['req-1', 'req-3', 'req-4']);
    const c1 = await auditorToken('aud3@c1', { namespaces: ['payments'], clusters: ['c1'] });
    assert.deepEqual(await ids(c1), ['req-1', 'req-3']);
    await refused(c1, '/v1/two-person-log?cluster=c2', /querystring\.cluster: cluster c2/, /clusters c1/);
  });

  it('tokens show their scope; an admin token cannot be scoped; a bad scope is a 400 naming the field', async () => {
    const who = (await call('GET', '/v1/whoami', paymentsBillingC1)).json() as { scope: unknown };
    assert.deepEqual(who.scope, { namespaces: ['billing', 'payments'], clusters: ['c1'] });
    assert.equal(((await call('GET', '/v1/whoami', everything)).json() as { scope: unknown }).scope, null);
    const listed = (await call('GET', '/v1/tokens', admin)).json() as { items: { identity: string; scope: unknown }[] };
    const scopes = Object.fromEntries(listed.items.map((t) => [t.identity, t.scope]));
    assert.deepEqual(scopes['pat@payments'], { namespaces: ['payments'], clusters: [] });
    assert.equal(scopes['ivy@corp'], null);
    const scopedAdmin = await call('POST', '/v1/tokens', admin, { identity: 'x@corp', roles: ['admin'], namespaces: ['payments'] });
    assert.equal(scopedAdmin.statusCode, 400);
    assert.match(scopedAdmin.json().message, /body\.namespaces: an admin token cannot be scoped/);
    const bad = await call('POST', '/v1/tokens', admin, { identity: 'x@corp', roles: ['investigator'], namespaces: ['no spaces'] });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().message, /namespaces/);
  });
});
