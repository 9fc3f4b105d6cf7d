// The chain's keys (exporters/digests/format.ts keyTrail, walkChain): a
// hand-over signed by both keys moves signing to the next key and every later
// digest must be signed by it; a recovery moves it to a new key only when the
// verifier's own keyring holds that key. Each forgery an insider with the
// bucket and one key (not the other) could try is named.
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { describe, it } from 'node:test';
import { generateDigestSigner, keyringOf, parseKeyring, keyringPem, type DigestSigner } from '../../core/digestKey.js';
import {
  describeKeyChange,
  digestObjectName,
  EventsHasher,
  GENESIS_HASH,
  manifestSignatureProblem,
  signDigest,
  signManifest,
  walkChain,
  type Digest,
  type DigestBody,
} from '../../exporters/digests/format.js';
import { periodBody } from '../support/digestBody.js';

const A = generateDigestSigner();
const B = generateDigestSigner();
const C = generateDigestSigner();
const pub = (s: DigestSigner) => createPublicKey(s.publicKeyPem);
const T0 = Date.UTC(2026, 11, 1, 3, 0, 0);

interface Link {
  by: DigestSigner;
  handoverTo?: DigestSigner;
  /** Sign the hand-over with this key instead of the one it names (a forgery). */
  nextSignedBy?: DigestSigner;
  recovery?: { lostKeyId: string };
}

function chain(links: readonly Link[]): Digest[] {
  const out: Digest[] = [];
  links.forEach((l, i) => {
    const h = new EventsHasher();
    const body: DigestBody = {
      ...periodBody(i, T0, {
        events: h.digest({ after: null, through: { timeline: '0', revision: String(i + 1) } }),
        prevHash: out[i - 1]?.hash ?? GENESIS_HASH,
        keyId: l.by.keyId,
        createdAt: new Date(T0 + (i + 1) * 1000).toISOString(),
      }),
      ...(l.handoverTo ? { handover: { nextKeyId: l.handoverTo.keyId, nextPublicKeyPem: l.handoverTo.publicKeyPem } } : {}),
      ...(l.recovery ? { recovery: { ...l.recovery, reason: 'key destroyed with its host, no backup', authorizedAt: new Date(T0).toISOString() } } : {}),
    };
    let d = signDigest(body, l.by, l.handoverTo);
    if (l.nextSignedBy) d = { ...d, nextSignature: l.nextSignedBy.sign(Buffer.from(JSON.stringify('x'))) };
    out.push(d);
  });
  return out;
}

const walk = (ds: readonly Digest[], ...trusted: DigestSigner[]) =>
  walkChain(
    'c1',
    ds.map((d) => ({ object: digestObjectName('c1', d.seq), digest: d })),
    keyringOf(trusted.map(pub)),
  );
const problems = (w: ReturnType<typeof walk>) => w.periods.flatMap((p) => p.problems.map((x) => `${p.periodStart}: ${x}`));

