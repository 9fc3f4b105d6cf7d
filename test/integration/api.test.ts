// The API skeleton against the suite's real services: health, readiness,
// metrics, OpenAPI, auth and the error shapes every route shares.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Type from 'typebox';
import { buildApp, type App } from '../../api/app.js';
import { requireRoles } from '../../api/auth.js';
import { alarm } from '../../platform/alarms.js';
import { HealthState } from '../../platform/health.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { createS3Client } from '../../core/s3.js';
import { projectRoot } from '../../core/paths.js';
import { ensureBuckets } from '../../platform/buckets.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { tempStore, testConfig } from '../support/env.js';

describe('api skeleton', () => {
  let app: App;
  let closeStore: () => Promise<void>;
  let theStore: AuditStore;
  let health: HealthState;
  const tokens: Record<string, string> = {};

  before(async () => {
    const config = testConfig();
    const { store, close } = await tempStore();
    theStore = store;
    closeStore = close;
    await ensureBuckets(createS3Client(config.s3), config.s3);
    health = new HealthState();
    const probeRoute = function probeRoute(a: App) {
      a.get(
        '/v1/probe/:id',
        {
          preHandler: requireRoles('investigator'),
          schema: {
            params: Type.Object({ id: Type.String({ pattern: '^[a-z]+$' }) }),
            querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })) }, { additionalProperties: false }),
          },
        },
        async (req) => ({ id: req.params.id, who: req.identity?.identity }),
      );
      a.post(
        '/v1/probe',
        {
          preHandler: requireRoles('client'),
          schema: { body: Type.Object({ n: Type.Integer(), key: Type.String({ maxLength: 8 }) }, { additionalProperties: false }) },
        },
        async (req) => ({ n: req.body.n }),
      );
    };
    app = await buildApp({ config, logger: createLogger('silent'), store, verifier: new ApiTokenVerifier(store), health, metrics: createMetricsRegistry() }, [
      probeRoute,
    ]);
    tokens.investigator = (await createApiToken(store, 'ivy@corp', ['investigator'])).token;
    tokens.client = (await createApiToken(store, 'spiffe://corp/worker', ['client'])).token;
    tokens.admin = (await createApiToken(store, 'root@corp', ['admin'])).token;
  });
  after(async () => {
    await app.close();
    await closeStore();
  });

  const get = (url: string, token?: string) => app.inject({ method: 'GET', url, headers: token ? { authorization: `Bearer ${token}` } : {} });

  it('registers every route module as a fastify plugin, with no per-app state at module level', async () => {
    const tree = app.printPlugins();
    for (const name of ['lockaudit-auth', 'healthRoutes', 'whoamiRoutes', 'tokenRoutes', 'probeRoute']) assert.match(tree, new RegExp(name), tree);
    assert.equal(typeof app.reportRateLimit, 'function', 'the report rate limiter is a decorator of the app');
    const dir = path.join(projectRoot, 'api');
    const files = [...readdirSync(dir).map((f) => path.join(dir, f)), ...readdirSync(path.join(dir, 'routes')).map((f) => path.join(dir, 'routes', f))].filter(
      (f) => f.endsWith('.ts'),
    );
    assert.deepEqual(
      files.filter((f) => /new WeakMap/.test(readFileSync(f, 'utf8'))).map((f) => path.relative(projectRoot, f)),
      [],
    );
  });

  it('answers /healthz', async () => {
    const r = await get('/healthz');
    assert.equal(r.statusCode, 200);
    assert.deepEqual(r.json(), { status: 'ok' });
  });

  it('is ready when every dependency answers; a raised alarm is listed for admins and leaves it ready', async () => {
    const ready = await get('/readyz', tokens.admin);
    assert.equal(ready.statusCode, 200, ready.body);
    assert.deepEqual(
      ready.json().checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok]),
      [
        ['etcd:local', true],
        ['clickhouse', true],
        ['s3', true],
        ['redis', true],
      ],
    );
    assert.deepEqual(ready.json().alarms, []);
    health.raise(alarm('LOCKAUDIT_ALARM_TAILER_GAP', { cluster: 'local' }, { from: 10, to: 20 }));
    const alarmed = await get('/readyz', tokens.admin);
    assert.equal(alarmed.statusCode, 200);
    assert.equal(alarmed.json().status, 'ready');
    assert.equal(alarmed.json().alarms[0].name, 'tailer-gap:local');
    assert.equal(alarmed.json().alarms[0].code, 'LOCKAUDIT_ALARM_TAILER_GAP');
    health.clear('tailer-gap:local');
    assert.deepEqual((await get('/readyz', tokens.admin)).json().alarms, []);
  });

  it('shows the unauthenticated and non-admins only a status: dependency detail (host:port) is for admins', async () => {
    health.raise(alarm('LOCKAUDIT_ALARM_TAILER_GAP', { cluster: 'local' }, { from: 10, to: 20 }));
    try {
      for (const token of [undefined, tokens.investigator]) {
        const r = await get('/readyz', token);
        assert.equal(r.statusCode, 200);
        assert.deepEqual(r.json(), { status: 'ready' });
      }
      const admin = (await get('/readyz', tokens.admin)).json() as { checks: Array<{ name: string; detail: string }>; alarms: Array<{ name: string }> };
      assert.equal(admin.checks.length, 4);
      assert.ok(admin.checks.every((c) => typeof c.detail === 'string'));
      assert.equal(admin.alarms[0]?.name, 'tailer-gap:local');
    } finally {
      health.clear('tailer-gap:local');
    }
  });

  it('requires a token for /metrics when metricsRequireToken is set', async () => {
    const store = theStore;
    const locked = await buildApp({
      config: testConfig({ LOCKAUDIT_METRICS_REQUIRE_TOKEN: 'true' }),
      logger: createLogger('silent'),
      store,
      verifier: new ApiTokenVerifier(store),
      health: new HealthState(),
      metrics: createMetricsRegistry(),
    });
    try {
      const token = (await createApiToken(store, 'prom@corp', ['client'])).token;
      assert.equal((await locked.inject({ method: 'GET', url: '/metrics' })).statusCode, 401);
      const ok = await locked.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${token}` } });
      assert.equal(ok.statusCode, 200);
      assert.match(ok.body, /lockaudit_process_cpu_seconds_total/);
    } finally {
      await locked.close();
    }
  });

  it('serves Prometheus metrics and the OpenAPI document', async () => {
    const m = await get('/metrics');
    assert.equal(m.statusCode, 200);
    assert.match(m.body, /lockaudit_process_cpu_seconds_total/);
    const doc = await get('/docs/json');
    assert.equal(doc.statusCode, 200);
    assert.ok(doc.json().paths['/v1/probe/{id}'], Object.keys(doc.json().paths).join(','));
    assert.equal((await get('/docs')).statusCode < 400, true);
  });

  it('answers a missing or unknown token the same way, whether or not the resource exists', async () => {
    const a = await get('/v1/probe/exists');
    const b = await get('/v1/probe/doesnotexist', 'la_000000000000_' + 'x'.repeat(43));
    const c = await get('/v1/probe/zzz', 'garbage');
    for (const r of [a, b, c]) {
      assert.equal(r.statusCode, 401);
      assert.equal(r.json().error, 'LOCKAUDIT_ERR_AUTH_REQUIRED');
    }
    assert.equal(a.body, b.body);
  });

  it('checks roles; admin holds every role', async () => {
    assert.equal((await get('/v1/probe/abc', tokens.client)).statusCode, 403);
    const ok = await get('/v1/probe/abc', tokens.investigator);
    assert.equal(ok.statusCode, 200);
    assert.deepEqual(ok.json(), { id: 'abc', who: 'ivy@corp' });
    assert.equal((await get('/v1/probe/abc', tokens.admin)).statusCode, 200);
  });

  it('tells a token who it is: identity, roles, public id — never the token', async () => {
    const me = await get('/v1/whoami', tokens.investigator);
    assert.equal(me.statusCode, 200);
    const body = me.json() as { identity: string; roles: string[]; tokenId: string };
    assert.equal(body.identity, 'ivy@corp');
    assert.deepEqual(body.roles, ['investigator']);
    assert.match(body.tokenId, /^[0-9a-f]{12}$/);
    assert.ok(!me.body.includes(tokens.investigator as string));
    assert.equal((await get('/v1/whoami')).statusCode, 401);
    assert.equal((await get('/v1/whoami', 'la_000000000000_notarealtokennotarealtokennotarealtokennot')).statusCode, 401);
  });

  it('answers bad input with 400 naming the field, never 500', async () => {
    const post = (payload: unknown) =>
      app.inject({
        method: 'POST',
        url: '/v1/probe',
        headers: { authorization: `Bearer ${tokens.client}`, 'content-type': 'application/json' },
        payload: JSON.stringify(payload),
      });
    const cases: Array<[unknown, RegExp]> = [
      [{ key: 'a' }, /body\.n: is required/],
      [{ n: '5', key: 'a' }, /body\.n: must be integer/],
      [{ n: 1, key: 'a', extra: true }, /body\.extra: is not a known field/],
      [{ n: 1, key: 'abcdefghijk' }, /body\.key: is longer than 8 characters/],
    ];
    for (const [payload, expected] of cases) {
      const r = await post(payload);
      assert.equal(r.statusCode, 400, r.body);
      assert.equal(r.json().error, 'LOCKAUDIT_ERR_VALIDATION');
      assert.match(r.json().message, expected);
    }
    const badJson = await app.inject({
      method: 'POST',
      url: '/v1/probe',
      headers: { authorization: `Bearer ${tokens.client}`, 'content-type': 'application/json' },
      payload: '{"n":',
    });
    assert.equal(badJson.statusCode, 400);
    // Fastify's own body errors speak the one catalog (before: FST_ERR_CTP_INVALID_JSON_BODY, FST_ERR_CTP_EMPTY_JSON_BODY).
    assert.equal(badJson.json().error, 'LOCKAUDIT_ERR_VALIDATION');
    assert.match(badJson.json().message, /^body: /);
    const empty = await app.inject({
      method: 'POST',
      url: '/v1/probe',
      headers: { authorization: `Bearer ${tokens.client}`, 'content-type': 'application/json' },
    });
    assert.equal(empty.statusCode, 400);
    assert.deepEqual([empty.json().error, /^body: /.test(empty.json().message)], ['LOCKAUDIT_ERR_VALIDATION', true]);
    const wrongType = await app.inject({
      method: 'POST',
      url: '/v1/probe',
      headers: { authorization: `Bearer ${tokens.client}`, 'content-type': 'application/x-unknown' },
      payload: 'n=1',
    });
    assert.equal(wrongType.statusCode, 415);
    assert.equal(wrongType.json().error, 'LOCKAUDIT_ERR_VALIDATION');
    const q = await get('/v1/probe/abc?limit=99', tokens.investigator);
    assert.equal(q.statusCode, 400);
    assert.match(q.json().message, /querystring\.limit: must be <= 10/);
    const unknownQ = await get('/v1/probe/abc?lmit=1', tokens.investigator);
    assert.equal(unknownQ.statusCode, 400);
    assert.match(unknownQ.json().message, /querystring\.lmit: is not a known field/);
    const p = await get("/v1/probe/a'b", tokens.investigator);
    assert.equal(p.statusCode, 400);
    assert.match(p.json().message, /params\.id/);
  });

  it('answers an unknown route with a JSON 404', async () => {
    const r = await get('/v1/nothing-here');
    assert.equal(r.statusCode, 404);
    assert.equal(r.json().error, 'LOCKAUDIT_ERR_NOT_FOUND');
  });
});
