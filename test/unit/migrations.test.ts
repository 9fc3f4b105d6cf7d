import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forCluster, inlineDatabase, loadMigrations, splitStatements } from '../../core/migrations.js';

describe('migration files', () => {
  it('are numbered in increasing order and split into statements', () => {
    const all = loadMigrations();
    assert.ok(all.length >= 3);
    assert.equal(all[0]?.version, 1);
    all.slice(1).forEach((m, i) => assert.ok(m.version > (all[i]?.version ?? Infinity), `${m.version} after ${all[i]?.version}`));
    assert.ok(all.every((m) => m.statements.length > 0 && m.statements.every((s) => !s.endsWith(';'))));
  });

  it('splits on ; at line ends and ignores comments', () => {
    assert.deepEqual(splitStatements("-- a; comment\nSELECT 1;\nSELECT ';' ;\n"), ['SELECT 1', "SELECT ';'"]);
  });

  it('orders the events table by (cluster, revision, key) in a ReplacingMergeTree', () => {
    const first = loadMigrations()[0];
    const events = first?.statements.find((s) => s.includes('.events'));
    assert.match(events ?? '', /ENGINE = ReplacingMergeTree\(ingested_at\)\s+ORDER BY \(cluster, revision, key\)/);
  });

  it('rewrites statements for a ClickHouse cluster', () => {
    assert.equal(
      forCluster('CREATE TABLE IF NOT EXISTS {db:Identifier}.events (a UInt8) ENGINE = ReplacingMergeTree(a) ORDER BY a', 'prod'),
      'CREATE TABLE IF NOT EXISTS {db:Identifier}.events ON CLUSTER prod (a UInt8) ENGINE = ReplicatedReplacingMergeTree(a) ORDER BY a',
    );
    assert.equal(forCluster('CREATE DATABASE IF NOT EXISTS {db:Identifier}', 'prod'), 'CREATE DATABASE IF NOT EXISTS {db:Identifier} ON CLUSTER prod');
    assert.match(forCluster('CREATE TABLE IF NOT EXISTS x (a UInt8) ENGINE = MergeTree ORDER BY a', 'c'), /ENGINE = ReplicatedMergeTree ORDER/);
    assert.equal(
      forCluster('RENAME TABLE d.a TO d.a_old,\n             d.b TO d.a', 'c'),
      'RENAME TABLE d.a TO d.a_old,\n             d.b TO d.a ON CLUSTER c',
    );
  });

  it('spells the database into {db:Name} only, and only a valid name', () => {
    assert.equal(
      inlineDatabase("ATTACH PARTITION ID 'all' FROM {db:Name}.events INTO {db:Identifier}.x", 'lockaudit'),
      "ATTACH PARTITION ID 'all' FROM `lockaudit`.events INTO {db:Identifier}.x",
    );
    assert.equal(inlineDatabase('SELECT 1 FROM {db:Identifier}.events', 'bad`name'), 'SELECT 1 FROM {db:Identifier}.events');
    assert.throws(() => inlineDatabase('SELECT 1 FROM {db:Name}.events', 'bad`name'), /cannot be spelled/);
  });
});
