// The digest format and chain walk (exporters/digests/format.ts) on chains
// built in memory: an intact chain passes; a removed digest, two adjacent
// ones, an altered one, one signed by another key, and a superseding digest
// are each named at the period they sit in.
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { describe, it } from 'node:test';
import { generateDigestSigner, keyringOf, type DigestSigner } from '../../core/digestKey.js';
import {
  chainSegment,
  digestHash,
  eventLine,
  digestObjectName,
  EventsHasher,
  EVENTS_ENCODING_V1,
  GENESIS_HASH,
  signDigest,
  signManifest,
  walkChain,
  type ChainEntry,
  type Digest,
  type DigestBody,
  type DigestEvent,
} from '../../exporters/digests/format.js';
import { canonicalJson } from '../../exporters/hashChain.js';
import { periodBody } from '../support/digestBody.js';
import { verify } from 'node:crypto';

const signer = generateDigestSigner();
const publicKey = createPublicKey(signer.publicKeyPem);
const keyring = keyringOf([publicKey]);
const T0 = Date.UTC(2026, 11, 1, 3, 0, 0);

function event(revision: number, key: string): DigestEvent {
  return {
    cluster: 'c1',
    timeline: '0',
    revision: String(revision),
    key,
    eventType: 'grant',
    op: 'put',
    origin: 'api',
    namespace: 'ns',
    lockPath: 'k',
    class: 'x',
    holder: 'h',
    session: '1',
    token: '11258999068426240',
    epoch: '40',
    grantRevision: '0',
    waitMs: '0',
    wallTimeMs: String(T0),
    timeEstimated: '0',
    timeErrorMs: '0',
    createRevision: String(revision),
    modRevision: String(revision),
    version: '1',
    lease: '1',
    value: '{}',
    prevValue: '',
    unprotected: '0',
    rolledBackBy: '0',
    supersededBy: '0',
    valueBytes: '2',
    valueSha256: '',
    prevValueBytes: '0',
    prevValueSha256: '',
  };
}

function chainOf(n: number, by: DigestSigner = signer): Digest[] {
  const out: Digest[] = [];
  for (let i = 0; i < n; i++) {
    const h = new EventsHasher();
    h.add(event(10 * i + 1, `/l/ns/k${i}`));
    const body = periodBody(i, T0, {
      events: h.digest({ after: i === 0 ? null : { timeline: '0', revision: String(10 * i) }, through: { timeline: '0', revision: String(10 * i + 10) } }),
      prevHash: out[i - 1]?.hash ?? GENESIS_HASH,
      keyId: by.keyId,
    });
    out.push(signDigest(body, by));
  }
  return out;
}

const entries = (ds: readonly Digest[]): ChainEntry[] => ds.map((d) => ({ object: digestObjectName(d.cluster, d.seq), digest: d }));
const failing = (ds: readonly Digest[]) => walkChain('c1', entries(ds), keyring).periods.filter((p) => p.problems.length > 0);

