// An API-only process ships its own fail-open spool (issue 11, defect 5):
// before, only the elected tailer shipped the spool of its own data dir, so
// unprotected grants made on a host without a tailer never reached the audit
// store. No tailer runs here.
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { spoolPath, type SpoolGrantRecord } from '../../core/spool.js';
import { waitFor } from '../support/capture.js';
import { tempDir, testConfig, uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';
import { lockApp, type LockApp } from '../support/lockApp.js';

const db = fileStore();

describe('the api role ships the spool it writes', () => {
  it('unprotected grants spooled on an API-only host reach the audit store, once', { timeout: 60_000 }, async () => {
    const data = tempDir('lockaudit-api-spool-');
    const config = testConfig({ LOCKAUDIT_DATA_DIR: data.dir });
    const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
    const label = uniqueId('a');
    const ns = uniqueId('ns');
    // What this host's lock API appended while etcd had no quorum.
    const file = spoolPath(data.dir, label);
    mkdirSync(path.dirname(file), { recursive: true });
    const grants: SpoolGrantRecord[] = [1, 2].map((n) => ({
      v: 1,
      kind: 'grant',
      id: `api-host:${n}`,
      cluster: label,
      key: `${ns}/k${n}`,
      namespace: ns,
      class: 'cache',
      holder: 'spiffe://test/w',
      session: '7',
      token: '0',
      waitMs: 0,
      at: Date.now() - 1_000,
      epoch: 1,
    }));
    appendFileSync(file, grants.map((g) => `${JSON.stringify(g)}\n`).join(''));
    let la: LockApp | undefined;
    try {
      la = await lockApp(config, db.store, { cluster: { name: label, endpoints }, spoolShipIntervalMs: 200 });
      const count = async (): Promise<number> => {
        const [r] = await db.store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.grants FINAL WHERE cluster = {c:String} AND unprotected = 1', {
          c: label,
        });
        return Number(r?.n ?? 0);
      };
      await waitFor('the spooled grants shipped', async () => ((await count()) === 2 ? true : undefined), 30_000, 100);
      await la.close();
      la = undefined;
      assert.equal(await count(), 2, 'shipped once: the final pass at close adds nothing');
    } finally {
      await la?.close();
      data.remove();
    }
  });
});
