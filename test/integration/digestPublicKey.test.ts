// GET /v1/digests/public-key never makes the API hold or create the private
// signing key (issue 42 item 3): it serves LOCKAUDIT_DIGEST_PUBLIC_KEY, else the
// existing key's public half, else 503 — before, an API process without the key
// generated one into its data dir and published a key no worker signed with.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildApp, type App } from '../../api/app.js';
import { digestRoutes } from '../../api/routes/digests.js';
import { ApiTokenVerifier } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { loadConfig } from '../../core/config.js';
import { DIGEST_KEY_FILE, digestSigner, generateDigestSigner } from '../../core/digestKey.js';
import { createLogger } from '../../core/logger.js';
import { HealthState } from '../../platform/health.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { tempDir, tempStore, testConfig } from '../support/env.js';

describe('the digest public key the API serves', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  before(async () => ({ store, close } = await tempStore()));
  after(async () => close());

  const app = (env: Record<string, string>): Promise<App> =>
    buildApp(
      {
        config: testConfig(env),
        logger: createLogger('silent'),
        store,
        verifier: new ApiTokenVerifier(store),
        health: new HealthState(),
        metrics: createMetricsRegistry(),
      },
      [digestRoutes],
    );

  it('answers 503 until the worker made the key, creating none itself; then the key the worker signs with', async () => {
    const dir = tempDir('lockaudit-pk-');
    const api = await app({ LOCKAUDIT_DATA_DIR: dir.dir });
    try {
      const none = await api.inject({ method: 'GET', url: '/v1/digests/public-key' });
      assert.equal(none.statusCode, 503, none.body);
      assert.equal(none.json().error, 'LOCKAUDIT_ERR_DIGEST_KEY_MISSING');
      assert.equal(existsSync(path.join(dir.dir, DIGEST_KEY_FILE)), false, 'the API generated no key');
      const worker = digestSigner({ dataDir: dir.dir }); // the worker's first start
      const served = await api.inject({ method: 'GET', url: '/v1/digests/public-key' });
      assert.equal(served.statusCode, 200);
      const key = { keyId: worker.keyId, publicKeyPem: worker.publicKeyPem };
      assert.deepEqual(served.json(), { algorithm: 'Ed25519', ...key, keys: [key] });
      // A rotation completes while the API runs (the worker's next key became the key file): the new key, at once.
      const next = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      writeFileSync(path.join(dir.dir, DIGEST_KEY_FILE), next);
      const rotated = digestSigner({ dataDir: dir.dir }); // reads it, and adds it to the keyring as the worker does
      const after = (await api.inject({ method: 'GET', url: '/v1/digests/public-key' })).json();
      assert.equal(after.keyId, rotated.keyId, 'the key served is the one signing now, not the one at start');
      assert.deepEqual(
        after.keys.map((k: { keyId: string }) => k.keyId),
        [worker.keyId, rotated.keyId],
      );
    } finally {
      await api.close();
      dir.remove();
    }
  });

  it("serves LOCKAUDIT_DIGEST_PUBLIC_KEY without any private key, and refuses one that is not the signing key's half", async () => {
    const dir = tempDir('lockaudit-pk-');
    const signer = generateDigestSigner();
    const api = await app({ LOCKAUDIT_DATA_DIR: dir.dir, LOCKAUDIT_DIGEST_PUBLIC_KEY: signer.publicKeyPem });
    try {
      const served = await api.inject({ method: 'GET', url: '/v1/digests/public-key' });
      const key = { keyId: signer.keyId, publicKeyPem: signer.publicKeyPem };
      assert.deepEqual(served.json(), { algorithm: 'Ed25519', ...key, keys: [key] });
      assert.equal(existsSync(path.join(dir.dir, DIGEST_KEY_FILE)), false);
    } finally {
      await api.close();
      dir.remove();
    }
    // After a rotation: every key, newest last, which is the one served as current.
    const rotatedTo = generateDigestSigner();
    const ringDir = tempDir('lockaudit-pk-');
    const ringApi = await app({ LOCKAUDIT_DATA_DIR: ringDir.dir, LOCKAUDIT_DIGEST_PUBLIC_KEY: `${signer.publicKeyPem}${rotatedTo.publicKeyPem}` });
    try {
      const served = (await ringApi.inject({ method: 'GET', url: '/v1/digests/public-key' })).json();
      assert.equal(served.keyId, rotatedTo.keyId);
      assert.deepEqual(
        served.keys.map((k: { keyId: string }) => k.keyId),
        [signer.keyId, rotatedTo.keyId],
      );
    } finally {
      await ringApi.close();
      ringDir.remove();
    }
    const other = generateDigestSigner();
    const privatePem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    assert.throws(
      () => loadConfig({ env: { LOCKAUDIT_DIGEST_SIGNING_KEY: privatePem, LOCKAUDIT_DIGEST_PUBLIC_KEY: other.publicKeyPem }, cwd: '/srv' }),
      /LOCKAUDIT_DIGEST_PUBLIC_KEY \(digestPublicKey\): key [0-9a-f]{16} is not the public half of LOCKAUDIT_DIGEST_SIGNING_KEY/,
    );
    assert.throws(
      () => loadConfig({ env: { LOCKAUDIT_DIGEST_PUBLIC_KEY: `-----BEGIN PUBLIC KEY-----\n${'A'.repeat(60)}\n-----END PUBLIC KEY-----` }, cwd: '/srv' }),
      /LOCKAUDIT_DIGEST_PUBLIC_KEY \(digestPublicKey\): not a PEM public key/,
    );
  });
});
