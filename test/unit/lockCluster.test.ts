// The lock API serves one etcd cluster, chosen explicitly: the only one, or
// the one api.lockCluster names. Several and none chosen is a start-up error
// naming the key — never a silent pick of the first.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isLockauditError } from '../../core/errors.js';
import { loadConfig } from '../../core/config.js';
import { lockCluster } from '../../roles/lockEngine.js';

const east = { name: 'east', endpoints: ['http://east:2379'] };
const west = { name: 'west', endpoints: ['http://west:2379'] };

describe('the lock API\'s cluster', () => {
  it('is the only one configured', () => {
    assert.equal(lockCluster({ etcd: { clusters: [east] }, api: {} } as never).name, 'east');
  });

  it('is the one api.lockCluster names', () => {
    assert.equal(lockCluster({ etcd: { clusters: [east, west] }, api: { lockCluster: 'west' } } as never).name, 'west');
  });

  it('refuses several clusters with none chosen, and a name not configured, naming the key', () => {
    assert.throws(
      () => lockCluster({ etcd: { clusters: [east, west] }, api: {} } as never),
      (err: unknown) => isLockauditError(err, 'LOCKAUDIT_ERR_CONFIG_INVALID') && /^api\.lockCluster: 2 etcd clusters are configured \(east, west\) and none is chosen/.test(err.message),
    );
    assert.throws(
      () => lockCluster({ etcd: { clusters: [east, west] }, api: { lockCluster: 'north' } } as never),
      (err: unknown) => isLockauditError(err, 'LOCKAUDIT_ERR_CONFIG_INVALID') && /^api\.lockCluster: "north" is not a configured etcd cluster \(configured: east, west\)$/.test(err.message),
    );
  });

  it('reads api.lockCluster from the configuration', () => {
    const config = loadConfig({ env: { LOCKAUDIT_ETCD: 'east=http://east:2379;west=http://west:2379' }, cwd: '/srv' });
    assert.throws(() => lockCluster(config), /api\.lockCluster/);
  });
});
