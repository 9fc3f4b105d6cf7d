import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { settlesWithin } from '../../platform/deadline.js';

describe('settlesWithin', () => {
  it('says whether work settled, resolved or rejected, before the deadline; never throws', async () => {
    assert.equal(await settlesWithin(Promise.resolve(1), 50), true);
    assert.equal(await settlesWithin(Promise.reject(new Error('no')), 50), true);
    assert.equal(await settlesWithin(new Promise(() => undefined), 30), false, 'a promise that never settles is given up on');
    const late = new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(await settlesWithin(late, 20), false);
  });
});
