// The force archive's hash chain: building links, and verification naming
// every missing, altered, replaced or duplicated record.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  archiveObjectName,
  canonicalJson,
  chainRecord,
  EMPTY_HEAD,
  GENESIS_HASH,
  recordHash,
  verifyChain,
  type ArchivedForceRecord,
  type ChainEntry,
} from '../../exporters/hashChain.js';

const PREFIX = 'force/';
const name = (r: Pick<ArchivedForceRecord, 'cluster' | 'createRevision' | 'key'>): string => archiveObjectName(PREFIX, r.cluster, r.createRevision, r.key);

function value(i: number): string {
  return JSON.stringify({
    id: `f${i}`,
    key: `payments/acct-${i}`,
    holder: 'spiffe://corp/w',
    session: '7587862000',
    token: '11258999069426240',
    class: 'payments',
    enforcement: 'fenced',
    requester: 'alice@corp',
    approver: 'bob@corp',
    reason: `stuck ${i}`,
    requestedAt: 1_700_000_000_000 + i,
    approvedAt: 1_700_000_001_000 + i,
    revokedSession: false,
  });
}

function chain(n: number, cluster = 'local'): ArchivedForceRecord[] {
  const out: ArchivedForceRecord[] = [];
  let head = EMPTY_HEAD;
  for (let i = 1; i <= n; i++) {
    const r = chainRecord(head, cluster, { key: `/sys/force/f${i}`, value: value(i), createRevision: String(100 + i * 7) });
    out.push(r);
    head = { seq: r.seq, hash: r.hash };
  }
  return out;
}

const entries = (records: ArchivedForceRecord[]): ChainEntry[] => records.map((r) => ({ object: name(r), record: r }));

describe('hash chain', () => {
  it('links each record to the previous one of its cluster, starting from the genesis hash', () => {
    const c = chain(3);
    assert.equal(c[0]?.prevHash, GENESIS_HASH);
    assert.equal(c[1]?.prevHash, c[0]?.hash);
    assert.equal(c[2]?.prevHash, c[1]?.hash);
    assert.deepEqual(
      c.map((r) => r.seq),
      [1, 2, 3],
    );
    assert.equal(c[0]?.record?.token, '11258999069426240', 'the token stays a decimal string');
    for (const r of c) assert.equal(recordHash(r), r.hash);
  });

  it('is deterministic: canonical JSON does not depend on key order', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } }), '{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}');
    const a = chainRecord(EMPTY_HEAD, 'x', { key: '/sys/force/a', value: value(1), createRevision: '5' });
    const b = chainRecord(EMPTY_HEAD, 'x', { key: '/sys/force/a', value: value(1), createRevision: '5' });
    assert.equal(a.hash, b.hash);
  });

  it('names objects by zero-padded create revision, so a listing is in commit order', () => {
    assert.equal(archiveObjectName('force/', 'c1', '42', '/sys/force/ab-1'), 'force/c1/00000000000000000042-ab-1.json');
    assert.ok(name({ cluster: 'c', createRevision: '99', key: '/sys/force/a' }) < name({ cluster: 'c', createRevision: '100', key: '/sys/force/a' }));
  });

  it('verifies an intact chain', () => {
    assert.deepEqual(verifyChain('local', entries(chain(5)), name), []);
  });

  it('reports a removed record in the middle and at the start', () => {
    const c = chain(6);
    const middle = verifyChain('local', entries(c.filter((r) => r.seq !== 3 && r.seq !== 4)), name);
    assert.equal(middle.length, 1, JSON.stringify(middle));
    assert.equal(middle[0]?.kind, 'missing');
    assert.match(middle[0]?.detail ?? '', /seq 3–4 are missing/);
    const first = verifyChain('local', entries(c.slice(1)), name);
    assert.deepEqual(
      first.map((p) => [p.kind, p.seq]),
      [['missing', 1]],
    );
  });

  it('reports a record altered in place (hash no longer matches)', () => {
    const c = chain(4);
    const altered = { ...(c[1] as ArchivedForceRecord), value: (c[1] as ArchivedForceRecord).value.replace('stuck 2', 'routine') };
    const problems = verifyChain('local', entries([c[0] as ArchivedForceRecord, altered, c[2] as ArchivedForceRecord, c[3] as ArchivedForceRecord]), name);
    assert.ok(
      problems.some((p) => p.kind === 'altered' && p.seq === 2),
      JSON.stringify(problems),
    );
  });

  it('reports a record altered with its own hash recomputed (its successor still names the old hash)', () => {
    const c = chain(4);
    const forged: Omit<ArchivedForceRecord, 'hash'> = { ...(c[1] as ArchivedForceRecord), value: value(99) };
    const withHash = chainRecord({ seq: 1, hash: forged.prevHash }, 'local', { key: forged.key, value: forged.value, createRevision: forged.createRevision });
    const problems = verifyChain('local', entries([c[0] as ArchivedForceRecord, withHash, c[2] as ArchivedForceRecord, c[3] as ArchivedForceRecord]), name);
    assert.deepEqual(
      problems.map((p) => [p.kind, p.seq]),
      [['broken-link', 2]],
    );
  });

  it('reports a decoded record that differs from the committed value, a moved object, duplicates and unreadable objects', () => {
    const c = chain(3);
    const lying = { ...(c[0] as ArchivedForceRecord), record: { ...(c[0]?.record as NonNullable<ArchivedForceRecord['record']>), reason: 'nothing' } };
    lying.hash = recordHash(lying);
    const p1 = verifyChain('local', [{ object: name(lying), record: lying }], name);
    assert.equal(p1[0]?.kind, 'altered');
    const moved = verifyChain('local', [{ object: 'force/local/elsewhere.json', record: c[0] as ArchivedForceRecord }], name);
    assert.equal(moved[0]?.kind, 'altered');
    const dup = verifyChain('local', [...entries(c), { object: 'force/local/x.json', record: c[2] as ArchivedForceRecord }], name);
    assert.ok(dup.some((p) => p.kind === 'duplicate'));
    const unreadable = verifyChain('local', [...entries(c), { object: 'force/local/junk.json', error: 'not JSON' }], name);
    assert.deepEqual(
      unreadable.map((p) => p.kind),
      ['unreadable'],
    );
  });
});
