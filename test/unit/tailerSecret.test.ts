// The tailer's key (core/tailerSecret.ts): a new deployment's is its own, made before its origin secret; a
// deployment from before the split goes on with its origin secret; a short file is refused by name; and the
// supervisor gives the configured key to the tailer and worker processes only (cli/supervisor.ts roleEnv).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { isLockauditError } from '../../core/errors.js';
import { createSecretFile, existingOriginSecret, ORIGIN_SECRET_FILE, originSecret, TAILER_SECRET_FILE } from '../../core/originSecret.js';
import { existingTailerSecret, tailerKey } from '../../core/tailerSecret.js';
import { roleEnv } from '../../cli/supervisor.js';

function withDir(fn: (dataDir: string) => void): void {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'lockaudit-tkey-'));
  try {
    fn(dataDir);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe("the tailer's key", () => {
  it('a new deployment gets a key of its own beside the origin secret, made first, and read back the same', () =>
    withDir((dataDir) => {
      assert.equal(existingTailerSecret({ dataDir }), undefined);
      const origin = originSecret({ dataDir });
      assert.ok(existsSync(path.join(dataDir, TAILER_SECRET_FILE)), 'the origin secret of a new deployment comes with its tailer key');
      const tailer = tailerKey({ dataDir });
      assert.equal(tailer.source, 'file');
      assert.ok(tailer.key.length >= 32);
      assert.notDeepEqual(tailer.key, origin, 'not the API key');
      assert.deepEqual(existingTailerSecret({ dataDir }), tailer.key);
      assert.deepEqual(tailerKey({ dataDir }).key, tailer.key);
      // Made whole and linked into place: no draft is left behind.
      assert.deepEqual(readdirSync(dataDir).sort(), [ORIGIN_SECRET_FILE, TAILER_SECRET_FILE].sort());
    }));

  it('a tailer started first makes the key, and the origin secret made after it leaves it as it is', () =>
    withDir((dataDir) => {
      const first = tailerKey({ dataDir });
      assert.equal(existingOriginSecret({ dataDir }), undefined, 'the tailer key makes no origin secret');
      originSecret({ dataDir });
      assert.deepEqual(tailerKey({ dataDir }).key, first.key);
    }));

  it('a deployment from before the split (an origin secret, no tailer key) goes on with its origin secret, and says so', () =>
    withDir((dataDir) => {
      writeFileSync(path.join(dataDir, ORIGIN_SECRET_FILE), `${'o'.repeat(43)}\n`);
      const legacy = tailerKey({ dataDir });
      assert.equal(legacy.source, 'origin');
      assert.deepEqual(legacy.key, existingOriginSecret({ dataDir }));
      assert.equal(existsSync(path.join(dataDir, TAILER_SECRET_FILE)), false, 'no new key that would read every proof written so far as forged');
      // A configured origin secret and no tailer key: the same.
      withDir((other) => assert.equal(tailerKey({ dataDir: other, originSecret: 'c'.repeat(32) }).source, 'origin'));
    }));

  it('a configured key wins; an empty or short file is refused by name, never taken as a key', () =>
    withDir((dataDir) => {
      const configured = tailerKey({ dataDir, tailerSecret: 't'.repeat(32) });
      assert.deepEqual(configured, { key: Buffer.from('t'.repeat(32)), source: 'configured' });
      for (const text of ['', '\n', 'short-key\n']) {
        writeFileSync(path.join(dataDir, TAILER_SECRET_FILE), text);
        for (const read of [() => tailerKey({ dataDir }), () => existingTailerSecret({ dataDir })]) {
          assert.throws(read, (err) => isLockauditError(err, 'LOCKAUDIT_ERR_ORIGIN_SECRET') && err.message.includes(path.join(dataDir, TAILER_SECRET_FILE)));
        }
      }
    }));

  it('a fresh key file is only ever one this call made: one already in place is refused, never taken', () =>
    withDir((dataDir) => {
      const made = createSecretFile(dataDir, 'draft', { fresh: true });
      assert.deepEqual(made, Buffer.from(readFileSync(path.join(dataDir, 'draft'), 'utf8').trim(), 'utf8'));
      assert.throws(
        () => createSecretFile(dataDir, 'draft', { fresh: true }),
        (err) => isLockauditError(err, 'LOCKAUDIT_ERR_VALIDATION') && err.message.includes('already exists'),
      );
      assert.deepEqual(createSecretFile(dataDir, 'draft'), made, 'without `fresh`, the key in place is the key');
    }));

  it('the supervisor passes LOCKAUDIT_TAILER_SECRET to the tailer and worker processes only', () => {
    const env = { PATH: '/bin', LOCKAUDIT_TAILER_SECRET: 'x'.repeat(32), LOCKAUDIT_ORIGIN_SECRET: 'y'.repeat(32) };
    for (const role of ['tailer', 'worker']) assert.equal(roleEnv(role, env).LOCKAUDIT_TAILER_SECRET, env.LOCKAUDIT_TAILER_SECRET, role);
    for (const role of ['api', 'store']) {
      const got = roleEnv(role, env);
      assert.equal(got.LOCKAUDIT_TAILER_SECRET, undefined, role);
      assert.equal(got.LOCKAUDIT_ORIGIN_SECRET, env.LOCKAUDIT_ORIGIN_SECRET, `${role} keeps the rest`);
    }
  });
});
