// No input makes the API answer 5xx, and every 400 names the field. Driven by
// the served OpenAPI document (/docs/json): every operation, every path and
// query parameter and body field, with values drawn by fast-check (fixed seed,
// bounded runs) from the schema (valid) and from a hostile set (odd dates,
// huge numbers, 64-bit edges, NUL and control characters, long strings, deep
// JSON). The app is the real one, on the suite's etcd, Redis, MinIO and an
// embedded ClickHouse of its own.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import fc from 'fast-check';
import { buildApp, type App, type AppContext } from '../../api/app.js';
import { exportRoutes } from '../../api/routes/exports.js';
import { grantRoutes } from '../../api/routes/grants.js';
import { lockApi } from '../../api/routes/lockApi.js';
import { lockCluster, startLockEngine, type LockEngine } from '../../roles/lockEngine.js';
import { reportRoutes } from '../../api/routes/reports.js';
import { tailerRoutes } from '../../api/routes/tailers.js';
import { uiRoutes } from '../../api/routes/ui.js';
import { filterDigest } from '../../reports/grantHistory/cursor.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { HealthState } from '../../platform/health.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
}
interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: JsonSchema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema: JsonSchema }> };
}
interface Target {
  method: string;
  path: string;
  params: Parameter[];
  body?: JsonSchema;
}

const SEED = 20261130;
const RUNS_PER_OPERATION = 60;

// Values no schema should let through to a crash.
const oddDates = [
  '2016-12-31T23:59:60Z',
  '2020-02-30T00:00:00Z',
  '1',
  '2026-03-01',
  '2026-03-01T00:00:00',
  '0000-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999999999Z',
  '+275760-09-13T00:00:00Z',
  '-000001-01-01T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '2026-01-01T24:00:00Z',
  '2026-01-01T00:00:00+24:00',
  '1969-12-31T23:59:59Z',
  '2026-01-01t00:00:00z',
  '2026-01-01T00:00:00.1234567891Z',
  '2300-01-01T00:00:00Z',
  '1970-01-01T00:00:00+00:01',
  '2026-W01',
  '2026-001',
  '2016-12-31',
  '2016-02-29',
];
const hostileStrings = [
  ...oddDates,
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u0001\u001f\u007f',
  '\r\n',
  '%00',
  '../../etc/passwd',
  '\uD800',
  '😀'.repeat(50),
  'x'.repeat(70_000),
  '18446744073709551615',
  '18446744073709551616',
  '9223372036854775807',
  '9223372036854775808',
  '-1',
  '-9223372036854775808',
  '1e308',
  'NaN',
  'Infinity',
  '%ED%A0%80',
  '%',
  '00',
  '0x10',
  '9007199254740993',
  'null',
  'true',
  '[]',
  '{}',
];
const hostileNumbers = [0, -1, 1.5, 2 ** 53, 2 ** 53 + 2, 2 ** 63, 2 ** 64, -(2 ** 63), 1e308, -1e308, Number.MIN_VALUE];
const deepJson = (depth: number): unknown => (depth === 0 ? 1 : { a: deepJson(depth - 1) });
const hostileValues: unknown[] = [
  ...hostileStrings,
  ...hostileNumbers,
  null,
  true,
  false,
  [],
  {},
  [1, 'a', null],
  deepJson(60),
  Array.from({ length: 2000 }, (_, i) => i),
];

const DATE_TIMES = ['2026-03-01T00:00:00Z', '2026-02-27T12:30:00.5+02:00', '2016-12-31T23:59:59Z', '1970-01-01T00:00:00Z', '2299-12-31T23:59:59.999Z'];

function typesOf(s: JsonSchema): string[] {
  return s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
}

/** Values the schema accepts (roughly: a generator needs only to reach the handlers often). */
function valid(s: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  const alts = s.anyOf ?? s.oneOf;
  if (alts?.length) return fc.oneof(...alts.map((a) => valid(a, depth)));
  const types = typesOf(s);
  if (types.includes('integer') || types.includes('number')) {
    const min = s.minimum ?? -(2 ** 40);
    const max = s.maximum ?? 2 ** 40;
    return types.includes('integer') ? fc.integer({ min: Math.ceil(min), max: Math.floor(max) }).map((n) => n) : fc.double({ min, max, noNaN: true });
  }
  if (types.includes('boolean')) return fc.boolean();
  if (types.includes('array')) return depth > 3 ? fc.constant([]) : fc.array(valid(s.items ?? {}, depth + 1), { maxLength: 3 });
  if (types.includes('object') || s.properties) {
    if (depth > 3) return fc.constant({});
    const props = s.properties ?? {};
    const required = new Set(s.required ?? []);
    const requiredKeys = Object.keys(props).filter((k) => required.has(k));
    return fc.record(Object.fromEntries(Object.entries(props).map(([k, v]) => [k, valid(v, depth + 1)])), { requiredKeys });
  }
  if (s.format === 'date-time') return fc.constantFrom(...DATE_TIMES);
  if (s.format === 'date') return fc.constantFrom('2026-03-01', '2025-11-29', '1970-01-01');
  if (s.pattern) return fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length >= (s.minLength ?? 0) && v.length <= (s.maxLength ?? 4096));
  return fc.string({ minLength: s.minLength ?? 0, maxLength: Math.min(s.maxLength ?? 40, 40) });
}

