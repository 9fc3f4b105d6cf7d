// Token lifecycle through the API (admin) and the CLI: create with expiry,
// list with last use, revoke — refused by every process's verifier within
// its 4 s cache life — and each step recorded in token_audit.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { buildApp, type App } from '../../api/app.js';
import { ApiTokenVerifier, createApiToken, listApiTokens, TOKEN_CACHE_TTL_MS } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { embeddedHolder } from '../../core/embeddedOwner.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { projectRoot } from '../../core/paths.js';
import { HealthState } from '../../platform/health.js';
import { tempDir, tempStore, testConfig } from '../support/env.js';

const run = promisify(execFile);

describe('token lifecycle', () => {
  let app: App;
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let admin: string;

  before(async () => {
    const temp = await tempStore();
    store = temp.store;
    closeStore = temp.close;
    app = await buildApp(
      {
        config: testConfig(),
        logger: createLogger('silent'),
        store,
        verifier: new ApiTokenVerifier(store),
        health: new HealthState(),
        metrics: createMetricsRegistry(),
      },
      [],
    );
    admin = (await createApiToken(store, 'root@corp', ['admin'])).token;
  });
  after(async () => {
    await app.close();
    await closeStore();
  });

  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, token: string, body?: unknown) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(body === undefined ? {} : { payload: body as object }) });

  it('creates, lists with last use, and revokes through the API; only admins may', async () => {
    const created = await call('POST', '/v1/tokens', admin, { identity: 'ivy@corp', roles: ['investigator'], expiresInSeconds: 3600 });
    assert.equal(created.statusCode, 201, created.body);
    const { token, tokenId, expiresAt } = created.json() as { token: string; tokenId: string; expiresAt: string };
    assert.ok(Date.parse(expiresAt) > Date.now() + 3_500_000);
    assert.equal((await call('GET', '/v1/whoami', token)).json().identity, 'ivy@corp');
    assert.equal((await call('GET', '/v1/tokens', token)).statusCode, 403);

    const listed = (await call('GET', '/v1/tokens', admin)).json().items as Array<{
      tokenId: string;
      lastUsedAt: string | null;
      revoked: boolean;
      issuedBy: string;
      expiresAt: string;
    }>;
    const mine = listed.find((t) => t.tokenId === tokenId);
    assert.ok(mine, JSON.stringify(listed));
    assert.equal(mine.issuedBy, 'root@corp');
    assert.equal(mine.expiresAt, expiresAt);
    assert.ok(mine.lastUsedAt, 'the use of the token is recorded');
    assert.ok(!JSON.stringify(listed).includes(token), 'a list never shows a token');

    const revoked = await call('DELETE', `/v1/tokens/${tokenId}`, admin);
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.equal(revoked.json().revoked, true);
    assert.equal((await call('DELETE', '/v1/tokens/000000000000', admin)).statusCode, 404);
    assert.match((await call('DELETE', '/v1/tokens/nothex', admin)).json().message, /params\.id/);

    const audit = await store.rows<{ action: string; actor: string }>(
      'SELECT action, actor FROM {db:Identifier}.token_audit WHERE token_id = {id:String} ORDER BY at',
      { id: tokenId },
    );
    assert.deepEqual(
      audit.map((a) => a.action),
      ['create', 'use', 'revoke'],
    );
    assert.equal(audit[2]?.actor, 'root@corp');
  });

  it('a revoked token is refused by another process once its cache entry ends, under 5 s', async () => {
    let now = 1_000_000;
    const elsewhere = new ApiTokenVerifier(store, { now: () => now, cacheTtlMs: 60_000 }); // a longer TTL is capped
    const { token, tokenId } = await createApiToken(store, 'spiffe://corp/worker', ['client']);
    assert.ok(await elsewhere.verify(token));
    assert.equal((await call('DELETE', `/v1/tokens/${tokenId}`, admin)).statusCode, 200);
    assert.ok(TOKEN_CACHE_TTL_MS < 5_000);
    now += TOKEN_CACHE_TTL_MS + 1;
    assert.equal(await elsewhere.verify(token), undefined);
  });

  it('an expired token is refused, also from cache', async () => {
    let now = Date.now();
    const verifier = new ApiTokenVerifier(store, { now: () => now });
    const { token } = await createApiToken(store, 'tmp@corp', ['client'], { expiresInSeconds: 60, nowMs: now });
    assert.ok(await verifier.verify(token));
    now += 61_000;
    assert.equal(await verifier.verify(token), undefined);
  });
});