describe('digest keys: rotation and loss', () => {
  it('a hand-over signed by both keys moves signing to the next key: the old key alone verifies the whole chain, and the change is named', () => {
    const ds = chain([{ by: A }, { by: A, handoverTo: B }, { by: B }, { by: B }]);
    const w = walk(ds, A);
    assert.deepEqual(problems(w), []);
    assert.equal(w.currentKeyId, B.keyId);
    assert.deepEqual(
      w.keyChanges.map((c) => [c.seq, c.kind, c.fromKeyId, c.toKeyId]),
      [[2, 'handover', A.keyId, B.keyId]],
    );
    assert.match(describeKeyChange(w.keyChanges[0] as (typeof w.keyChanges)[0]), /handed signing over from key .* \(signed by both\)/);
  });

  it('names a hand-over the next key did not sign, and every digest that key signs after it', () => {
    const ds = chain([{ by: A }, { by: A, handoverTo: C, nextSignedBy: C }, { by: C }]);
    const p = problems(walk(ds, A));
    assert.match(p[0] ?? '', /hand-over to key .* that key did not sign/);
    assert.match(p[1] ?? '', /signed by another key/);
    // No hand-over at all: a digest by a key the chain never named.
    assert.match(problems(walk(chain([{ by: A }, { by: C }]), A)).join(), /signed by another key \(key id [0-9a-f]{16}, expected /);
  });

  it('names a hand-over whose named key id is not the key it carries', () => {
    const ds = chain([{ by: A }, { by: A, handoverTo: B }, { by: B }]);
    const d2 = ds[1] as Digest;
    // The bucket's writer swaps in C's public key under B's id, re-hashing and signing with A? They hold no key: only
    // the content changes, so the hash names it first. With A's key (a stolen old key), the key id mismatch still shows.
    const forged = signDigest(
      {
        ...(d2 as DigestBody),
        handover: { nextKeyId: B.keyId, nextPublicKeyPem: C.publicKeyPem },
        hash: undefined,
        signature: undefined,
        nextSignature: undefined,
      } as unknown as DigestBody,
      A,
      { ...C, keyId: B.keyId },
    );
    const p = problems(walk([ds[0] as Digest, forged, ...ds.slice(2)], A));
    assert.match(p.join(), /a hand-over to key [0-9a-f]{16} whose public key is another/);
  });

  it('names the old key signing after its hand-over (a stolen retired key), even when the verifier trusts it', () => {
    const ds = chain([{ by: A }, { by: A, handoverTo: B }, { by: B }, { by: A }]);
    const p = problems(walk(ds, A, B));
    assert.equal(p.length, 1);
    assert.match(p[0] ?? '', /signed by key .* after the chain handed signing over from it \(seq 2\)/);
  });

  it('trusts a recovery only with the new key in the verifier keyring, and says so', () => {
    const ds = chain([{ by: A }, { by: A }, { by: C, recovery: { lostKeyId: A.keyId } }, { by: C }]);
    const untrusted = problems(walk(ds, A));
    assert.match(untrusted[0] ?? '', /a recovery signed by key [0-9a-f]{16}, which your keyring does not hold/);
    assert.match(untrusted[1] ?? '', /signed by another key/);
    const trusted = walk(ds, A, C);
    assert.deepEqual(problems(trusted), []);
    assert.equal(trusted.currentKeyId, C.keyId);
    const change = trusted.keyChanges[0];
    assert.deepEqual([change?.seq, change?.kind, change?.fromKeyId, change?.toKeyId], [3, 'recovery', A.keyId, C.keyId]);
    assert.match(
      describeKeyChange(change as NonNullable<typeof change>),
      /recovered the chain after key .* was lost.*only your keyring vouches for.*no backup/,
    );
  });

  it('names a recovery back to a key the chain already used: a retired (leaked) key cannot take the chain back', () => {
    // A hands over to B; whoever kept A claims B was lost and goes on under A.
    const back = chain([{ by: A }, { by: A, handoverTo: B }, { by: B }, { by: A, recovery: { lostKeyId: B.keyId } }, { by: A }]);
    const p = problems(walk(back, A, B));
    assert.match(p[0] ?? '', /a recovery to key [0-9a-f]{16}, which the chain has already used/);
    assert.match(p[1] ?? '', /after the chain handed signing over from it|but the chain is signed by key/);
    // Recovered to C; whoever kept the lost A claims C was lost in turn and moves back to A.
    const twice = chain([{ by: A }, { by: C, recovery: { lostKeyId: A.keyId } }, { by: A, recovery: { lostKeyId: C.keyId } }]);
    assert.match(problems(walk(twice, A, C)).join(), /a recovery to key [0-9a-f]{16}, which the chain has already used/);
  });

  it('says a recovery that is the first digest read (a stretch starting at it)', () => {
    const ds = chain([{ by: A }, { by: C, recovery: { lostKeyId: A.keyId } }, { by: C }]);
    const w = walkChain(
      'c1',
      ds.slice(1).map((d) => ({ object: digestObjectName('c1', d.seq), digest: d })),
      keyringOf([pub(C)]),
    );
    assert.deepEqual(
      w.keyChanges.map((c) => [c.seq, c.kind, c.fromKeyId, c.toKeyId]),
      [[2, 'recovery', A.keyId, C.keyId]],
    );
  });

  it('names a recovery from a key the chain was not signed by', () => {
    const ds = chain([{ by: A }, { by: A, handoverTo: B }, { by: C, recovery: { lostKeyId: A.keyId } }]);
    assert.match(problems(walk(ds, A, C)).join(), /a recovery from key [0-9a-f]{16}, but the chain was signed by key /);
  });

  it('a keyring file holds several keys; a manifest signed by any of them holds, by another key not', () => {
    const ring = parseKeyring(keyringPem(keyringOf([pub(A), pub(B)])));
    assert.deepEqual([...ring.keys()], [A.keyId, B.keyId]);
    assert.equal(manifestSignatureProblem(signManifest({ object: 'x' }, A), ring), undefined);
    assert.equal(manifestSignatureProblem(signManifest({ object: 'x' }, B), ring), undefined);
    assert.match(manifestSignatureProblem(signManifest({ object: 'x' }, C), ring) ?? '', /not a digest key/);
    assert.throws(() => parseKeyring('nothing here'), /holds no PEM public key/);
  });
});
