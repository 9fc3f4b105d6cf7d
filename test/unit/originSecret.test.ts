// The origin secret's file (core/originSecret.ts): generated once, shared, and never an empty key. A file of 0
// bytes (a full disk) was taken as a real, empty HMAC key that anyone can compute.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DIGEST_KEY_FILE, digestSigner } from '../../core/digestKey.js';
import { isLockauditError } from '../../core/errors.js';
import { existingOriginSecret, ORIGIN_SECRET_FILE, originSecret } from '../../core/originSecret.js';

describe('origin secret', () => {
  it('is generated once and read back the same; an empty or short file is refused by name, never taken as a key', () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'lockaudit-secret-'));
    try {
      assert.equal(existingOriginSecret({ dataDir }), undefined);
      const made = originSecret({ dataDir });
      assert.ok(made.length >= 32);
      assert.deepEqual(existingOriginSecret({ dataDir }), made);
      for (const text of ['', '\n', 'short-key\n']) {
        writeFileSync(path.join(dataDir, ORIGIN_SECRET_FILE), text);
        for (const read of [() => originSecret({ dataDir }), () => existingOriginSecret({ dataDir })]) {
          assert.throws(read, (err) => isLockauditError(err, 'LOCKAUDIT_ERR_ORIGIN_SECRET') && err.message.includes(path.join(dataDir, ORIGIN_SECRET_FILE)));
        }
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('an unreadable secret file stops the start by name: never taken as absent and generated anew (origin secret and digest key)', () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'lockaudit-secret-'));
    try {
      // A directory where the file should be: EISDIR, as an unreadable file would give EACCES to a non-root process.
      mkdirSync(path.join(dataDir, ORIGIN_SECRET_FILE));
      mkdirSync(path.join(dataDir, DIGEST_KEY_FILE));
      for (const read of [() => originSecret({ dataDir }), () => existingOriginSecret({ dataDir })]) {
        assert.throws(
          read,
          (err) =>
            isLockauditError(err, 'LOCKAUDIT_ERR_ORIGIN_SECRET') && err.message.includes(`${path.join(dataDir, ORIGIN_SECRET_FILE)} cannot be read (EISDIR)`),
        );
      }
      assert.throws(
        () => digestSigner({ dataDir }),
        (err) => isLockauditError(err, 'LOCKAUDIT_ERR_DIGEST_KEY') && err.message.includes(`${path.join(dataDir, DIGEST_KEY_FILE)} cannot be read (EISDIR)`),
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('an empty digest key file is refused by name and left as it is, never replaced by a new key', () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'lockaudit-secret-'));
    try {
      writeFileSync(path.join(dataDir, DIGEST_KEY_FILE), '');
      assert.throws(
        () => digestSigner({ dataDir }),
        (err) => isLockauditError(err, 'LOCKAUDIT_ERR_DIGEST_KEY') && err.message.includes(path.join(dataDir, DIGEST_KEY_FILE)),
      );
      assert.equal(readFileSync(path.join(dataDir, DIGEST_KEY_FILE), 'utf8'), '');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
