// The suite's etcd runs with etcd's default limits (issue 12.3), the ones users
// bring: a txn of more than 128 operations is refused. So every test that
// passes here passes on a stock etcd too.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Etcd3 } from 'etcd3';
import { testConfig, uniqueId } from '../support/env.js';
import { ETCD_DEFAULT_MAX_TXN_OPS } from '../support/workload.js';

describe("the suite's etcd", () => {
  const client = new Etcd3({ hosts: testConfig().etcd.clusters[0]!.endpoints });
  after(() => client.close());

  it(`refuses a txn of more than ${ETCD_DEFAULT_MAX_TXN_OPS} operations and takes one of ${ETCD_DEFAULT_MAX_TXN_OPS}`, async () => {
    const prefix = `/${uniqueId('limits')}/`;
    const puts = (n: number) => Array.from({ length: n }, (_, i) => client.put(`${prefix}${i}`).value('x'));
    await assert.rejects(
      client
        .if(`${prefix}0`, 'Version', '==', 0)
        .then(...puts(ETCD_DEFAULT_MAX_TXN_OPS + 1))
        .commit(),
      /too many operations in txn request/,
    );
    const ok = await client
      .if(`${prefix}0`, 'Version', '==', 0)
      .then(...puts(ETCD_DEFAULT_MAX_TXN_OPS))
      .commit();
    assert.equal(ok.succeeded, true);
    await client.delete().prefix(prefix);
  });
});
