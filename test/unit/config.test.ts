import { generateKeyPairSync } from 'node:crypto';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { configDefaults, envVars, FileConfigSchema, loadConfig, maskedConfig, parseEtcdClusters } from '../../core/config.js';
import { isLockauditError } from '../../core/errors.js';
import { tempDir } from '../support/env.js';

interface SchemaNode {
  type?: string;
  default?: unknown;
  properties?: Record<string, SchemaNode>;
}

/** Every setting of the file schema as a dotted path, with its schema. */
function settings(node: SchemaNode, prefix: string[] = []): Array<{ path: string[]; schema: SchemaNode }> {
  return Object.entries(node.properties ?? {}).flatMap(([key, child]) =>
    child.type === 'object' && child.properties ? settings(child, [...prefix, key]) : [{ path: [...prefix, key], schema: child }],
  );
}

function problems(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig({ env, cwd: '/srv' });
  } catch (err) {
    assert.ok(isLockauditError(err, 'LOCKAUDIT_ERR_CONFIG_INVALID') || isLockauditError(err, 'LOCKAUDIT_ERR_CONFIG_FILE'), String(err));
    return [...err.details, err.message];
  }
  assert.fail('expected the configuration to be rejected');
}

describe('config', () => {
  it('has documented defaults', () => {
    const c = loadConfig({ env: {}, cwd: '/srv' });
    assert.equal(c.dataDir, '/srv/.lockaudit');
    assert.equal(c.port, 8080);
    assert.deepEqual(c.etcd.clusters, [{ name: 'local', endpoints: ['http://127.0.0.1:23000'] }]);
    assert.deepEqual(c.clickhouse, { mode: 'embedded', path: '/srv/.lockaudit/clickhouse', database: 'lockaudit' });
    assert.equal(c.s3.endpoint, 'http://127.0.0.1:23030');
    assert.equal(c.redis.url, 'redis://127.0.0.1:23020');
    assert.ok(c.etcd.local && c.s3.local && c.redis.local);
  });

  it('moves every local port with the port base and lists three etcd members', () => {
    const c = loadConfig({ env: { LOCKAUDIT_LOCAL_PORT_BASE: '40000', LOCKAUDIT_LOCAL_ETCD_MEMBERS: '3' }, cwd: '/srv' });
    assert.deepEqual(c.etcd.clusters[0]?.endpoints, ['http://127.0.0.1:40000', 'http://127.0.0.1:40001', 'http://127.0.0.1:40002']);
    assert.equal(c.local.ports.redis, 40020);
  });

  it('parses several etcd clusters', () => {
    assert.deepEqual(parseEtcdClusters('a=http://h1:2379,http://h2:2379; b=https://x:2379'), [
      { name: 'a', endpoints: ['http://h1:2379', 'http://h2:2379'] },
      { name: 'b', endpoints: ['https://x:2379'] },
    ]);
  });

  const cases: Array<[string, NodeJS.ProcessEnv, RegExp]> = [
    ['a non-numeric port', { LOCKAUDIT_PORT: 'eighty' }, /LOCKAUDIT_PORT: must be an integer/],
    ['a port out of range', { LOCKAUDIT_PORT: '70000' }, /LOCKAUDIT_PORT \(port\): must be <= 65535/],
    ['an etcd spec without a name', { LOCKAUDIT_ETCD: 'http://h:2379' }, /LOCKAUDIT_ETCD: "http:\/\/h:2379" is not name=url/],
    ['an etcd url that is not http', { LOCKAUDIT_ETCD: 'a=tcp://h:2379' }, /LOCKAUDIT_ETCD \(etcd\.0\.endpoints\.0\): must match pattern/],
    ['a duplicated etcd cluster', { LOCKAUDIT_ETCD: 'a=http://h:1;a=http://h:2' }, /named twice/],
    ['a ClickHouse URL that is not http', { LOCKAUDIT_CLICKHOUSE_URL: 'clickhouse.local:8123' }, /LOCKAUDIT_CLICKHOUSE_URL \(clickhouse\.url\)/],
    ['an unknown log level', { LOCKAUDIT_LOG_LEVEL: 'loud' }, /LOCKAUDIT_LOG_LEVEL \(logLevel\): must be one of fatal/],
    ['two etcd members', { LOCKAUDIT_LOCAL_ETCD_MEMBERS: '2' }, /LOCKAUDIT_LOCAL_ETCD_MEMBERS \(local\.etcdMembers\): must be 1 or 3/],
    ['a Redis URL of another scheme', { LOCKAUDIT_REDIS_URL: 'http://r:6379' }, /LOCKAUDIT_REDIS_URL \(redisUrl\)/],
    ['an unknown LOCKAUDIT_ variable', { LOCKAUDIT_PROT: '8080' }, /LOCKAUDIT_PROT: unknown setting/],
  ];
  for (const [what, env, expected] of cases) {
    it(`rejects ${what}, naming the key`, () => {
      const found = problems(env);
      assert.ok(
        found.some((p) => expected.test(p)),
        `expected ${expected} in:\n${found.join('\n')}`,
      );
    });
  }

  it('reports every problem at once', () => {
    const found = problems({ LOCKAUDIT_PORT: '0', LOCKAUDIT_LOG_LEVEL: 'x' });
    assert.ok(found.some((p) => p.startsWith('LOCKAUDIT_PORT')));
    assert.ok(found.some((p) => p.startsWith('LOCKAUDIT_LOG_LEVEL')));
  });

  it('reads a YAML file, rejects its unknown keys, and lets env override it', () => {
    const tmp = tempDir();
    try {
      const good = path.join(tmp.dir, 'good.yaml');
      writeFileSync(
        good,
        'port: 9000\netcd:\n  - name: east\n    endpoints: [http://e1:2379]\ns3:\n  endpoint: http://minio:9000\n  accessKey: abc\n  secretKey: supersecret\n',
      );
      const c = loadConfig({ env: { LOCKAUDIT_CONFIG: good, LOCKAUDIT_PORT: '9100' }, cwd: tmp.dir });
      assert.equal(c.port, 9100);
      assert.equal(c.etcd.clusters[0]?.name, 'east');
      assert.equal(c.etcd.local, false);
      assert.equal(c.s3.local, false);
      assert.equal(maskedConfig(c).s3 && (maskedConfig(c).s3 as { secretKey: string }).secretKey, '****');

      const bad = path.join(tmp.dir, 'bad.yaml');
      writeFileSync(bad, 'port: 9000\nprot: 1\ns3:\n  bucket: x\n');
      const found = problems({ LOCKAUDIT_CONFIG: bad });
      assert.ok(
        found.some((p) => p === 'prot: unknown key'),
        found.join('\n'),
      );
      assert.ok(
        found.some((p) => p === 's3.bucket: unknown key'),
        found.join('\n'),
      );

      const broken = path.join(tmp.dir, 'broken.yaml');
      writeFileSync(broken, 'port: [1,\n');
      assert.ok(problems({ LOCKAUDIT_CONFIG: broken }).some((p) => /not valid YAML/.test(p)));
      assert.ok(problems({ LOCKAUDIT_CONFIG: path.join(tmp.dir, 'missing.yaml') }).some((p) => /cannot read/.test(p)));
    } finally {
      tmp.remove();
    }
  });

  it('reads alert webhooks from the file: defaults none, rejects unknown rule keys and kinds, masks the secret', () => {
    assert.deepEqual(loadConfig({ env: {}, cwd: '/srv' }).alerts, { webhooks: [] });
    const tmp = tempDir();
    try {
      const good = path.join(tmp.dir, 'alerts.yaml');
      writeFileSync(
        good,
        'alerts:\n  webhooks:\n    - name: siem\n      url: https://siem.corp/in\n      secret: shared-secret-0123456789\n      rules:\n        - kinds: [force-release, gap]\n        - kinds: [expiry]\n          purposes: [correctness]\n',
      );
      const c = loadConfig({ env: { LOCKAUDIT_CONFIG: good }, cwd: tmp.dir });
      assert.deepEqual(c.alerts.webhooks[0]?.rules, [{ kinds: ['force-release', 'gap'] }, { kinds: ['expiry'], purposes: ['correctness'] }]);
      assert.ok(!JSON.stringify(maskedConfig(c)).includes('shared-secret-0123456789'), 'the webhook secret is masked');
      const bad = path.join(tmp.dir, 'bad-alerts.yaml');
      writeFileSync(
        bad,
        'alerts:\n  webhooks:\n    - name: siem\n      url: https://siem.corp/in\n      secret: shared-secret-0123456789\n      rules:\n        - kinds: [force-release]\n          namespace: [payments]\n',
      );
      assert.ok(
        problems({ LOCKAUDIT_CONFIG: bad }).some((p) => p === 'alerts.webhooks.0.rules.0.namespace: unknown key'),
        problems({ LOCKAUDIT_CONFIG: bad }).join('\n'),
      );
      const kind = path.join(tmp.dir, 'bad-kind.yaml');
      writeFileSync(
        kind,
        'alerts:\n  webhooks:\n    - name: siem\n      url: https://siem.corp/in\n      secret: shared-secret-0123456789\n      rules:\n        - kinds: [explosion]\n',
      );
      assert.ok(
        problems({ LOCKAUDIT_CONFIG: kind }).some((p) => p.startsWith('alerts.webhooks.0.rules.0.kinds.0:')),
        problems({ LOCKAUDIT_CONFIG: kind }).join('\n'),
      );
    } finally {
      tmp.remove();
    }
  });

  it('masks secrets in the effective config', () => {
    const c = loadConfig({
      env: { LOCKAUDIT_REDIS_URL: 'redis://:hunter2@r:6379', LOCKAUDIT_CLICKHOUSE_URL: 'http://ch:8123', LOCKAUDIT_CLICKHOUSE_PASSWORD: 'pw-secret' },
      cwd: '/',
    });
    const text = JSON.stringify(maskedConfig(c));
    assert.ok(!text.includes('hunter2') && !text.includes('pw-secret') && !text.includes('lockaudit-local-secret'), text);
  });

  it('has one environment variable for every setting of the schema', () => {
    const byPath = new Map(envVars.map((v) => [v.path.join('.'), v.name]));
    const missing = settings(FileConfigSchema as SchemaNode)
      .map((s) => s.path.join('.'))
      .filter((p) => !byPath.has(p));
    assert.deepEqual(missing, []);
    assert.equal(byPath.size, envVars.length, 'no setting has two variables');
  });

  it('sets the tailer batch bounds from the environment', () => {
    const c = loadConfig({ env: { LOCKAUDIT_TAILER_BATCH_MAX_ROWS: '5000', LOCKAUDIT_TAILER_BATCH_MAX_DELAY_MS: '50' }, cwd: '/srv' });
    assert.equal(c.tailer.batchMaxRows, 5000);
    assert.equal(c.tailer.batchMaxDelayMs, 50);
    assert.ok(problems({ LOCKAUDIT_TAILER_BATCH_MAX_DELAY_MS: '0' }).some((p) => p.startsWith('LOCKAUDIT_TAILER_BATCH_MAX_DELAY_MS')));
  });

  it('takes each default from the schema: the loaded config, configDefaults and docs/configuration.md agree', () => {
    const c = loadConfig({ env: {}, cwd: '/srv' });
    assert.deepEqual(c.tailer, configDefaults.tailer);
    assert.deepEqual(c.reports, configDefaults.reports);
    assert.deepEqual(c.tailer, {
      electionTtlSeconds: 5,
      compactionWindowRevisions: 1_000_000,
      catchUpWindows: 16,
      batchMaxRows: 20_000,
      batchMaxDelayMs: 200,
      catchUpBatchMaxRows: 50_000,
      catchUpBatchMaxDelayMs: 1_000,
    });
    const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    const start = doc.indexOf('\n## Settings\n');
    assert.ok(start >= 0, 'docs/configuration.md has a "## Settings" section');
    const end = doc.indexOf('\n## ', start + 1);
    const rows = doc
      .slice(start, end < 0 ? undefined : end)
      .split('\n')
      .filter((l) => l.startsWith('| `LOCKAUDIT_'));
    // A row may name a pair: `LOCKAUDIT_S3_ACCESS_KEY` / `_SECRET_KEY`.
    const named = rows.flatMap((r) => {
      const [first, ...rest] = [...(r.split('|')[1] ?? '').matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1] as string);
      if (!first) return [];
      return [
        first,
        ...rest.map(
          (tail) =>
            first
              .split('_')
              .slice(0, -(tail.split('_').length - 1))
              .join('_') + tail,
        ),
      ];
    });
    assert.deepEqual(
      envVars.map((v) => v.name).filter((n) => !named.includes(n)),
      [],
      'the settings table of docs/configuration.md names every variable',
    );
    for (const { path: p, schema } of settings(FileConfigSchema as SchemaNode)) {
      if (schema.default === undefined) continue;
      const key = p.join('.');
      const row = rows.find((r) => r.split('|')[2]?.includes(`\`${key}\``));
      assert.ok(row, `the settings table of docs/configuration.md has ${key}`);
      assert.equal(row.split('|')[3]?.trim(), `\`${String(schema.default)}\``, `docs/configuration.md default of ${key}`);
    }
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
    assert.deepEqual(loadConfig({ env: {}, cwd: '/srv' }).reports, {
      riskRegisterCron: '0 2 * * *',
      riskRegisterTz: 'UTC',
      maxWindowDays: 31,
      maxPageSize: 1000,
      queryTimeoutMs: 30_000,
      rateLimitPerMinute: 120,
      exportRequestsPerHour: 20,
      exportMaxActive: 2,
      exportMaxRangeDays: 400,
    });
    const c = loadConfig({
      env: { LOCKAUDIT_RISK_REGISTER_CRON: '*/2 * * * * *', LOCKAUDIT_RISK_REGISTER_TZ: 'Europe/Zurich', LOCKAUDIT_MAX_PAGE_SIZE: '50' },
      cwd: '/srv',
    });
    assert.equal(c.reports.riskRegisterCron, '*/2 * * * * *');
    assert.equal(c.reports.riskRegisterTz, 'Europe/Zurich');
    assert.equal(c.reports.maxPageSize, 50);
  });
  it('rejects an unknown time zone, a cron that is not one, and limits out of range, naming the variable', () => {
    assert.match(problems({ LOCKAUDIT_RISK_REGISTER_TZ: 'Mars/Olympus' }), /LOCKAUDIT_RISK_REGISTER_TZ \(reports\.riskRegisterTz\): unknown time zone/);
    assert.match(problems({ LOCKAUDIT_RISK_REGISTER_CRON: 'nightly' }), /LOCKAUDIT_RISK_REGISTER_CRON \(reports\.riskRegisterCron\)/);
    // Five fields that are no cron (the pattern alone passed them; `start` then died in the scheduler with a stack).
    assert.match(
      problems({ LOCKAUDIT_RISK_REGISTER_CRON: '99 99 * * *' }),
      /LOCKAUDIT_RISK_REGISTER_CRON \(reports\.riskRegisterCron\): not a cron pattern "99 99 \* \* \*" \(Constraint error/,
    );
    assert.match(problems({ LOCKAUDIT_RISK_REGISTER_CRON: '0 0 31 2 *' }), /LOCKAUDIT_RISK_REGISTER_CRON \(reports\.riskRegisterCron\): not a cron pattern/);
    assert.equal(loadConfig({ env: { LOCKAUDIT_RISK_REGISTER_CRON: '*/5 * * * * *' }, cwd: '/srv' }).reports.riskRegisterCron, '*/5 * * * * *');
    // A listen address that is no address (before: `start` died in getaddrinfo with a stack).
    assert.match(problems({ LOCKAUDIT_HOST: 'not a host!' }), /LOCKAUDIT_HOST \(host\): "not a host!" is neither an IP address nor a host name/);
    for (const host of ['0.0.0.0', '::', '127.0.0.1', 'fe80::1%lo', 'localhost', 'localhost.', 'my_host', 'api.internal.example.com'])
      assert.equal(loadConfig({ env: { LOCKAUDIT_HOST: host }, cwd: '/srv' }).host, host);
    assert.match(problems({ LOCKAUDIT_QUERY_TIMEOUT_MS: '5' }), /LOCKAUDIT_QUERY_TIMEOUT_MS \(reports\.queryTimeoutMs\): must be >= 100/);
    assert.match(problems({ LOCKAUDIT_RATE_LIMIT_PER_MINUTE: 'lots' }), /LOCKAUDIT_RATE_LIMIT_PER_MINUTE: must be an integer/);
    // A digest signing key that cannot sign (before: `lockaudit config` passed it, and only the worker said so, at start).
    assert.match(
      problems({ LOCKAUDIT_DIGEST_SIGNING_KEY: 'not-a-key-'.repeat(6) }),
      /LOCKAUDIT_DIGEST_SIGNING_KEY \(digestSigningKey\): not a PKCS#8 private key/,
    );
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    assert.match(problems({ LOCKAUDIT_DIGEST_SIGNING_KEY: rsa }), /LOCKAUDIT_DIGEST_SIGNING_KEY \(digestSigningKey\): an rsa key, expected Ed25519/);
    const ed = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    assert.equal(loadConfig({ env: { LOCKAUDIT_DIGEST_SIGNING_KEY: ed }, cwd: '/srv' }).digestSigningKey, ed);
    // The message names the setting, never the key.
    assert.doesNotMatch(problems({ LOCKAUDIT_DIGEST_SIGNING_KEY: rsa }), /BEGIN/);
  });
});