/** Percent-encodes every byte: lone surrogates and NULs reach the server as sent, not as a client-side error. */
function enc(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  }
}

function asText(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? '');
}

describe('API fuzz: no 5xx on any input, every 400 names its field', { timeout: 600_000 }, () => {
  let app: App;
  let engine: LockEngine | undefined;
  let closeStore: () => Promise<void>;
  let admin: string;
  let targets: Target[] = [];

  before(async () => {
    // A rate limit the fuzzer does not reach: the requests should reach the handlers.
    const config = testConfig({ LOCKAUDIT_RATE_LIMIT_PER_MINUTE: '1000000' });
    const temp = await tempStore();
    closeStore = temp.close;
    const ctx: AppContext = {
      config,
      logger: createLogger('silent'),
      store: temp.store,
      verifier: new ApiTokenVerifier(temp.store),
      health: new HealthState(),
      metrics: createMetricsRegistry(),
    };
    engine = await startLockEngine(ctx, { cluster: lockCluster(config), pollMs: 250, root: `/${uniqueId('fuzz')}` });
    app = await buildApp(ctx, [tailerRoutes, lockApi(engine.service), grantRoutes, reportRoutes, exportRoutes({ enqueueTimeoutMs: 5_000 }), uiRoutes]);
    // admin holds every role: the inputs reach validation and the handlers, not just the role check.
    admin = (await createApiToken(temp.store, 'fuzz-admin@corp', ['admin'])).token;
    const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json() as { paths: Record<string, Record<string, Operation>> };
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (!['get', 'post', 'put', 'delete', 'patch'].includes(method)) continue;
        targets.push({
          method: method.toUpperCase(),
          path,
          params: (op.parameters ?? []).filter((p) => p.in !== 'header'),
          body: op.requestBody?.content?.['application/json']?.schema,
        });
      }
    }
    targets = targets.sort((a, b) => `${a.path} ${a.method}`.localeCompare(`${b.path} ${b.method}`));
  });
  after(async () => {
    await app?.close();
    await engine?.close();
    await closeStore?.();
  });

  it('serves an OpenAPI document that validates: operationIds, servers, 4xx answers', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/docs/json' })).json() as {
      openapi: string;
      servers?: unknown[];
      paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, unknown> }>>;
    };
    await SwaggerParser.validate(structuredClone(doc) as never);
    assert.ok(doc.servers?.length, 'servers');
    const ops = Object.entries(doc.paths).flatMap(([p, m]) => Object.entries(m).map(([method, op]) => ({ name: `${method.toUpperCase()} ${p}`, op })));
    assert.deepEqual(
      ops.filter((o) => !o.op.operationId).map((o) => o.name),
      [],
      'operations without an operationId',
    );
    assert.equal(new Set(ops.map((o) => o.op.operationId)).size, ops.length, 'operationIds are unique');
    assert.deepEqual(
      ops.filter((o) => !Object.keys(o.op.responses ?? {}).some((c) => c.startsWith('4'))).map((o) => o.name),
      [],
      'operations without a 4xx answer',
    );
    assert.deepEqual(
      ops.filter((o) => !Object.keys(o.op.responses ?? {}).some((c) => c.startsWith('2') || c.startsWith('3'))).map((o) => o.name),
      [],
      'operations without a success answer',
    );
  });

  it('finds every documented operation', () => {
    assert.ok(targets.length >= 20, targets.map((t) => `${t.method} ${t.path}`).join(', '));
  });

  it('answers the reported inputs with a 400 naming the field, not a 500', async () => {
    const auth = { authorization: `Bearer ${admin}` };
    const leap = await app.inject({ method: 'GET', url: '/v1/tailers/lag?to=2016-12-31T23:59:60Z', headers: auth });
    assert.equal(leap.statusCode, 400, leap.body);
    assert.match(leap.json().message, /querystring\.to/);
    // A well-formed cursor for these very filters, made by hand: only the signature can tell it from one the API issued.
    const digest = filterDigest({
      key: 'a/b',
      keyPrefix: undefined,
      holder: undefined,
      class: undefined,
      namespace: undefined,
      token: undefined,
      from: undefined,
      to: undefined,
    });
    const forged = Buffer.from(JSON.stringify([1, 0, 'c', 'k', '1', '', 9e15, digest])).toString('base64url');
    const cursor = await app.inject({ method: 'GET', url: `/v1/grants?key=a/b&cursor=${forged}`, headers: auth });
    assert.equal(cursor.statusCode, 400, cursor.body);
    assert.match(cursor.json().message, /querystring\.cursor/);
  });

  it('never answers 5xx; every 400 names a field', async (t) => {
    const auth = { authorization: `Bearer ${admin}` };
    const failures: string[] = [];
    let sent = 0;
    const statuses = new Map<number, number>();
    for (const t of targets) {
      // Every field valid but (most of the time) one, which gets a hostile or random value: a bad
      // value must be caught on its own, not only beside other bad ones that fail first.
      const bodyFields = Object.keys(t.body?.properties ?? {});
      const fields = [...t.params.map((p) => `param:${p.name}`), ...bodyFields.map((f) => `body:${f}`), ...(t.body ? ['body'] : [])];
      const input = fc.record({
        params: fc.tuple(...t.params.map((p) => fc.option(valid(p.schema), { nil: undefined, freq: p.required ? 20 : 2 }))),
        body: t.body ? valid(t.body) : fc.constant(undefined),
        corrupt: fc.option(fc.constantFrom(...(fields.length ? fields : ['none'])), { nil: undefined, freq: 5 }),
        badDate: fc.constantFrom(...oddDates),
        dated: fc.boolean(),
        bad: fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom(...hostileValues) },
          { weight: 1, arbitrary: fc.string({ maxLength: 30, unit: 'binary' }) },
          { weight: 1, arbitrary: fc.integer() },
        ),
      });
      const schemaOf = (field: string): JsonSchema | undefined =>
        field.startsWith('param:')
          ? t.params.find((p) => `param:${p.name}` === field)?.schema
          : field.startsWith('body:')
            ? t.body?.properties?.[field.slice(5)]
            : undefined;
      const isDate = (field: string | undefined): boolean =>
        field !== undefined && (/date/.test(schemaOf(field)?.format ?? '') || /(^|:)(from|to|date)$/.test(field));
      const named = ['querystring', 'params', 'body', ...t.params.map((p) => p.name), ...bodyFields];
      const random = fc.sample(input, { seed: SEED, numRuns: RUNS_PER_OPERATION });
      // Plus every odd date in every date field once, the rest valid: dates are where 500s hid.
      const dateCases = fields
        .filter(isDate)
        .flatMap((field) => oddDates.map((d, i) => ({ ...(random[i % random.length] as (typeof random)[number]), corrupt: field, bad: d, dated: false })));
      const samples = [...random, ...dateCases];
      for (const raw of samples) {
        // A date field gets an odd date half the time: the date parsers are where 500s hid.
        const sample = isDate(raw.corrupt) && raw.dated ? { ...raw, bad: raw.badDate } : raw;
        let url = t.path;
        const query: string[] = [];
        t.params.forEach((p, i) => {
          const v = sample.corrupt === `param:${p.name}` ? sample.bad : sample.params[i];
          if (p.in === 'path') url = url.replace(`{${p.name}}`, enc(v === undefined ? 'x' : asText(v)) || 'x');
          else if (v !== undefined) query.push(`${enc(p.name)}=${enc(asText(v))}`);
        });
        if (query.length) url += `?${query.join('&')}`;
        let body = sample.body;
        if (sample.corrupt === 'body') body = sample.bad;
        else if (sample.corrupt?.startsWith('body:') && body && typeof body === 'object') body = { ...body, [sample.corrupt.slice(5)]: sample.bad };
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const r = await app.inject({
          method: t.method as 'GET',
          url,
          headers: { ...auth, ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
          ...(payload !== undefined ? { payload } : {}),
        });
        sent++;
        statuses.set(r.statusCode, (statuses.get(r.statusCode) ?? 0) + 1);
        const what = `${t.method} ${url.slice(0, 300)} ${payload?.slice(0, 300) ?? ''} → ${r.statusCode} ${r.body.slice(0, 300)}`;
        if (r.statusCode >= 500) failures.push(what);
        else if (r.statusCode === 400 && !named.some((n) => String(r.json().message).includes(n))) failures.push(`unnamed field: ${what}`);
      }
    }
    t.diagnostic(`${targets.length} operations, ${sent} requests; statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
    assert.ok(sent >= targets.length * RUNS_PER_OPERATION);
    // The valid values must reach past validation often, or the handlers go untested.
    assert.ok(
      (statuses.get(200) ?? 0) + (statuses.get(201) ?? 0) + (statuses.get(202) ?? 0) + (statuses.get(404) ?? 0) > sent / 10,
      JSON.stringify(Object.fromEntries(statuses)),
    );
    assert.deepEqual(failures, []);
  });
});
