// A role started on its own over a ClickHouse server (roles on hosts of their own) with no origin secret to share is
// refused at start, by name, before anything opens — before, each generated its own and read the others' proofs as
// a flood of foreign writes. The same role with the secret set, or over the embedded store (one data dir), is not.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';
import { originSecret, standaloneSecretProblem } from '../../core/originSecret.js';
import { tempDir, testConfig } from '../support/env.js';

const run = promisify(execFile);
const BIN = path.join(projectRoot, 'bin', 'lockaudit.js');

async function role(name: string, env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LOCKAUDIT_ORIGIN_SECRET'));
  try {
    await run(process.execPath, [BIN, name], { cwd: projectRoot, env: { ...base, ...env }, timeout: 30_000 });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

describe('a role on its own needs the shared origin secret', { timeout: 120_000 }, () => {
  it('refuses `lockaudit tailer|worker|api` over a ClickHouse server with no secret to share, naming the setting', async () => {
    const dir = tempDir('lockaudit-alone-');
    try {
      // Nothing listens there: the refusal comes before any connection.
      const server = { LOCKAUDIT_DATA_DIR: dir.dir, LOCKAUDIT_CLICKHOUSE_URL: 'http://127.0.0.1:9' };
      for (const name of ['tailer', 'worker', 'api']) {
        const r = await role(name, server);
        assert.equal(r.code, 1, `${name}: ${r.stderr}`);
        assert.match(r.stderr, new RegExp(`the ${name} role runs on its own over a ClickHouse server, with no LOCKAUDIT_ORIGIN_SECRET`));
      }
    } finally {
      dir.remove();
    }
  });

  it('takes the configured secret, or the one already in its data dir; over the embedded store it generates one as before', () => {
    const dir = tempDir('lockaudit-alone-');
    try {
      const server = { LOCKAUDIT_DATA_DIR: dir.dir, LOCKAUDIT_CLICKHOUSE_URL: 'http://127.0.0.1:9', LOCKAUDIT_ORIGIN_SECRET: '' };
      const bare = testConfig(server);
      assert.ok(standaloneSecretProblem({ ...bare, originSecret: undefined }, 'tailer'));
      assert.equal(standaloneSecretProblem({ ...bare, originSecret: 'x'.repeat(32) }, 'tailer'), undefined);
      assert.equal(
        standaloneSecretProblem({ ...bare, originSecret: undefined, clickhouse: { mode: 'embedded', path: dir.dir, database: 'lockaudit' } }, 'tailer'),
        undefined,
      );
      // The file a first start (or the operator) put in the data dir.
      originSecret({ dataDir: dir.dir });
      assert.equal(standaloneSecretProblem({ ...bare, originSecret: undefined }, 'tailer'), undefined);
    } finally {
      dir.remove();
    }
  });
});
