// Every example in the served OpenAPI document (/docs/json) is valid against
// the schema it illustrates (issue 23: redocly found an /v1/reports/unprotected
// example without the now-required `origin`). Checked with ajv and the API's
// own reading of dates (core/instant.ts), over every route the api role serves.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { buildApp, type App } from '../../api/app.js';
import { ApiTokenVerifier } from '../../core/apiTokens.js';
import { isCalendarDate, parseInstant } from '../../core/instant.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { HealthState } from '../../platform/health.js';
import { apiRoutes } from '../../roles/index.js';
import { LockService } from '../../lock/service.js';
import { originSecret } from '../../core/originSecret.js';
import { lockCluster } from '../../roles/lockEngine.js';
import { tempDir, tempStore, testConfig } from '../support/env.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every (where, schema, example) in the document: a schema's `examples`/`example`, and a media type's or parameter's `example(s)` against its schema. */
function examplesOf(doc: unknown): Array<{ where: string; schema: Node; example: unknown }> {
  const found: Array<{ where: string; schema: Node; example: unknown }> = [];
  const walk = (v: unknown, where: string): void => {
    if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${where}/${i}`));
    if (!isNode(v)) return;
    const schemaLike = ['type', 'properties', 'anyOf', 'oneOf', 'allOf', 'enum', 'const', 'pattern', 'items'].some((k) => k in v);
    if (schemaLike) {
      const { examples, example, ...schema } = v;
      if (Array.isArray(examples)) examples.forEach((e, i) => found.push({ where: `${where} examples/${i}`, schema, example: e }));
      if (example !== undefined) found.push({ where: `${where} example`, schema, example });
    } else if (isNode(v.schema)) {
      // An OpenAPI media type or parameter: example, or examples as { name: { value } }.
      if (v.example !== undefined) found.push({ where: `${where} example`, schema: v.schema, example: v.example });
      if (isNode(v.examples))
        for (const [name, e] of Object.entries(v.examples))
          if (isNode(e) && 'value' in e) found.push({ where: `${where} examples/${name}`, schema: v.schema, example: e.value });
    }
    for (const [k, child] of Object.entries(v)) walk(child, `${where}/${k}`);
  };
  walk(doc, '#');
  return found;
}

describe('OpenAPI examples', () => {
  let app: App;
  let lock: LockService | undefined;
  const data = tempDir('lockaudit-examples-');
  let closeStore: () => Promise<void>;

  before(async () => {
    const temp = await tempStore();
    closeStore = temp.close;
    const config = testConfig();
    // Every route of the api role, the lock API's too: a lock engine that is never asked anything (no etcd call is made).
    lock = new LockService({
      cluster: lockCluster(config),
      dataDir: data.dir,
      originSecret: originSecret(config),
      logger: createLogger('silent'),
      metrics: createMetricsRegistry(),
    });
    app = await buildApp(
      {
        config,
        logger: createLogger('silent'),
        store: temp.store,
        verifier: new ApiTokenVerifier(temp.store),
        health: new HealthState(),
        metrics: createMetricsRegistry(),
      },
      apiRoutes(lock),
    );
  });
  after(async () => {
    await app?.close();
    await lock?.close();
    data.remove();
    await closeStore?.();
  });

  it('every example in /docs/json validates against its schema', async () => {
    const res = await app.inject({ method: 'GET', url: '/docs/json' });
    assert.equal(res.statusCode, 200);
    const doc = res.json() as { paths: Record<string, unknown> };
    assert.ok(
      doc.paths['/v1/reports/unprotected'] && doc.paths['/v1/locks/acquire'] && doc.paths['/v1/quarantine'],
      'every route of the api role is documented',
    );
    const ajv = addFormats(new Ajv({ strict: false, allErrors: true, validateSchema: false }))
      .addFormat('date-time', { type: 'string', validate: (s: string) => parseInstant(s) !== undefined })
      .addFormat('date', { type: 'string', validate: isCalendarDate });
    const examples = examplesOf(doc);
    assert.ok(examples.length >= 50, `${examples.length} examples found`);
    assert.ok(
      examples.some((e) => e.where.includes('/v1~1reports~1unprotected') || e.where.includes('/v1/reports/unprotected')),
      "the unprotected report's examples are among them",
    );
    const invalid: string[] = [];
    for (const { where, schema, example } of examples) {
      const validate = ajv.compile(schema);
      if (!validate(example)) invalid.push(`${where}: ${ajv.errorsText(validate.errors)}`);
    }
    assert.deepEqual(invalid, []);
  });
});
