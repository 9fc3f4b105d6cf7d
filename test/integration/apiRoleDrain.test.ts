// The api role's shutdown drains in-flight requests for at most api.shutdownDrainMs (default half the shutdown
// deadline), then closes their connections: a long request (an on-demand risk register on a loaded store) held a demo's whole shutdown past
// its deadline in a CI run ("still closing api" after 20 s, SIGKILL). A real api role (lock engine on the suite's
// etcd, the test file's own store) with one slow route of the test's.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { ApiTokenVerifier } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { HealthState } from '../../platform/health.js';
import type { Runtime } from '../../platform/runtime.js';
import { startApiRole } from '../../roles/api.js';
import { tempStore, testConfig } from '../support/env.js';

describe('the api role at shutdown', () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  before(async () => ({ store, close } = await tempStore()));
  after(async () => close());

  it('closes a request still running after half the shutdown deadline, and stops', async () => {
    const port = Number(process.env.LOCKAUDIT_TEST_PORT_BASE ?? 24000) + 97;
    const config = testConfig({ LOCKAUDIT_PORT: String(port), LOCKAUDIT_SHUTDOWN_TIMEOUT_MS: '2000' });
    const lines: string[] = [];
    const runtime: Runtime = {
      config,
      logger: createLogger('warn', {}, { write: (s: string) => void lines.push(s) }),
      store,
      verifier: new ApiTokenVerifier(store),
      health: new HealthState(),
      metrics: new Registry(),
    };
    let entered: () => void = () => undefined;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let release: () => void = () => undefined;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const role = await startApiRole(runtime, () => [
      (app) => {
        app.get('/slow', async () => {
          entered();
          await slow; // a report that takes longer than any shutdown should wait
          return { ok: true };
        });
      },
    ]);
    try {
      const answer = fetch(`${role.url}/slow`).then(
        (r) => `answered ${r.status}`,
        (err: Error) => `connection closed (${err.message})`,
      );
      await inside;
      const t0 = Date.now();
      await role.close();
      const took = Date.now() - t0;
      assert.ok(took < 10_000, `the role stopped ${took} ms after close(), with the request still running (it waits for nothing past 1 s)`);
      assert.match(await answer, /^connection closed/);
      assert.ok(
        lines.some((l) => l.includes('requests still in flight at shutdown')),
        'the forced close is logged',
      );
    } finally {
      release();
    }
  });
});
