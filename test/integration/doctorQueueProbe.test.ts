// doctor's deep Redis check puts one job through a queue of its own. CI saw it
// fail on a loaded machine with "Missing key for job … isFinished": the worker
// had finished the job, and removed it, before waitUntilFinished polled it.
// Real Redis; the window between the add and the wait held wide open.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger } from '../../core/logger.js';
import { queueProbe } from '../../platform/dependencyChecks.js';
import { createRedis } from '../../platform/redis.js';
import { testConfig, uniqueId } from '../support/env.js';

describe("doctor's queue probe", () => {
  const config = testConfig({ LOCKAUDIT_QUEUE_PREFIX: uniqueId('doctor') });
  const logger = createLogger('silent');

  it('answers when the worker finished the job before the wait began', async () => {
    const connection = createRedis(config.redis.url, 'check', logger);
    try {
      let waitedAfterAdd = false;
      await queueProbe(config, logger, connection, async () => {
        await sleep(500);
        waitedAfterAdd = true;
      });
      assert.equal(waitedAfterAdd, true);
      // Nothing is left behind under the probe's prefix.
      assert.deepEqual(await connection.keys(`${config.queuePrefix}:doctor-*`), []);
    } finally {
      connection.disconnect();
    }
  });
});
