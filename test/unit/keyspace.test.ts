import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyKey, classRuleViolations, decodeValue, HoldValueSchema, parseLockName, type LockClass } from '../../core/keyspace.js';

const fenced: LockClass = {
  name: 'payments',
  namespace: 'payments',
  purpose: 'correctness',
  enforcement: 'fenced',
  ttlSeconds: 15,
  tier: 'entity',
  onQuorumLoss: 'closed',
  fairness: 'memory',
  pauseTest: 'PT-1',
};

describe('keyspace', () => {
  it('classifies keys', () => {
    assert.deepEqual(classifyKey('/l/payments/acct-42'), { kind: 'hold', lock: 'payments/acct-42', namespace: 'payments', path: 'acct-42' });
    assert.deepEqual(classifyKey('/q/payments/acct-42/7587862'), {
      kind: 'queue',
      lock: 'payments/acct-42',
      namespace: 'payments',
      path: 'acct-42',
      leaseId: '7587862',
    });
    assert.deepEqual(classifyKey('/sys/epoch'), { kind: 'epoch' });
    assert.deepEqual(classifyKey('/sys/force/abc'), { kind: 'force', id: 'abc' });
    assert.deepEqual(classifyKey('/l/nonamespace'), { kind: 'other' });
  });

  it('validates lock names', () => {
    assert.ok(parseLockName('a/b/c'));
    for (const bad of ['a', '/a/b', 'a//b', 'a/b/', `a/${'x'.repeat(600)}`, "a/b'; DROP TABLE x", 'a/b c']) assert.equal(parseLockName(bad), undefined, bad);
  });

  it('decodes values without throwing', () => {
    assert.equal(decodeValue(HoldValueSchema, '{not json'), undefined);
    assert.equal(decodeValue(HoldValueSchema, '{"holder":"a"}'), undefined);
    const v = decodeValue(HoldValueSchema, JSON.stringify({ holder: 'a', session: '7587862', class: 'c', epoch: 1, waitMs: 0, at: 1 }));
    assert.equal(v?.session, '7587862');
  });

  it('accepts a valid fenced class and names every broken rule', () => {
    assert.deepEqual(classRuleViolations(fenced), []);
    const broken = classRuleViolations({ ...fenced, enforcement: 'advisory', ttlSeconds: 10, onQuorumLoss: 'open', pauseTest: undefined });
    assert.deepEqual(broken.sort(), [
      'onQuorumLoss: open is only for efficiency classes',
      'riskOwner: required when enforcement is advisory',
      'ttlSeconds: advisory classes need at least 30',
      'waiverExpires: required when enforcement is advisory',
    ]);
    assert.deepEqual(classRuleViolations({ ...fenced, pauseTest: undefined, purpose: 'efficiency', onQuorumLoss: 'open' }).sort(), [
      'onQuorumLoss: open is not allowed for fenced classes',
      'pauseTest: fenced classes need a reference to a passed pause test',
    ]);
  });
});
