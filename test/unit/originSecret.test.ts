// The origin secret's file (core/originSecret.ts): generated once, shared, and never an empty key. A file of 0
// bytes (a full disk) was taken as a real, empty HMAC key that anyone can compute.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
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
});
