// The API's port check before anything slow starts: a taken port and an
// address this machine cannot listen on each end `start` with one line.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { isLockauditError } from '../../core/errors.js';
import { assertPortFree } from '../../cli/portCheck.js';

describe('assertPortFree', () => {
  it('resolves for a free port, names a taken one, and names LOCKAUDIT_HOST for an address not on this machine', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const port = (server.address() as { port: number }).port;
    try {
      await assert.rejects(assertPortFree('127.0.0.1', port), (err) => isLockauditError(err, 'LOCKAUDIT_ERR_START_PORT_IN_USE'));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    await assertPortFree('127.0.0.1', port);
    // TEST-NET-3 (RFC 5737): never an address of this machine. Before: the raw EADDRNOTAVAIL with its stack.
    await assert.rejects(assertPortFree('203.0.113.7', port), (err) => {
      assert.ok(isLockauditError(err, 'LOCKAUDIT_ERR_CONFIG_INVALID'), String(err));
      assert.match(err.message, /LOCKAUDIT_HOST \(host\): cannot listen on 203\.0\.113\.7:\d+ \(EADDRNOTAVAIL\)/);
      return true;
    });
  });
});
