// The one envelope (core/proof.ts): every proof names its algorithm and key id, binds its kind, and is refused
// when a bound field, the key, the kind or the key id differs. Pre-envelope bare MACs read as before only for
// the kinds that had them.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import type { EpochValue, LockClass } from '../../core/keyspace.js';
import {
  classMac,
  clockMac,
  epochMac,
  forceMac,
  hasValidClassProof,
  hasValidClockProof,
  hasValidEpochProof,
  hasValidForceProof,
  hasValidProof,
  hasValidRequestProof,
  holdMac,
  proofKeyId,
  requestHash,
  requestMac,
} from '../../core/proof.js';

const secret = Buffer.from('unit-proof-secret-0123456789abcdef');
const other = Buffer.from('unit-proof-other-secret-0123456789');
const hold = { holder: 'w1', session: '77', class: 'default', epoch: 1, waitMs: 0, at: 1_000 };
const legacyMac = (message: unknown[]) => createHmac('sha256', secret).update(JSON.stringify(message)).digest('base64url');

describe('proof envelope', () => {
  it("names its algorithm and key id, and the key id is the key's", () => {
    const mac = holdMac(secret, '/l/ns/a', hold);
    assert.match(mac, /^hs256\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{43}$/);
    assert.equal(mac.split('.')[1], proofKeyId(secret));
    assert.notEqual(proofKeyId(secret), proofKeyId(other));
    assert.ok(hasValidProof(secret, '/l/ns/a', { ...hold, mac }));
  });

  it('refuses another key, another key id, another algorithm, another key path, an edited field', () => {
    const mac = holdMac(secret, '/l/ns/a', hold);
    const [, , body] = mac.split('.');
    assert.equal(hasValidProof(other, '/l/ns/a', { ...hold, mac }), false);
    assert.equal(hasValidProof(secret, '/l/ns/a', { ...hold, mac: `hs256.${proofKeyId(other)}.${body}` }), false);
    assert.equal(hasValidProof(secret, '/l/ns/a', { ...hold, mac: `es256.${proofKeyId(secret)}.${body}` }), false);
    assert.equal(hasValidProof(secret, '/l/ns/b', { ...hold, mac }), false);
    assert.equal(hasValidProof(secret, '/l/ns/a', { ...hold, holder: 'w2', mac }), false);
    assert.equal(hasValidProof(secret, '/l/ns/a', { ...hold, mac: `${mac}x` }), false);
    assert.equal(hasValidProof(secret, '/l/ns/a', { ...hold, mac: 'x'.repeat(10_000) }), false);
  });

  it('a proof of one kind is never a proof of another with the same fields', () => {
    const fields = ['id-1', 'ns/a'];
    const at = { lease: '5', createRevision: '90' };
    const force = requestMac(secret, 'force-request', fields, at);
    assert.ok(hasValidRequestProof(secret, 'force-request', fields, at, force));
    assert.equal(hasValidRequestProof(secret, 'epoch-request', fields, at, force), false);
    assert.equal(hasValidRequestProof(secret, 'force-request', fields, { ...at, lease: '6' }, force), false, 'another lease');
    assert.equal(
      hasValidRequestProof(secret, 'force-request', fields, { ...at, createRevision: '95' }, force),
      false,
      'the key made again (even on a lease of the same id)',
    );
    assert.equal(hasValidRequestProof(secret, 'force-request', ['id-2', 'ns/a'], at, force), false, 'another id');
    assert.notEqual(requestHash('force-request', fields, at), requestHash('force-request', fields, { ...at, lease: '6' }));
  });

  it('reads a pre-envelope bare MAC for holds, clocks and force records, never for an epoch or a class', () => {
    assert.ok(hasValidProof(secret, '/l/ns/a', { ...hold, mac: legacyMac(['/l/ns/a', 'w1', '77', 'default', 1, 0, 1_000]) }));
    assert.ok(hasValidClockProof(secret, { at: 5, mac: legacyMac(['clock/v1', 5, '3', '4']) }, { createRevision: '3', version: '4' }));
    const force = {
      id: 'f',
      key: 'ns/a',
      holder: 'w',
      session: '7',
      token: '9',
      class: 'c',
      enforcement: 'fenced' as const,
      requester: 'a',
      approver: 'b',
      reason: 'r',
      requestedAt: 1,
      approvedAt: 2,
      revokedSession: false,
    };
    const bare = legacyMac(['force/v1', 'f', 'ns/a', 'w', '7', '9', 'c', 'fenced', 'a', 'b', 'r', 1, 2, false]);
    assert.ok(hasValidForceProof(secret, { ...force, mac: bare }));
    assert.equal(hasValidForceProof(secret, { ...force, requestHash: 'a'.repeat(64), mac: bare }), false, 'a legacy MAC covers no request hash');
    assert.ok(hasValidForceProof(secret, { ...force, requestHash: 'a'.repeat(64), mac: forceMac(secret, { ...force, requestHash: 'a'.repeat(64) }) }));
    const epoch: EpochValue = { epoch: 2, clusterId: '9', from: '0' };
    assert.equal(hasValidEpochProof(secret, { ...epoch, mac: legacyMac([2, '9', '0']) }), false);
  });

  it('binds /sys/epoch to the value it replaced, and a class to its key, create revision and version', () => {
    const epoch: EpochValue = { epoch: 2, clusterId: '9', from: '41' };
    const mac = epochMac(secret, epoch);
    assert.ok(hasValidEpochProof(secret, { ...epoch, mac }));
    assert.equal(hasValidEpochProof(secret, { ...epoch, from: '42', mac }), false);
    assert.equal(hasValidEpochProof(secret, { ...epoch, epoch: 3, mac }), false);
    assert.equal(hasValidEpochProof(secret, { epoch: 2, clusterId: '9', mac }), false, 'no from: never proven');
    const cls: LockClass = {
      name: 'pay',
      namespace: 'payments',
      purpose: 'correctness',
      enforcement: 'advisory',
      riskOwner: 'sec',
      waiverExpires: '2026-01-01',
      ttlSeconds: 30,
      tier: 'coord',
      onQuorumLoss: 'closed',
      fairness: 'memory',
    };
    const cmac = classMac(secret, cls, '10', '2');
    assert.ok(hasValidClassProof(secret, 'pay', { ...cls, mac: cmac }, { createRevision: '10', version: '2' }));
    assert.equal(
      hasValidClassProof(secret, 'pay', { ...cls, waiverExpires: '2099-01-01', mac: cmac }, { createRevision: '10', version: '2' }),
      false,
      'a renewed waiver',
    );
    assert.equal(hasValidClassProof(secret, 'pay', { ...cls, mac: cmac }, { createRevision: '10', version: '5' }), false, 'put again later');
    assert.equal(hasValidClassProof(secret, 'pay', { ...cls, mac: cmac }, { createRevision: '30', version: '2' }), false, 'deleted and made again');
    assert.equal(hasValidClassProof(secret, 'other', { ...cls, mac: cmac }, { createRevision: '10', version: '2' }), false, 'under another name');
    assert.equal(hasValidClockProof(secret, { at: 5, mac: clockMac(secret, 5, '3', '4') }, { createRevision: '3', version: '5' }), false);
  });
});
