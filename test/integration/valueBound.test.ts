// What the store keeps of a value (issue 42 item 1; core/valueBound.ts, sql/290): values written around the lock
// API up to etcd's 1.5 MiB were kept whole in `events` and `quarantine`. Put into the suite's etcd by hand, they
// are now captured as their first 64 KiB (whole characters), their size and their sha256: the quarantine entry
// and its proof stand for the whole value, a restart's witness check compares by sha256 (no false restore), and
// the digest (events encoding v2) seals the size and sha256, so an edit of either is seen. Real etcd and chdb,
// the tailer in this process.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Etcd3 } from 'etcd3';
import type { AuditStore } from '../../core/clickhouse.js';
import { createEtcdClient } from '../../core/etcd.js';
import { createLogger } from '../../core/logger.js';
import { originSecret } from '../../core/originSecret.js';
import { keptValue, VALUE_KEPT_BYTES } from '../../core/valueBound.js';
import { checkQuarantine } from '../../exporters/checks/quarantineCheck.js';
import { EVENTS_ENCODING_V1 } from '../../exporters/digests/format.js';
import { hashPeriodEvents } from '../../exporters/digests/periodContent.js';
import { HealthState } from '../../platform/health.js';
import { capturedStarts } from '../../tailer/recovery/gaps.js';
import { checkpointWitnesses } from '../../tailer/recovery/restores.js';
import { contradicts } from '../../tailer/recovery/startDecision.js';
import { TailerReplica } from '../../tailer/replica.js';
import { capturedRows, checkpointAtHead, waitFor } from '../support/capture.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';

const config = testConfig();
const endpoints = config.etcd.clusters[0]?.endpoints ?? [];
const log = createLogger(process.env.LOCKAUDIT_LOG_LEVEL ?? 'error');
const secret = originSecret(config);
const sha = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

interface StoredRow {
  rev: string;
  op_text: string;
  value: string;
  bytes: string;
  value_sha256: string;
  prev_value: string;
  prev_bytes: string;
  prev_value_sha256: string;
}

