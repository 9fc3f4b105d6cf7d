// A reader's scope over grant filters (grants/scope.ts scopeRead): what a
// request names outside the scope is refused naming the field and the scope;
// what it leaves open is narrowed and reported; an unscoped reader is never
// narrowed. And the SQL parameters the scope binds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LockauditError } from '../../core/errors.js';
import { namesCanary, scopeCovers, scopeParams, scopeRead } from '../../grants/scope.js';

const field = (n: string) => `querystring.${n}`;
const pay = { namespaces: ['payments'], clusters: [] };
const finC1 = { namespaces: ['billing', 'payments'], clusters: ['c1'] };

const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof LockauditError);
    assert.equal(err.code, 'LOCKAUDIT_ERR_AUTH_SCOPE');
    assert.equal(err.status, 403);
    return err.message;
  }
  assert.fail('not refused');
};

describe('a reader scope over grant filters', () => {
  it('an unscoped reader is neither refused nor narrowed, whatever it names', () => {
    assert.equal(scopeRead(null, { namespace: 'hr', cluster: 'c9', key: 'hr/x' }, field), null);
    assert.deepEqual(scopeParams(null), {
      scopeNamespaces: [],
      scopeClusters: [],
      canaryNamespace: 'lockaudit-canary',
      canaryHolder: 'lockaudit-canary',
      withCanary: 0,
    });
  });

  it('refuses a namespace, key, key prefix or cluster outside the scope, naming the field and the scope', () => {
    assert.match(
      refusal(() => scopeRead(pay, { namespace: 'hr' }, field)),
      /^querystring\.namespace: namespace hr is outside .*namespaces payments\)$/,
    );
    assert.match(
      refusal(() => scopeRead(pay, { key: 'hr/payroll' }, field)),
      /^querystring\.key: namespace hr/,
    );
    assert.match(
      refusal(() => scopeRead(pay, { keyPrefix: 'hr/p' }, field)),
      /^querystring\.keyPrefix: namespace hr/,
    );
    assert.match(
      refusal(() => scopeRead(finC1, { cluster: 'c2', namespace: 'payments' }, field)),
      /^querystring\.cluster: cluster c2 .*namespaces billing, payments and clusters c1/,
    );
    // One inside and one outside is still outside.
    assert.match(
      refusal(() => scopeRead(pay, { namespace: 'payments', key: 'hr/payroll' }, field)),
      /querystring\.key/,
    );
  });

  it('narrows what a request leaves open, and only that side', () => {
    assert.deepEqual(scopeRead(pay, {}, field), { namespaces: ['payments'], clusters: [] });
    assert.deepEqual(scopeRead(pay, { keyPrefix: 'pay' }, field), { namespaces: ['payments'], clusters: [] }); // spans payments and payroll
    assert.deepEqual(scopeRead(pay, { cluster: 'c7' }, field), { namespaces: ['payments'], clusters: [] }); // a holder or token pins no namespace either
    assert.equal(scopeRead(pay, { keyPrefix: 'payments/' }, field), null);
    assert.equal(scopeRead(pay, { key: 'payments/a', cluster: 'c7' }, field), null); // no cluster bound in this scope
    assert.deepEqual(scopeRead(finC1, { namespace: 'billing' }, field), { namespaces: [], clusters: ['c1'] });
    assert.deepEqual(scopeRead(finC1, { cluster: 'c1' }, field), { namespaces: ['billing', 'payments'], clusters: [] });
    assert.equal(scopeRead(finC1, { cluster: 'c1', namespace: 'payments' }, field), null);
  });

  it('binds the scope for the SQL bound', () => {
    assert.deepEqual(scopeParams(finC1), {
      scopeNamespaces: ['billing', 'payments'],
      scopeClusters: ['c1'],
      canaryNamespace: 'lockaudit-canary',
      canaryHolder: 'lockaudit-canary',
      withCanary: 0,
    });
    assert.equal(scopeParams(null, 'include').withCanary, 1, 'the record (exports, the grants check) keeps the canary');
  });

  it("leaves the canary's grants out of a read unless the filter names its namespace, a key or a key prefix in it", () => {
    assert.equal(namesCanary({}), false);
    assert.equal(namesCanary({ keyPrefix: 'lockaudit' }), false, 'a prefix that spans namespaces does not name it');
    assert.equal(namesCanary({ keyPrefix: 'lockaudit-canary/' }), true);
    assert.equal(namesCanary({ namespace: 'lockaudit-canary' }), true);
    assert.equal(namesCanary({ key: 'lockaudit-canary/host-1' }), true);
    assert.equal(namesCanary({ key: 'lockaudit-canary-x/a' }), false);
  });

  it('lets a reader see an export only when its scope covers the scope the export was made under', () => {
    const payC1 = { namespaces: ['payments'], clusters: ['c1'] };
    assert.equal(scopeCovers(null, null), true, 'an unscoped reader sees an unscoped export');
    assert.equal(scopeCovers(null, payC1), true, 'and a scoped one');
    assert.equal(scopeCovers(payC1, null), false, 'an unscoped export holds every namespace');
    assert.equal(scopeCovers(payC1, payC1), true);
    assert.equal(scopeCovers(finC1, payC1), true, 'payments ⊂ billing, payments; c1 = c1');
    assert.equal(scopeCovers(payC1, finC1), false, 'billing is outside payments');
    assert.equal(scopeCovers({ namespaces: ['payments'], clusters: [] }, payC1), true, 'every cluster covers c1');
    assert.equal(scopeCovers(payC1, { namespaces: ['payments'], clusters: [] }), false, 'an export of every cluster is outside c1');
    assert.equal(scopeCovers({ namespaces: [], clusters: ['c1'] }, { namespaces: ['hr'], clusters: ['c1'] }), true);
    assert.equal(scopeCovers({ namespaces: [], clusters: ['c1'] }, { namespaces: ['hr'], clusters: ['c2'] }), false);
  });
});