describe('token CLI', () => {
  const cli = path.join(projectRoot, 'bin', 'lockaudit.js');
  it('creates, lists and revokes with the store when no platform runs', async () => {
    const data = tempDir('lockaudit-cli-tokens-');
    // No USER or LOGNAME (cron, containers, sudo -i): the audit still names the OS account (before: "cli:unknown").
    const { USER: _user, LOGNAME: _logname, ...rest } = process.env;
    const env = { ...rest, LOCKAUDIT_DATA_DIR: data.dir };
    try {
      const created = await run('node', [cli, 'token', 'create', '--identity', 'ivy@corp', '--roles', 'investigator', '--expires-in', '12h'], { env });
      const token = created.stdout.trim();
      assert.match(token, /^la_[a-f0-9]{12}_/);
      assert.match(created.stderr, /expires 20\d\d-/);
      const id = token.slice(3, 15);
      assert.match((await run('node', [cli, 'token', 'list'], { env })).stdout, new RegExp(`${id}\\s+ivy@corp\\s+investigator`));
      await run('node', [cli, 'token', 'revoke', id], { env });
      const listed = JSON.parse((await run('node', [cli, 'token', 'list', '--json'], { env })).stdout) as Array<{ tokenId: string; revoked: boolean }>;
      assert.equal(listed.find((t) => t.tokenId === id)?.revoked, true);
      assert.equal((listed.find((t) => t.tokenId === id) as { issuedBy?: string } | undefined)?.issuedBy, `cli:${userInfo().username}`);
      await assert.rejects(
        run('node', [cli, 'token', 'create', '--identity', 'x', '--roles', 'client', '--expires-in', 'soon'], { env }),
        /--expires-in|expires-in/,
      );
      // A scoped token (issue 44): its scope in the list; an admin token cannot have one.
      const scoped = await run('node', [cli, 'token', 'create', '--identity', 'pat@payments', '--roles', 'investigator', '--namespaces', 'payments,billing'], {
        env,
      });
      assert.match(scoped.stderr, /reads only ns=billing,payments/);
      const scopedId = scoped.stdout.trim().slice(3, 15);
      assert.match((await run('node', [cli, 'token', 'list'], { env })).stdout, new RegExp(`${scopedId}\\s+pat@payments\\s+investigator.*ns=billing,payments`));
      await assert.rejects(
        run('node', [cli, 'token', 'create', '--identity', 'x', '--roles', 'admin', '--namespaces', 'payments'], { env }),
        /--namespaces: an admin token cannot be scoped/,
      );
    } finally {
      data.remove();
    }
  });

  it('a status file left by a killed process is no holder, even when its pid now names a live node process (reviewer)', async () => {
    const data = tempDir('lockaudit-cli-stale-');
    const config = testConfig({ LOCKAUDIT_DATA_DIR: data.dir });
    const chPath = config.clickhouse.mode === 'embedded' ? config.clickhouse.path : '';
    const sleeper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      // What chdb leaves after SIGKILL (or a shutdown past its deadline): the status file, its lock gone.
      mkdirSync(chPath, { recursive: true });
      writeFileSync(path.join(chPath, 'status'), `PID: ${sleeper.pid}\nStarted at: 2026-12-03 00:00:00\nRevision: 0\n`);
      assert.equal(embeddedHolder(chPath), undefined);
      // Exits 0 (run rejects otherwise): before, STORE_BUSY naming the sleeper.
      const migrated = await run('node', [cli, 'migrate'], { env: { ...process.env, LOCKAUDIT_DATA_DIR: data.dir } });
      assert.doesNotMatch(migrated.stderr, /holds the embedded ClickHouse/);
    } finally {
      sleeper.kill();
      data.remove();
    }
  });

  it('while a process holds the embedded ClickHouse: one line naming its pid, or through the API with an admin token', async () => {
    const data = tempDir('lockaudit-cli-held-');
    const config = testConfig({ LOCKAUDIT_DATA_DIR: data.dir });
    assert.equal(config.clickhouse.mode, 'embedded');
    const chPath = config.clickhouse.mode === 'embedded' ? config.clickhouse.path : '';
    // A stand-in for the running platform: a process that opened the same chdb data dir.
    const holder = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `import('${path.join(projectRoot, 'core', 'clickhouse.ts')}').then(async ({ AuditStore }) => { const s = new AuditStore({ mode: 'embedded', path: ${JSON.stringify(chPath)}, database: 'default' }); await s.rows('SELECT 1'); process.stdout.write('open\\n'); setInterval(() => {}, 1000); })`,
      ],
      { cwd: projectRoot, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const temp = await tempStore();
    const port = config.local.portBase + 45;
    const api = await buildApp(
      {
        config,
        logger: createLogger('silent'),
        store: temp.store,
        verifier: new ApiTokenVerifier(temp.store),
        health: new HealthState(),
        metrics: createMetricsRegistry(),
      },
      [],
    );
    try {
      await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
      const env = { ...process.env, LOCKAUDIT_DATA_DIR: data.dir, LOCKAUDIT_PORT: String(port) };
      const refused = await run('node', [cli, 'token', 'list'], { env }).then(
        () => undefined,
        (err: { stderr: string }) => err.stderr,
      );
      assert.ok(refused, 'the CLI must not succeed without the store or a token');
      assert.equal(refused.trim().split('\n').length, 1, refused);
      assert.match(refused, new RegExp(`pid ${holder.pid}.*--admin-token or LOCKAUDIT_ADMIN_TOKEN`));
      // Every other command that opens the store says the same in one line (before: chdb's lock error and a stack trace).
      for (const args of [['doctor'], ['migrate'], ['export', 'history', '--from', '2026-01-01', '--to', '2026-01-01']]) {
        const failed = await run('node', [cli, ...args], { env }).then(
          () => undefined,
          (err: { stderr: string; code: number }) => err,
        );
        assert.ok(failed, `${args.join(' ')} must not succeed`);
        assert.equal(failed.code, 1, args.join(' '));
        assert.equal(failed.stderr.trim().split('\n').length, 1, `${args.join(' ')}: ${failed.stderr}`);
        assert.match(failed.stderr, new RegExp(`^lockaudit: the running process pid ${holder.pid} holds the embedded ClickHouse in `), args.join(' '));
      }

      await api.listen({ host: '127.0.0.1', port });
      const adminToken = (await createApiToken(temp.store, 'root@corp', ['admin'])).token;
      const viaApi = { env: { ...env, LOCKAUDIT_ADMIN_TOKEN: adminToken } };
      const token = (await run('node', [cli, 'token', 'create', '--identity', 'ivy@corp', '--roles', 'investigator'], viaApi)).stdout.trim();
      const id = token.slice(3, 15);
      assert.match((await run('node', [cli, 'token', 'list'], viaApi)).stdout, new RegExp(`${id}\\s+ivy@corp`));
      await run('node', [cli, 'token', 'revoke', id, '--admin-token', adminToken], { env });
      assert.equal((await listApiTokens(temp.store, id))[0]?.revoked, true);
    } finally {
      holder.kill();
      await api.close();
      await temp.close();
      data.remove();
    }
  });
});
