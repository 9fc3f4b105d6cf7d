// tailer/sink/rowWriter.ts against an embedded ClickHouse: the one three-table
// insert retries what is worth retrying and, when ClickHouse rejects rows,
// quarantines exactly those rows and writes the rest (issue 11, defect 2).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuditStore, InsertOptions } from '../../core/clickhouse.js';
import type { AuditEventRow } from '../../core/events.js';
import { randomBytes } from 'node:crypto';
import { hasValidQuarantinedGrantProof } from '../../core/proof.js';
import { classifyInsertError, writeRows } from '../../tailer/sink/rowWriter.js';
import type { GrantRow } from '../../tailer/types.js';
import { uniqueId } from '../support/env.js';
import { fileStore } from '../support/fileStore.js';

const db = fileStore();

function event(cluster: string, revision: number, patch: Partial<Record<keyof AuditEventRow, unknown>> = {}): AuditEventRow {
  const row = {
    cluster,
    revision: String(revision),
    key: `/l/ns/k${revision}`,
    event_type: 'grant',
    op: 'put',
    namespace: 'ns',
    lock_path: `k${revision}`,
    class: 'c',
    holder: 'h',
    session: '1',
    token: String(revision),
    epoch: 0,
    grant_revision: String(revision),
    wait_ms: 3,
    wall_time: Date.now(),
    time_estimated: 0,
    time_error_ms: 0,
    create_revision: String(revision),
    mod_revision: String(revision),
    version: '1',
    lease: '1',
    value: `{"v":${revision}}`,
    prev_value: '',
    unprotected: 0,
  };
  return { ...row, ...patch } as unknown as AuditEventRow;
}

const fast = { initialMs: 1, maxMs: 5 };