describe('what the store keeps of a value: 64 KiB, its size and its sha256', { timeout: 180_000 }, () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let client: Etcd3;
  const label = uniqueId('bound');
  const health = new HealthState();

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    client = createEtcdClient({ name: 'test', endpoints });
    await checkpointAtHead(store, client, label);
  });
  after(async () => {
    client.close();
    await closeStore();
  });

  it('captures a 1 MiB value and a multi-byte one as their prefix, size and sha256; quarantine, witnesses and digests read them as what they are', async () => {
    const ns = uniqueId('ns');
    // What our API never writes: not JSON, 1 MiB; and 'a' then two-byte characters, so the 64 KiB cut falls inside one.
    const big = `${ns}:${'x'.repeat(1_048_576)}`;
    const accented = `a${'é'.repeat(40_000)}`;
    const put = async (key: string, value: string) => BigInt((await client.put(key).value(value).exec()).header.revision);
    const bigAt = await put(`/l/${ns}/big`, big);
    const accentedAt = await put(`/l/${ns}/accented`, accented);
    const deletedAt = BigInt((await client.delete().key(`/l/${ns}/big`).exec()).header.revision);
    const smallAt = await put(`/l/${ns}/small`, 'not json, and small');
    // A hold-shaped value padded past the bound (a field the API never writes): a foreign grant, its value a prefix.
    const padded = JSON.stringify({ holder: 'h', session: '0', class: 'c', epoch: 1, waitMs: 0, at: Date.now(), pad: 'p'.repeat(70_000) });
    const paddedAt = await put(`/l/${ns}/padded`, padded);
    const fromMs = Date.now() - 60_000;
    const replica = new TailerReplica(
      { cluster: { name: label, endpoints }, store, log, health },
      { electionTtlSeconds: 3, checkpointIntervalMs: 100, originSecret: secret },
    );
    replica.start();
    try {
      await waitFor(
        'the five changes captured',
        async () => ((await capturedRows(store, label, bigAt, paddedAt)).length === 5 ? true : undefined),
        60_000,
        200,
      );
    } finally {
      await replica.close();
    }
    const rows = await store.rows<StoredRow>(
      `SELECT toString(revision) AS rev, toString(op) AS op_text, value, toString(value_bytes) AS bytes, value_sha256,
              prev_value, toString(prev_value_bytes) AS prev_bytes, prev_value_sha256
       FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} AND revision BETWEEN {lo:UInt64} AND {hi:UInt64} ORDER BY rev`,
      { c: label, lo: bigAt.toString(), hi: deletedAt.toString() },
    );
    const at = (r: bigint): StoredRow => rows.find((x) => x.rev === r.toString()) ?? assert.fail(`no row at ${r}`);
    // The put: its first 64 KiB, the whole size and sha256.
    assert.equal(at(bigAt).value, big.slice(0, VALUE_KEPT_BYTES));
    assert.equal(at(bigAt).bytes, String(Buffer.byteLength(big)));
    assert.equal(at(bigAt).value_sha256, sha(big));
    // Cut at a character boundary: 'a' and 32 767 whole 'é' (65 535 bytes), not half of the next one.
    assert.equal(at(accentedAt).value, `a${'é'.repeat(32_767)}`);
    assert.equal(at(accentedAt).bytes, String(Buffer.byteLength(accented)));
    assert.equal(at(accentedAt).value_sha256, sha(accented));
    // The delete's previous value the same way; a delete has no value of its own.
    assert.equal(at(deletedAt).prev_value, big.slice(0, VALUE_KEPT_BYTES));
    assert.equal(at(deletedAt).prev_value_sha256, sha(big));
    assert.equal(at(deletedAt).prev_bytes, String(Buffer.byteLength(big)));
    assert.deepEqual([at(deletedAt).value, at(deletedAt).bytes, at(deletedAt).value_sha256], ['', '0', '']);

    // Quarantined (no shape the API writes) the same way, and its proof stands for the whole value.
    const entries = await store.rows<{ rev: string; value: string; bytes: string; value_sha256: string }>(
      `SELECT toString(revision) AS rev, value, toString(value_bytes) AS bytes, value_sha256 FROM {db:Identifier}.quarantine FINAL
       WHERE cluster = {c:String} AND revision BETWEEN {lo:UInt64} AND {hi:UInt64} ORDER BY rev`,
      { c: label, lo: bigAt.toString(), hi: deletedAt.toString() },
    );
    assert.deepEqual(
      entries.map((e) => [e.rev, Buffer.byteLength(e.value) <= VALUE_KEPT_BYTES, e.bytes, e.value_sha256]),
      [
        [bigAt.toString(), true, String(Buffer.byteLength(big)), sha(big)],
        [accentedAt.toString(), true, String(Buffer.byteLength(accented)), sha(accented)],
        [deletedAt.toString(), true, String(Buffer.byteLength(big)), sha(big)],
      ],
    );
    const range = { fromMs, toMs: Date.now() + 60_000 };
    assert.deepEqual(await checkQuarantine(store, label, range, { tailerSecret: secret }), [], 'every entry proven, and backed by its change');
    // An entry whose sha256 is edited no longer matches its change (nor its proof).
    await store.command(
      'ALTER TABLE {db:Identifier}.quarantine UPDATE value_sha256 = {s:String} WHERE cluster = {c:String} AND revision = {r:UInt64}',
      { c: label, r: accentedAt.toString(), s: sha('another value') },
      { mutations_sync: '2' },
    );
    const named = await checkQuarantine(store, label, range, { tailerSecret: secret });
    assert.ok(
      named.some((p) => p.revision === accentedAt.toString()),
      JSON.stringify(named),
    );

    // The padded grant's start, asked for by its whole value (a snapshot's) or as a delete's row keeps it (a prefix
    // with the whole size and sha256): found either way; another sha256 is another value.
    const starts = capturedStarts(store, label, 0);
    const k = `/l/${ns}/padded`;
    const keptPadded = keptValue(padded);
    assert.equal(keptPadded.sha256, sha(padded));
    const startOf = async (q: { value: string; bytes?: number; sha256?: string }) => [
      ...(await starts([{ key: k, grantRevision: paddedAt.toString(), ...q }])),
    ];
    assert.deepEqual(await startOf({ value: padded }), [`${k}|${paddedAt}`]);
    assert.deepEqual(await startOf({ value: keptPadded.value, bytes: keptPadded.bytes, sha256: keptPadded.sha256 }), [`${k}|${paddedAt}`]);
    assert.deepEqual(await startOf({ value: keptPadded.value, bytes: keptPadded.bytes, sha256: sha('another') }), []);

    // A restart's witness: the big put checked against etcd's value at its revision, by size and sha256.
    const witnesses = await checkpointWitnesses(store, label, bigAt);
    const witness = witnesses.find((w) => w.revision === bigAt) ?? assert.fail('the big put is a witness');
    assert.equal(witness.sha256, sha(big));
    const [etcdAt] = (await client.kv.range({ key: Buffer.from(`/l/${ns}/big`), revision: bigAt.toString() })).kvs;
    assert.ok(etcdAt);
    const reading = { witness, read: 'history' as const, kv: { modRevision: bigAt, value: etcdAt.value.toString('utf8') } };
    assert.equal(contradicts(reading, bigAt), undefined, "etcd's own value is the one captured");
    const sameSize = `${ns}:${'y'.repeat(1_048_576)}`;
    assert.match(contradicts({ ...reading, kv: { modRevision: bigAt, value: sameSize } }, bigAt) ?? '', /with another value/);

    // The digest: v2 seals the size and sha256 of a kept prefix; an edit of either changes it (v1 could not see it).
    const period = { after: null, through: { timeline: '0', revision: deletedAt.toString() }, fromMs, toMs: Date.now() + 60_000 };
    const v2 = await hashPeriodEvents(store, label, period);
    let notWhole = 0;
    const v1 = await hashPeriodEvents(store, label, period, undefined, { onNotWholeUnderV1: () => (notWhole += 1) }, EVENTS_ENCODING_V1);
    // Checked under v1 (a period sealed when every value was kept whole), a row that says otherwise is named by verify.
    assert.equal(notWhole, 3, 'the two puts and the delete kept as prefixes');
    assert.equal(v2.encoding, 'lockaudit-events-v2');
    await store.command(
      'ALTER TABLE {db:Identifier}.events UPDATE value_sha256 = {s:String} WHERE cluster = {c:String} AND revision = {r:UInt64}',
      { c: label, r: bigAt.toString(), s: sha('another value') },
      { mutations_sync: '2' },
    );
    assert.notEqual((await hashPeriodEvents(store, label, period)).sha256, v2.sha256, 'the edit is seen under v2');
    assert.equal((await hashPeriodEvents(store, label, period, undefined, {}, EVENTS_ENCODING_V1)).sha256, v1.sha256, 'v1 hashes the prefix only');
    // The text kept is bound too (insider review): the entry and its change rewritten alike, the sha256 left as it
    // was (the change's put back first: it was edited above), so nothing but the entry's proof can tell.
    await store.command(
      'ALTER TABLE {db:Identifier}.events UPDATE value_sha256 = {s:String} WHERE cluster = {c:String} AND revision = {r:UInt64}',
      { c: label, r: bigAt.toString(), s: sha(big) },
      { mutations_sync: '2' },
    );
    for (const table of ['quarantine', 'events'])
      await store.command(
        `ALTER TABLE {db:Identifier}.${table} UPDATE value = {v:String} WHERE cluster = {c:String} AND revision = {r:UInt64}`,
        { c: label, r: bigAt.toString(), v: 'what the insider wants read' },
        { mutations_sync: '2' },
      );
    // And a value kept whole says its own size: another one is an edit.
    await store.command(
      'ALTER TABLE {db:Identifier}.quarantine UPDATE value_bytes = 7 WHERE cluster = {c:String} AND revision = {r:UInt64}',
      { c: label, r: smallAt.toString() },
      { mutations_sync: '2' },
    );
    const problems = await checkQuarantine(store, label, range, { tailerSecret: secret });
    assert.match(
      problems
        .filter((p) => p.revision === bigAt.toString())
        .map((p) => p.problem)
        .join('; '),
      /proof does not match/,
      JSON.stringify(problems),
    );
    assert.match(problems.find((p) => p.revision === smallAt.toString())?.problem ?? '', /size says 7 bytes/, JSON.stringify(problems));
  });
});
