// The lock API serves one etcd cluster, chosen explicitly: the only one, or
// the one marked `lockApi: true`. Several and none marked is a start-up error
// naming the key — never a silent pick of the first.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { isLockauditError } from '../../core/errors.js';
import { loadConfig } from '../../core/config.js';
import { lockCluster } from '../../roles/lockEngine.js';
import { tempDir } from '../support/env.js';

const east = { name: 'east', endpoints: ['http://east:2379'] };
const west = { name: 'west', endpoints: ['http://west:2379'] };
const pick = (...clusters: Array<typeof east & { lockApi?: boolean }>) => lockCluster({ etcd: { clusters, local: false } });
const refused = (pattern: RegExp) => (err: unknown) => isLockauditError(err, 'LOCKAUDIT_ERR_CONFIG_INVALID') && pattern.test(err.message);

describe("the lock API's cluster", () => {
  it('is the only one configured, or the one marked lockApi', () => {
    assert.equal(pick(east).name, 'east');
    assert.equal(pick(east, { ...west, lockApi: true }).name, 'west');
  });

  it('refuses several clusters with none marked, or two marked, naming the key', () => {
    assert.throws(() => pick(east, west), refused(/^etcd\[\]\.lockApi: 2 etcd clusters are configured \(east, west\) and none is marked for the lock API/));
    assert.throws(
      () => pick({ ...east, lockApi: true }, { ...west, lockApi: true }),
      refused(/^etcd\[\]\.lockApi: set on 2 clusters \(east, west\); the lock API serves one$/),
    );
  });

  it('reads lockApi from the configuration file; several clusters from the environment are ambiguous', () => {
    assert.throws(
      () => lockCluster(loadConfig({ env: { LOCKAUDIT_ETCD: 'east=http://east:2379;west=http://west:2379' }, cwd: '/srv' })),
      refused(/etcd\[\]\.lockApi/),
    );
    const tmp = tempDir();
    try {
      const file = path.join(tmp.dir, 'lockaudit.yaml');
      writeFileSync(file, 'etcd:\n  - name: east\n    endpoints: [http://east:2379]\n  - name: west\n    endpoints: [http://west:2379]\n    lockApi: true\n');
      assert.equal(lockCluster(loadConfig({ env: { LOCKAUDIT_CONFIG: file }, cwd: tmp.dir })).name, 'west');
    } finally {
      tmp.remove();
    }
  });
});
