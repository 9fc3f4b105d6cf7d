// The checkpoint's store (tailer/sink/offsets.ts) against an embedded ClickHouse:
// the stored checkpoint is the highest ever written, whatever the order and
// timing of the writes and however ClickHouse merges them (issue 11, defect 6).
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AuditStore } from '../../core/clickhouse.js';
import { migrate } from '../../core/migrations.js';
import { sqlDir } from '../../core/paths.js';
import { readCheckpoint, readCheckpoints, writeCheckpoint } from '../../tailer/sink/offsets.js';
import { tempDir, uniqueId } from '../support/env.js';

// chdb binds one data directory per process: both stores below share it, each with a database of its own.
const dataDir = tempDir('lockaudit-ch-');
let store: AuditStore;

before(async () => {
  store = new AuditStore({ mode: 'embedded', path: dataDir.dir, database: 'lockaudit' });
  await migrate(store);
});

after(async () => {
  await store.close();
  dataDir.remove();
});

/** Forces ClickHouse to merge now what it would merge some time: the point where a wrong version column loses the highest row. */
async function mergeAll(): Promise<void> {
  await store.command('OPTIMIZE TABLE {db:Identifier}.checkpoints FINAL');
  await store.command('OPTIMIZE TABLE {db:Identifier}.checkpoints_highest FINAL');
}

const leading = async (): Promise<boolean> => true;

describe('checkpoint offsets', () => {
  it('a stale lower checkpoint written later (a stalled leader) never replaces the higher one, also after merges', async () => {
    const cluster = uniqueId('c');
    assert.deepEqual(await writeCheckpoint(store, { cluster, revision: 1_000n, leader: 'successor', term: 9n, timeline: 0, fence: leading }), {
      kind: 'written',
      revision: 1_000n,
    });
    // The stalled leader passed its checks long ago; its insert lands now, later in time, lower in revision.
    await new Promise((r) => setTimeout(r, 20));
    await store.insert('checkpoints', [{ cluster, revision: '900', leader: 'stalled' }]);
    assert.equal(await readCheckpoint(store, cluster), 1_000n);
    await mergeAll();
    assert.equal(await readCheckpoint(store, cluster), 1_000n);
    const all = await readCheckpoints(store);
    assert.deepEqual(all.get(cluster), { cluster, revision: 1_000n, leader: 'successor' });
  });

  it('the writer never writes below what is stored, and writes nothing when the fence says it no longer leads', async () => {
    const cluster = uniqueId('c');
    await writeCheckpoint(store, { cluster, revision: 50n, leader: 'a', term: 9n, timeline: 0, fence: leading });
    assert.deepEqual(await writeCheckpoint(store, { cluster, revision: 40n, leader: 'b', term: 9n, timeline: 0, fence: leading }), {
      kind: 'behind',
      stored: 50n,
    });
    assert.deepEqual(await writeCheckpoint(store, { cluster, revision: 50n, leader: 'b', term: 9n, timeline: 0, fence: leading }), {
      kind: 'behind',
      stored: 50n,
    });
    assert.deepEqual(await writeCheckpoint(store, { cluster, revision: 60n, leader: 'b', term: 9n, timeline: 0, fence: async () => false }), {
      kind: 'not-leader',
    });
    await assert.rejects(
      writeCheckpoint(store, { cluster, revision: 60n, leader: 'b', term: 9n, timeline: 0, fence: () => Promise.reject(new Error('etcd away')) }),
      /etcd away/,
    );
    const rows = await store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.checkpoints WHERE cluster = {cluster:String}', { cluster });
    assert.equal(rows[0]?.n, '1');
    assert.equal(await readCheckpoint(store, cluster), 50n);
    assert.equal(await readCheckpoint(store, uniqueId('none')), 0n);
  });

  it('the migration carries checkpoints written before it over, the highest per cluster', async () => {
    const only001 = tempDir('lockaudit-sql-');
    const old = new AuditStore({ mode: 'embedded', path: dataDir.dir, database: 'lockaudit_old' });
    try {
      copyFileSync(path.join(sqlDir, '001_events_checkpoints_gaps.sql'), path.join(only001.dir, '001_events_checkpoints_gaps.sql'));
      await migrate(old, { dir: only001.dir });
      await old.insert('checkpoints', [{ cluster: 'c1', revision: '700', leader: 'a' }]);
      await old.insert('checkpoints', [{ cluster: 'c1', revision: '650', leader: 'b' }]);
      await old.insert('checkpoints', [{ cluster: 'c2', revision: '5', leader: 'a' }]);
      await migrate(old);
      assert.equal(await readCheckpoint(old, 'c1'), 700n);
      assert.equal(await readCheckpoint(old, 'c2'), 5n);
    } finally {
      await old.close();
      only001.remove();
    }
  });
});
