// The lockaudit command itself: --help everywhere, bad flags and bad config
// answered with a message naming what is wrong and exit code 2.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { projectRoot } from '../../core/paths.js';
import { tempDir } from '../support/env.js';

const run = promisify(execFile);

async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LOCKAUDIT_')));
  try {
    const r = await run(process.execPath, ['bin/lockaudit.js', ...args], {
      cwd: projectRoot,
      env: { ...clean, LOCKAUDIT_DATA_DIR: '/nonexistent/lockaudit-cli-test', ...env },
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('lockaudit CLI', () => {
  it('documents every command with --help', async () => {
    const top = await cli(['--help']);
    assert.equal(top.code, 0);
    for (const command of ['start', 'api', 'tailer', 'worker', 'migrate', 'services', 'doctor', 'token', 'config'])
      assert.match(top.stdout, new RegExp(`^  ${command}\\b`, 'm'), command);
    for (const sub of [['services', 'up'], ['services', 'down'], ['services', 'status'], ['token', 'create'], ['doctor'], ['migrate']]) {
      const r = await cli([...sub, '--help']);
      assert.equal(r.code, 0, sub.join(' '));
      assert.match(r.stdout, /^Usage: lockaudit /m);
    }
  });

  it('answers an unknown command or option with exit 2', async () => {
    const unknown = await cli(['frobnicate']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command 'frobnicate'/);
    const badOption = await cli(['services', 'status', '--jsn']);
    assert.equal(badOption.code, 2);
    assert.match(badOption.stderr, /unknown option '--jsn'/);
  });

  it('names a bad flag value', async () => {
    const roles = await cli(['token', 'create', '--identity', 'alice', '--roles', 'client,superuser']);
    assert.equal(roles.code, 2);
    assert.match(roles.stderr, /--roles.*unknown role "superuser"/);
    const only = await cli(['services', 'up', '--only', 'etcd,postgres']);
    assert.equal(only.code, 2);
    assert.match(only.stderr, /--only.*expected a comma-separated list of etcd, redis, minio/);
    // Before: an ENOENT stack trace once the export had run.
    const nowhere = await cli(['export', 'grants', '--from', '2026-12-01', '--to', '2026-12-02', '--out', '/nonexistent-dir/x.parquet']);
    assert.equal(nowhere.code, 2);
    assert.equal(nowhere.stderr.trim(), 'lockaudit: --out: the directory /nonexistent-dir does not exist');
    const missing = await cli(['token', 'create', '--roles', 'client']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /required option '--identity <name>' not specified/);
  });

  it("runs the runbook's SQL on the embedded store: rows as JSON lines, {db:Identifier} bound, a bad statement in one line", async () => {
    const data = tempDir('lockaudit-cli-sql-');
    try {
      const env = { LOCKAUDIT_DATA_DIR: data.dir };
      assert.equal((await cli(['migrate', '--no-buckets'], env)).code, 0);
      const made = await cli(['sql', 'CREATE TABLE {db:Identifier}.runbook_probe (x UInt8) ENGINE = MergeTree ORDER BY x'], env);
      assert.equal(made.code, 0, made.stderr);
      assert.equal((await cli(['sql', 'INSERT INTO {db:Identifier}.runbook_probe VALUES (7), (9)'], env)).code, 0);
      const rows = await cli(['sql', 'SELECT x FROM {db:Identifier}.runbook_probe ORDER BY x'], env);
      assert.equal(rows.code, 0, rows.stderr);
      assert.equal(rows.stdout, '{"x":7}\n{"x":9}\n');
      const shown = await cli(['sql', 'SHOW CREATE TABLE {db:Identifier}.events'], env);
      assert.match(shown.stdout, /ReplacingMergeTree/);
      // An export naming a cluster no tailer captured is refused before anything is written (before: a file of 0 rows).
      const out = `${data.dir}/none.parquet`;
      const typo = await cli(['export', 'grants', '--from', '2026-12-01', '--to', '2026-12-02', '--cluster', 'nope', '--out', out], env);
      assert.equal(typo.code, 2, typo.stderr);
      assert.equal(typo.stderr.trim(), 'lockaudit: --cluster: no etcd cluster named "nope" is configured or captured');
      // The history backfill too: one line, exit 2, before the bucket or any day (before: one failure per day, exit 1).
      const history = await cli(['export', 'history', '--from', '2026-11-01', '--to', '2026-11-30', '--cluster', 'nope'], env);
      assert.equal(history.code, 2, history.stderr);
      assert.equal(history.stderr.trim(), 'lockaudit: --cluster: no etcd cluster named "nope" is configured or captured');
      const bad = await cli(['sql', 'SELEC 1'], env);
      assert.equal(bad.code, 1);
      assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
      assert.match(bad.stderr, /^lockaudit: sql: .*Syntax error/);
    } finally {
      data.remove();
    }
  });

  it('start with its local services not running names each one and `lockaudit services up`, before opening anything (no stack trace)', async () => {
    const data = tempDir('lockaudit-cli-down-');
    try {
      const r = await cli(['start'], { LOCKAUDIT_DATA_DIR: data.dir, LOCKAUDIT_PORT: '18765' });
      assert.equal(r.code, 1, r.stdout + r.stderr);
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      assert.match(
        lines[0] ?? '',
        /^lockaudit: cannot start: etcd:local does not answer \(.*\); s3 does not answer \(.*\)\. start the local services: lockaudit services up \(data dir /,
      );
      assert.doesNotMatch(r.stderr, /\n\s+at /);
      assert.equal(existsSync(path.join(data.dir, 'clickhouse')), false, 'the store was not opened, no migration applied');
    } finally {
      data.remove();
    }
  });

  it('refuses a bad configuration naming the variable, before doing anything', async () => {
    const r = await cli(['config'], { LOCKAUDIT_PORT: 'http', LOCKAUDIT_ETCD: 'nourl' });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /LOCKAUDIT_PORT: must be an integer/);
    assert.match(r.stderr, /LOCKAUDIT_ETCD: "nourl" is not name=url/);
  });

  it('prints the effective configuration with secrets masked', async () => {
    const r = await cli(['config'], {
      LOCKAUDIT_S3_ENDPOINT: 'http://s3.corp:9000',
      LOCKAUDIT_S3_ACCESS_KEY: 'AKIAEXAMPLE',
      LOCKAUDIT_S3_SECRET_KEY: 'very-secret-key',
    });
    assert.equal(r.code, 0, r.stderr);
    const config = JSON.parse(r.stdout) as { s3: { secretKey: string; accessKey: string } };
    assert.equal(config.s3.secretKey, '****');
    assert.equal(config.s3.accessKey, 'AKIAEXAMPLE');
    assert.ok(!r.stdout.includes('very-secret-key'));
  });
});
