// A replica closed while its leader is still deciding where to start (the checks before the watch opens: restore,
// compaction, the gaps to judge starts by) stops at once. Before, an abort that landed during those checks fired no
// listener — it had already happened — so the watch opened and tailed on with nothing to stop it: close() never
// returned (CI: restoreWitnesses' bumped restore, cancelled at its 240 s timeout).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { settlesWithin } from '../../platform/deadline.js';
import { TailerReplica } from '../../tailer/replica.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { holdingGapsRead } from '../support/interceptStore.js';

const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'warn');
const endpoints = testConfig().etcd.clusters[0]?.endpoints ?? [];

describe('a tailer replica closed during its start-position checks', { timeout: 120_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  before(async () => {
    ({ store, close: closeStore } = await tempStore());
  });
  after(async () => closeStore?.());

  it('stops without opening its watch: close() returns well inside its own deadline', async () => {
    const held = holdingGapsRead(store);
    const replica = new TailerReplica(
      { cluster: { name: uniqueId('cd'), endpoints }, store: held.store, log },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100 },
    );
    replica.start();
    try {
      await held.reached; // elected, and deciding where to start
      const closing = replica.close();
      held.release();
      assert.ok(await settlesWithin(closing, 10_000), 'close() returned (before: the run tailed on and close never did)');
      assert.equal(replica.status().leader, false, 'leadership given up');
    } finally {
      held.release();
      await replica.close();
    }
  });
});
