// verify's quarantine check (issue 40 item 3) on real chdb: the rows the tailer
// writes for values it cannot decode pass; each way an insider who can write the
// store edits the quarantine view is named with its revision and key.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { checkQuarantine, formatQuarantineProblem, type QuarantineProblem } from '../../exporters/checks/quarantineCheck.js';
import { decodeRevision, finishRevision } from '../../tailer/decode/decoder.js';
import { writeRows } from '../../tailer/sink/rowWriter.js';
import type { Change, QuarantineRow, RowBatch } from '../../tailer/types.js';
import { tempStore, uniqueId } from '../support/env.js';

const secret = randomBytes(32);
const put = (key: string, value: string, rev: string): Change => ({
  type: 'put',
  kv: { key, value, createRevision: rev, modRevision: rev, version: '1', lease: '0' },
});
const del = (key: string, rev: string, prevValue: string): Change => ({
  type: 'delete',
  kv: { key, value: '', createRevision: '0', modRevision: rev, version: '0', lease: '0' },
  prev: { key, value: prevValue, createRevision: '90', modRevision: '90', version: '1', lease: '0' },
});
const hold = JSON.stringify({ holder: 'spiffe://x/a', session: '1', class: 'payments', epoch: 0, waitMs: 7, at: Date.now() - 60_000 });