describe('digest format', () => {
  it('hashes events in a canonical encoding: the same events give the same hash, one changed field another', () => {
    const a = new EventsHasher();
    const b = new EventsHasher();
    const c = new EventsHasher();
    for (const h of [a, b]) h.add(event(5, '/l/ns/a'));
    c.add({ ...event(5, '/l/ns/a'), holder: 'mallory' });
    const range = { after: null, through: { timeline: '0', revision: '5' } };
    const [da, db] = [a, b].map((h) => h.digest(range).sha256);
    assert.equal(da, db);
    // The fast line is exactly the canonical JSON of the event's fields.
    const e = event(5, '/l/ns/"quoted"\u00e9');
    assert.equal(eventLine(e), `${canonicalJson(e)}\n`);
    const changed = c.digest(range);
    assert.notEqual(da, changed.sha256);
    assert.equal(changed.count, '1');
  });

  it("v2 seals a kept prefix's whole size and sha256; v1 (periods sealed before) hashes its own fields only, as it always did", () => {
    const range = { after: null, through: { timeline: '0', revision: '5' } };
    const kept = { ...event(5, '/l/ns/big'), value: 'x'.repeat(10), valueBytes: '2000000', valueSha256: 'a'.repeat(64) };
    const hashOf = (e: DigestEvent, encoding?: typeof EVENTS_ENCODING_V1) => {
      const h = new EventsHasher(encoding);
      h.add(e);
      return h.digest(range);
    };
    const v2 = hashOf(kept);
    assert.equal(v2.encoding, 'lockaudit-events-v2');
    // An insider who edits what the store says of the whole value (its sha256, or its size) changes the v2 hash.
    assert.notEqual(hashOf({ ...kept, valueSha256: 'b'.repeat(64) }).sha256, v2.sha256);
    assert.notEqual(hashOf({ ...kept, valueBytes: '2000001' }).sha256, v2.sha256);
    assert.notEqual(hashOf({ ...kept, prevValueSha256: 'c'.repeat(64) }).sha256, v2.sha256);
    // v1: exactly the line of the v1 fields (a digest sealed before 290 still verifies), blind to the four new ones.
    const v1 = hashOf(kept, EVENTS_ENCODING_V1);
    assert.equal(v1.encoding, 'lockaudit-events-v1');
    const { valueBytes: _a, valueSha256: _b, prevValueBytes: _c, prevValueSha256: _d, ...v1Fields } = kept;
    assert.equal(eventLine(kept, EVENTS_ENCODING_V1), `${canonicalJson(v1Fields)}\n`);
    assert.equal(hashOf({ ...kept, valueSha256: 'b'.repeat(64) }, EVENTS_ENCODING_V1).sha256, v1.sha256);
    assert.notEqual(v1.sha256, v2.sha256);
  });

  it('signs the canonical JSON of the body: a verifier with only the public key accepts it, and the hash covers every field', () => {
    const [d] = chainOf(1) as [Digest];
    const { hash: _h, signature, ...body } = d;
    assert.ok(verify(null, Buffer.from(canonicalJson(body)), publicKey, Buffer.from(signature, 'base64')));
    assert.equal(digestHash(d), d.hash);
    assert.notEqual(digestHash({ ...d, events: { ...d.events, count: '2' } }), d.hash);
  });

  it('passes an intact chain, one period per digest', () => {
    const walk = walkChain('c1', entries(chainOf(5)), keyring);
    assert.equal(walk.periods.length, 5);
    assert.deepEqual(
      walk.periods.flatMap((p) => p.problems),
      [],
    );
    assert.deepEqual(walk.problems, []);
  });

  it('names the period of a removed digest, and of two adjacent removed digests', () => {
    const chain = chainOf(6);
    const one = failing(chain.filter((d) => d.seq !== 3));
    assert.deepEqual(
      one.map((p) => p.periodStart),
      [chain[2]?.periodStart],
    );
    assert.match(one[0]?.problems.join() ?? '', /digest seq 3 is missing/);
    const two = failing(chain.filter((d) => d.seq !== 3 && d.seq !== 4));
    assert.deepEqual(
      two.map((p) => p.periodStart),
      [chain[2]?.periodStart, chain[3]?.periodStart],
    );
    assert.match(two[0]?.problems.join() ?? '', /digests seq 3–4 are missing/);
  });

  it('names an altered digest and the link after it, and one signed by another key', () => {
    const chain = chainOf(4);
    const altered = chain.map((d) => (d.seq === 2 ? { ...d, events: { ...d.events, count: '0' } } : d));
    const a = failing(altered);
    assert.equal(a[0]?.periodStart, chain[1]?.periodStart);
    assert.match(a[0]?.problems.join() ?? '', /altered/);
    const other = generateDigestSigner();
    const forged = chainOf(4, other)[1] as Digest;
    // Re-linked so only the key gives it away.
    const relinked = signDigest({ ...(chain[1] as Digest), keyId: other.keyId, hash: undefined, signature: undefined } as unknown as DigestBody, other);
    const b = failing(chain.map((d) => (d.seq === 2 ? relinked : d)));
    assert.equal(b[0]?.periodStart, chain[1]?.periodStart);
    assert.match(b[0]?.problems.join() ?? '', /signed by another key/);
    // Claiming our key id but signed with another: the signature fails.
    const claimed = { ...relinked, keyId: signer.keyId };
    const fixedHash = { ...claimed, hash: digestHash(claimed) };
    const c = failing(chain.map((d) => (d.seq === 2 ? fixedHash : d)));
    assert.match(c[0]?.problems.join() ?? '', /signature invalid/);
    assert.ok(forged);
  });

  it('tells a jump far ahead as a bounded number of missing periods (a digest added by hand dated in year 100000 ran the walk out of memory)', () => {
    const [d1] = chainOf(1) as [Digest];
    const far = Date.UTC(100000, 0, 1);
    const forged = { ...d1, seq: 2, prevHash: d1.hash, periodStart: new Date(far).toISOString(), periodEnd: new Date(far + 1).toISOString() };
    const walk = walkChain('c1', entries([d1, { ...forged, hash: digestHash(forged) }]), keyring);
    assert.ok(walk.periods.length <= 10_003, `${walk.periods.length} periods`);
    assert.ok(walk.periods.some((p) => p.problems.some((x) => /no digest covers it/.test(x))));
  });

  it('lets a later digest supersede a period, keeping the old one named', () => {
    const chain = chainOf(3);
    const old = chain[0] as Digest;
    const h = new EventsHasher();
    h.add(event(1, '/l/ns/k0'));
    h.add(event(2, '/l/ns/late'));
    const sup = signDigest(
      {
        ...old,
        seq: 4,
        supersedes: { seq: 1, hash: old.hash },
        prevHash: (chain[2] as Digest).hash,
        events: h.digest({ after: null, through: old.events.through }),
        hash: undefined,
        signature: undefined,
      } as unknown as DigestBody,
      signer,
    );
    const walk = walkChain('c1', entries([...chain, sup]), keyring);
    assert.deepEqual(
      walk.periods.flatMap((p) => p.problems),
      [],
    );
    const first = walk.periods[0];
    assert.equal(first?.digest?.seq, 4);
    assert.deepEqual(first?.superseded, [1]);
    assert.deepEqual(
      chainSegment([...chain, sup], Date.parse(old.periodStart), Date.parse(old.periodEnd)).map((d) => d.seq),
      [1, 2, 3, 4],
    );
  });

  it('signs a manifest over its canonical JSON without the signature', () => {
    const m = signManifest({ object: 'x', sha256: 'ab', rows: '1' }, signer);
    const { signature, ...rest } = m;
    assert.ok(verify(null, Buffer.from(canonicalJson(rest)), publicKey, Buffer.from(signature.value, 'base64')));
  });
});
