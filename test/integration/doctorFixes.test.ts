// doctor's fix line follows what went wrong (operator review): local MinIO
// refusing bad credentials is not fixed by `services up` (it runs); only a
// service that does not answer is. Real MinIO of the test services.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createS3Client } from '../../core/s3.js';
import { ensureBuckets } from '../../platform/buckets.js';
import { createLogger } from '../../core/logger.js';
import { checkEtcd, checkRedis, checkS3 } from '../../platform/dependencyChecks.js';
import { testConfig } from '../support/env.js';

describe("doctor's fix for S3", () => {
  const config = testConfig();

  it('bad credentials on the running local MinIO: check the credentials; nothing listening: start the local services', async () => {
    await ensureBuckets(createS3Client(config.s3), config.s3);
    const ok = await checkS3({ ...config, s3: { ...config.s3, local: true } }, { deep: false });
    assert.equal(ok.ok, true, ok.detail);

    const refused = await checkS3({ ...config, s3: { ...config.s3, local: true, secretKey: 'wrongwrongwrong' } }, { deep: false });
    assert.equal(refused.ok, false);
    assert.doesNotMatch(refused.fix ?? '', /services up/, 'MinIO answered: starting it again fixes nothing');
    assert.match(refused.fix ?? '', /credentials \(LOCKAUDIT_S3_ACCESS_KEY, LOCKAUDIT_S3_SECRET_KEY\)/);

    const silent = await checkS3({ ...config, s3: { ...config.s3, local: true, endpoint: 'http://127.0.0.1:9' } }, { deep: false });
    assert.equal(silent.ok, false);
    assert.match(silent.fix ?? '', /^start the local services: lockaudit services up/, silent.detail);
  });

  it('a local Redis or etcd that does not answer: start the local services (their clients say so in words only)', async () => {
    const redis = await checkRedis({ ...config, redis: { url: 'redis://127.0.0.1:9', local: true } }, { deep: true, logger: createLogger('silent') });
    assert.equal(redis.ok, false);
    assert.match(redis.fix ?? '', /^start the local services: lockaudit services up/, redis.detail);
    const [etcd] = await checkEtcd({ ...config, etcd: { clusters: [{ name: 'gone', endpoints: ['http://127.0.0.1:9'] }], local: true } });
    assert.equal(etcd?.ok, false);
    assert.match(etcd?.fix ?? '', /^start the local services: lockaudit services up/, etcd?.detail);
  });
});
