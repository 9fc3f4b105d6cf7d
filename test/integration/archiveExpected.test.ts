// `lockaudit archive verify` expects in the archive every force record the
// audit log holds — but only those with the lock API's proof. A force record
// written by hand (origin foreign, sql/040; issue 21) is never archived as a
// genuine one, so expecting it made verify fail on every forged record (the
// 30-minute chaos run: 34 "not-archived" problems, all forged).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { expectedFromAuditLog } from '../../exporters/archive/archiveVerify.js';
import { tempStore } from '../support/env.js';

describe('force records the archive must hold', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  before(async () => {
    ({ store, close } = await tempStore());
  });
  after(async () => close());

  it('are the proven ones: a forged record (origin foreign) is not expected', async () => {
    const row = (key: string, revision: string, origin: string): Record<string, unknown> => ({
      cluster: 'c1',
      revision,
      key,
      event_type: 'force-record',
      op: 'put',
      namespace: '',
      lock_path: '',
      class: '',
      holder: '',
      session: '',
      token: '0',
      epoch: 1,
      grant_revision: '0',
      wait_ms: 0,
      wall_time: Date.now() - 3_600_000,
      time_estimated: 0,
      time_error_ms: 0,
      create_revision: revision,
      mod_revision: revision,
      version: '1',
      lease: '0',
      value: '{}',
      prev_value: '',
      unprotected: 0,
      origin,
    });
    await store.insert('events', [row('/sys/force/genuine', '10', 'api'), row('/sys/force/forged', '11', 'foreign')]);
    const expected = await expectedFromAuditLog(store, { cluster: 'c1' });
    assert.deepEqual(
      expected.map((e) => e.key),
      ['/sys/force/genuine'],
    );
  });
});
