// doctor's deep Redis check puts one job through a queue of its own. CI saw it
// fail on a loaded machine with "Missing key for job … isFinished": the worker
// had finished the job, and removed it, before waitUntilFinished polled it.
// Real Redis; the wait begins only after the worker has finished the job.
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
      // The wait begins only once the worker has finished the job (and, before
      // the fix, removed it: its state then reads "unknown").
      let stateAtWait = '';
      await queueProbe(config, logger, connection, async (job) => {
        const deadline = Date.now() + 10_000;
        do {
          stateAtWait = await job.getState();
          if (stateAtWait === 'completed' || stateAtWait === 'unknown') break;
          await sleep(20);
        } while (Date.now() < deadline);
      });
      assert.equal(stateAtWait, 'completed');
      // Nothing is left behind under the probe's prefix.
      assert.deepEqual(await connection.keys(`${config.queuePrefix}:doctor-*`), []);
    } finally {
      connection.disconnect();
    }
  });
});
