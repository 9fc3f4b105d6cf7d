// StreamClock (tailer/clock/streamClock.ts) against a real etcd: over a history of
// hand-written holds, proven clock writes and unproven clock puts, its answer
// at every revision is clockAtOrBefore's (etcd read at that revision), while
// it reads etcd once per stretch between clock changes instead of once per
// lookup (and every time for an answer found by stepping back over an
// unproven write). The stream is built from etcd's own history: a revision changed
// /sys/clock when the key's mod revision there is that revision, or the key
// was there the revision before and is gone (other tests write the clock too).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../../core/etcd.js';
import { PREFIX } from '../../core/keyspace.js';
import { originSecret } from '../../core/originSecret.js';
import { writeClock } from '../../tailer/clock/clockWriter.js';
import { clockAtOrBefore, clockLookup } from '../../tailer/watch/etcdReads.js';
import { StreamClock } from '../../tailer/clock/streamClock.js';
import type { RevisionChanges } from '../../tailer/types.js';
import { headRevision } from '../support/capture.js';
import { testConfig, uniqueId } from '../support/env.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];

async function clockModAt(client: Etcd3, revision: bigint): Promise<bigint | undefined> {
  const res = await client.kv.range({ key: Buffer.from(PREFIX.clock), revision: revision.toString() });
  const kv = res.kvs[0];
  return kv ? BigInt(kv.mod_revision) : undefined;
}

describe('StreamClock against etcd', () => {
  let client: Etcd3;
  before(() => {
    client = createEtcdClient({ name: 'test', endpoints });
  });
  after(() => client.close());

  it('answers every revision as clockAtOrBefore does, asking etcd once per clock change', async () => {
    const secret = originSecret(config);
    const ns = uniqueId('sc');
    await writeClock(client, secret);
    const start = (await headRevision(client)) + 1n;
    // Hand holds between clock writes, proven and not (an unproven one is stepped over looking back).
    for (let i = 0; i < 6; i += 1) {
      for (let j = 0; j < 8; j += 1)
        await client
          .put(`/l/${ns}/k${j}`)
          .value(JSON.stringify({ holder: 'spiffe://x/y', at: 1 }))
          .exec();
      if (i % 3 === 2)
        await client
          .put(PREFIX.clock)
          .value(JSON.stringify({ at: Date.now() }))
          .exec();
      else await writeClock(client, secret);
      for (let j = 0; j < 8; j += 1) await client.delete().key(`/l/${ns}/k${j}`).exec();
    }
    const end = await headRevision(client);

    const sc = new StreamClock((revision) => clockLookup(client, revision, secret));
    let changes = 0;
    // Revisions answered by stepping back over an unproven write: asked every time (a compaction could change them).
    let unsettled = 0;
    let before = await clockModAt(client, start - 1n);
    for (let r = start; r <= end; r += 1n) {
      const now = await clockModAt(client, r);
      const changed = now === r || (now === undefined && before !== undefined);
      before = now;
      if (changed) changes += 1;
      const rev: RevisionChanges = {
        revision: r,
        changes: changed
          ? [{ type: 'put', kv: { key: PREFIX.clock, value: '', createRevision: '0', modRevision: r.toString(), version: '0', lease: '0' } }]
          : [],
      };
      sc.seen(rev);
      assert.deepEqual(await sc.at(r), await clockAtOrBefore(client, r, secret), `revision ${r}`);
      if (!(await clockLookup(client, r, secret)).settled) unsettled += 1;
    }
    const revisions = Number(end - start + 1n);
    assert.ok(changes >= 6, `the clock changed ${changes} times`);
    assert.ok(unsettled > 0, 'the unproven puts were stepped over');
    assert.ok(
      sc.asked <= changes + 1 + unsettled,
      `${sc.asked} etcd reads for ${changes} clock changes and ${unsettled} stepped-back answers over ${revisions} revisions`,
    );
    assert.ok(sc.asked < revisions / 2, `${sc.asked} reads, not one per revision (${revisions})`);
  });
});