describe('row writer', () => {
  it('quarantines exactly the rows ClickHouse would reject or mangle, found as the batch is encoded (one insert), with the reason and raw value, and writes the rest', async () => {
    const cluster = uniqueId('c');
    const events = Array.from({ length: 40 }, (_, i) => event(cluster, 100 + i));
    events[7] = event(cluster, 107, { op: 'bogus' }); // ClickHouse rejects it (not an element of the Enum)
    events[23] = event(cluster, 123, { wait_ms: 1e21 }); // not a UInt64 (ClickHouse rejects it as "1e+21")
    events[31] = event(cluster, 131, { wall_time: Date.UTC(2500, 0, 1) }); // ClickHouse would store 2299-12-31: out of range
    events[35] = event(cluster, 135, { wall_time: 9e18 }); // not even a safe integer of milliseconds
    let inserts = 0;
    const counting = Object.create(db.store, {
      insert: { value: (t: string, v: readonly object[], o?: InsertOptions) => ((inserts += 1), db.store.insert(t, v, o)) },
    }) as AuditStore;
    const { quarantined } = await writeRows(counting, { events, grants: [], quarantine: [] }, { retry: fast });
    // One insert of the 36 rows and one of the quarantine (before: each rejected row found by bisecting, more).
    assert.equal(inserts, 2);
    assert.deepEqual(quarantined.map((q) => q.revision).sort(), ['107', '123', '131', '135']);
    const stored = await db.store.rows<{ revision: string }>('SELECT revision FROM {db:Identifier}.events FINAL WHERE cluster = {c:String} ORDER BY revision', {
      c: cluster,
    });
    assert.deepEqual(
      stored.map((r) => r.revision),
      events.map((e) => e.revision).filter((r) => !['107', '123', '131', '135'].includes(r)),
    );
    const q = await db.store.rows<{ revision: string; key: string; value: string; reason: string }>(
      'SELECT revision, key, value, reason FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} ORDER BY revision',
      { c: cluster },
    );
    assert.deepEqual(
      q.map((r) => r.revision),
      ['107', '123', '131', '135'],
    );
    assert.equal(q[0]?.value, '{"v":107}');
    assert.equal(q[0]?.key, '/l/ns/k107');
    for (const r of q) assert.match(r.reason, /^ClickHouse rejected the events row: /);
    assert.match(q[0]?.reason ?? '', /"bogus" in column op \(Enum8\)/);
    assert.match(q[1]?.reason ?? '', /in column wait_ms \(UInt64\)/);
    assert.match(q[2]?.reason ?? '', /in column wall_time \(DateTime64\(3\), 1900-01-01 \.\. 2299-12-31\)/);
    assert.match(q[3]?.reason ?? '', /in column wall_time \(DateTime64\(3\)\)/);
  });

  it("a grant row ClickHouse rejects goes to quarantine with the tailer's proof of its change (sql/240), which the grants check alone trusts", async () => {
    const cluster = uniqueId('c');
    const secret = randomBytes(32);
    const e = event(cluster, 300);
    const grant = {
      cluster,
      key: 'ns/k300',
      namespace: 'ns',
      lock_path: 'k300',
      class: 'c',
      holder: 'h',
      session: '1',
      token: '300',
      epoch: 0,
      grant_revision: '300',
      spool_id: '',
      granted_at: Date.now(),
      wait_ms: 1e21,
      end_kind: '',
      end_revision: '0',
      ended_at: null,
      ended_at_error_ms: 0,
      duration_ms: null,
      unprotected: 0,
      start_known: 1,
      row_version: '0',
      origin: 'api',
    } as unknown as GrantRow;
    const { quarantined } = await writeRows(db.store, { events: [e], grants: [grant], quarantine: [] }, { retry: fast, proofSecret: secret, timeline: 2 });
    assert.deepEqual(
      quarantined.map((q) => [q.op, q.revision, q.key]),
      [['grants-row', '300', '/l/ns/k300']],
    );
    const [q] = await db.store.rows<{ revision: string; key: string; proof: string }>(
      "SELECT toString(revision) AS revision, key, proof FROM {db:Identifier}.quarantine FINAL WHERE cluster = {c:String} AND op = 'grants-row'",
      { c: cluster },
    );
    assert.ok(q && hasValidQuarantinedGrantProof(secret, { cluster, timeline: 2, revision: q.revision, key: q.key }, q.proof), JSON.stringify(q));
    assert.equal(hasValidQuarantinedGrantProof(secret, { cluster, timeline: 0, revision: q.revision, key: q.key }, q.proof), false, 'bound to its timeline');
    assert.equal(
      hasValidQuarantinedGrantProof(randomBytes(32), { cluster, timeline: 2, revision: q.revision, key: q.key }, q.proof),
      false,
      "another key's check refuses it",
    );
  });

  it('retries a connection error until the insert succeeds, and does not quarantine anything', async () => {
    const cluster = uniqueId('c');
    let failures = 2;
    const flaky = Object.create(db.store, {
      insert: {
        value: async (t: string, v: readonly object[], o?: InsertOptions) => {
          if (failures > 0) {
            failures -= 1;
            throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' });
          }
          return db.store.insert(t, v, o);
        },
      },
    }) as AuditStore;
    const retries: number[] = [];
    const { quarantined } = await writeRows(
      flaky,
      { events: [event(cluster, 5)], grants: [], quarantine: [] },
      { retry: { ...fast, onRetry: (_e, a) => retries.push(a) } },
    );
    assert.deepEqual(quarantined, []);
    assert.deepEqual(retries, [1, 2]);
    const stored = await db.store.rows<{ n: string }>('SELECT count() AS n FROM {db:Identifier}.events WHERE cluster = {c:String}', { c: cluster });
    assert.equal(stored[0]?.n, '1');
  });

  it('tells rejected rows from errors worth retrying', () => {
    assert.equal(classifyInsertError({ type: 'CANNOT_PARSE_INPUT_ASSERTION_FAILED', code: '27' }), 'permanent');
    assert.equal(classifyInsertError({ type: 'TOO_MANY_PARTS', code: '252' }), 'retry');
    assert.equal(classifyInsertError({ type: 'TIMEOUT_EXCEEDED', code: '159' }), 'retry');
    assert.equal(classifyInsertError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })), 'retry');
  });
});
