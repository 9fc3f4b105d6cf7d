// `lockaudit start` (and `api`) with several etcd clusters and none marked
// for the lock API: refused at once, naming the key, before anything opens.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';
import { tempDir } from '../support/env.js';

const run = promisify(execFile);

describe('an ambiguous lock cluster at start-up', () => {
  it('is one line naming etcd[].lockApi, exit 2, and nothing opened', async () => {
    const data = tempDir('lockaudit-lock-cluster-');
    try {
      for (const command of ['start', 'api']) {
        const env = { ...process.env, LOCKAUDIT_DATA_DIR: data.dir, LOCKAUDIT_ETCD: 'east=http://127.0.0.1:1;west=http://127.0.0.1:2' };
        const r = await run(process.execPath, ['bin/lockaudit.js', command], { cwd: projectRoot, env }).then(
          () => ({ code: 0, stderr: '' }),
          (err: { code: number; stderr: string }) => err,
        );
        assert.equal(r.code, 2, command);
        assert.equal(
          r.stderr,
          'lockaudit: etcd[].lockApi: 2 etcd clusters are configured (east, west) and none is marked for the lock API; set lockApi: true on one of them in the LOCKAUDIT_CONFIG file\n',
        );
      }
      assert.deepEqual(readdirSync(data.dir), [], 'no store, no spool, no service was opened');
    } finally {
      data.remove();
    }
  });
});