describe('the quarantine check', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  before(async () => ({ store, close } = await tempStore()));
  after(async () => close());

  const written = async (cluster: string): Promise<void> => {
    const now = Date.now();
    const batch: RowBatch = { events: [], grants: [], quarantine: [] };
    const revisions: Array<[bigint, Change[]]> = [
      [100n, [put('/l/ns/a', 'not a hold', '100')]],
      [101n, [put('/l/ns/b', '{"holder":', '101')]],
      [102n, [del('/l/ns/c', '102', 'garbage removed')]],
      [103n, [put('/l/ns/held', hold, '103')]],
      [104n, [put('/sys/election/tailer.x/694d', 'replica-1', '104')]], // 'other', by design without an entry
    ];
    for (const [revision, changes] of revisions) {
      const rows = finishRevision(decodeRevision({ cluster, startKnown: () => true }, { revision, changes }), {
        lowerMs: now - 120_000,
        upperMs: now - 60_000,
      });
      batch.events.push(...rows.events);
      batch.grants.push(...rows.grants);
      batch.quarantine.push(...rows.quarantine);
    }
    // A row the store refused (no events row backs it) and a spool line: both proved by their writer.
    const refused: QuarantineRow = {
      cluster,
      revision: '105',
      key: '/l/ns/refused',
      op: 'put',
      value: 'x'.repeat(10),
      reason: 'ClickHouse rejected the events row: test',
    };
    const spool: QuarantineRow = { cluster, revision: '0', key: '/spool/local.jsonl@1:0', op: 'spool', value: '{', reason: 'spool line: not JSON' };
    batch.quarantine.push(refused, spool);
    assert.equal(batch.quarantine.length, 5, 'three undecodable changes, the refused row and the spool line');
    await writeRows(store, batch, { proofSecret: secret });
  };
  const check = (cluster: string): Promise<QuarantineProblem[]> =>
    checkQuarantine(store, cluster, { fromMs: Date.now() - 3_600_000, toMs: Date.now() }, { tailerSecret: secret });
  const named = (problems: QuarantineProblem[]): string[] => problems.map((p) => `${p.revision} ${p.key}`).sort();

  it('passes what the tailer and the spool shipper wrote, and names each entry removed, edited, forged or copied', async () => {
    const cluster = uniqueId('qc');
    await written(cluster);
    assert.deepEqual((await check(cluster)).map(formatQuarantineProblem), []);

    const cmd = (sql: string, params: Record<string, unknown>): Promise<void> => store.command(sql, { c: cluster, ...params }, { mutations_sync: '2' });
    // 1. The entry of an undecodable change removed: the quarantine view hides a forged hold value.
    await cmd('ALTER TABLE {db:Identifier}.quarantine DELETE WHERE cluster = {c:String} AND revision = 100', {});
    let found = await check(cluster);
    assert.deepEqual(named(found), ['100 /l/ns/a']);
    assert.match(found[0]?.problem ?? '', /no quarantine entry for a change the tailer could not decode/);
    // 2. A proven entry's reason edited.
    await cmd(`ALTER TABLE {db:Identifier}.quarantine UPDATE reason = 'harmless' WHERE cluster = {c:String} AND revision = 101`, {});
    found = await check(cluster);
    assert.deepEqual(named(found), ['100 /l/ns/a', '101 /l/ns/b']);
    assert.match(found.find((p) => p.revision === '101')?.problem ?? '', /proof does not match/);
    // 3. A delete's entry with its proof taken off and its value changed (judged against the captured change).
    await cmd(`ALTER TABLE {db:Identifier}.quarantine UPDATE proof = '', value = 'other bytes' WHERE cluster = {c:String} AND revision = 102`, {});
    found = await check(cluster);
    assert.deepEqual(named(found), ['100 /l/ns/a', '101 /l/ns/b', '102 /l/ns/c']);
    assert.match(found.find((p) => p.revision === '102')?.problem ?? '', /another value than the captured change/);
    // 4. An entry written by hand for a good hold, without proof; 5. one with the refused row's proof copied onto it;
    // 6. a refused grant row without the tailer's proof.
    const [refused] = await store.rows<{ proof: string }>('SELECT proof FROM {db:Identifier}.quarantine WHERE cluster = {c:String} AND revision = 105', {
      c: cluster,
    });
    assert.ok(refused?.proof, 'the refused row carries its proof');
    await store.insert('quarantine', [
      { cluster, revision: '103', key: '/l/ns/held', op: 'put', value: hold, reason: 'hold value could not be decoded' },
      {
        cluster,
        revision: '106',
        key: '/l/ns/refused',
        op: 'put',
        value: 'x'.repeat(10),
        reason: 'ClickHouse rejected the events row: test',
        proof: refused.proof,
      },
      { cluster, revision: '107', key: '/l/ns/gone', op: 'grants-row', value: '', reason: 'ClickHouse rejected the grants row: test' },
    ]);
    found = await check(cluster);
    assert.deepEqual(named(found), ['100 /l/ns/a', '101 /l/ns/b', '102 /l/ns/c', '103 /l/ns/held', '106 /l/ns/refused', '107 /l/ns/gone']);
    assert.match(found.find((p) => p.revision === '103')?.problem ?? '', /no captured change backs and no writer proved/);
    assert.match(found.find((p) => p.revision === '106')?.problem ?? '', /proof does not match/);
    assert.match(found.find((p) => p.revision === '107')?.problem ?? '', /without the tailer's proof/);
    // Without the origin secret nothing proven can be told from a forgery: only backed entries pass.
    const blind = await checkQuarantine(store, cluster, { fromMs: Date.now() - 3_600_000, toMs: Date.now() }, { limit: 50 });
    assert.ok(
      blind.some((p) => p.revision === '105'),
      'the refused row, unbacked, is not passed without the secret',
    );
  });

  it('judges nothing outside the range, and bounds what it reads', async () => {
    const cluster = uniqueId('qc');
    await written(cluster);
    await store.insert('quarantine', [{ cluster, revision: '103', key: '/l/ns/held', op: 'put', value: hold, reason: 'forged' }]);
    assert.deepEqual(await checkQuarantine(store, cluster, { fromMs: Date.now() - 7_200_000, toMs: Date.now() - 3_600_000 }, { tailerSecret: secret }), []);
    // Entries in order (0 spool, 101, 102, 103 forged, 105): read two at a time, at most two.
    const bounded = await checkQuarantine(
      store,
      cluster,
      { fromMs: Date.now() - 3_600_000, toMs: Date.now() },
      { tailerSecret: secret, maxRows: 2, pageRows: 2 },
    );
    assert.equal(bounded.length, 1, bounded.map(formatQuarantineProblem).join('\n'));
    assert.match(bounded[0]?.problem ?? '', /more than 2 quarantine entries in the range: the rest were not checked/);
    const all = await checkQuarantine(store, cluster, { fromMs: Date.now() - 3_600_000, toMs: Date.now() }, { tailerSecret: secret, pageRows: 2 });
    assert.deepEqual(named(all), ['103 /l/ns/held'], 'read two at a time, the forged entry on the second page is named');
  });
});
