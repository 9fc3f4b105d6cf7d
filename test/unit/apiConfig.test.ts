// The API-edge and archive config keys: defaults, environment variables, masking.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, maskedConfig } from '../../core/config.js';

describe('api and archive config keys', () => {
  it('have defaults', () => {
    const c = loadConfig({ env: {} });
    assert.deepEqual(c.api, {
      metricsRequireToken: false,
      exportDownloadSeconds: 300,
      canaryIntervalSeconds: 0,
      maxWaitersPerKey: 256,
      maxWaiters: 10_000,
      maxPendingRequests: 64,
      maxPendingRequestsPerKey: 4,
    });
    assert.deepEqual(c.archive, { alarmAfterSeconds: 3600, pollIntervalMs: 2000 });
  });
  it('are set from the environment; the cursor secret is masked', () => {
    const c = loadConfig({
      env: {
        LOCKAUDIT_METRICS_REQUIRE_TOKEN: 'true',
        LOCKAUDIT_EXPORT_DOWNLOAD_SECONDS: '60',
        LOCKAUDIT_ARCHIVE_ALARM_AFTER_SECONDS: '120',
        LOCKAUDIT_ARCHIVE_POLL_INTERVAL_MS: '500',
        LOCKAUDIT_CURSOR_SECRET: 's'.repeat(40),
      },
    });
    assert.equal(c.api.metricsRequireToken, true);
    assert.equal(c.api.exportDownloadSeconds, 60);
    assert.deepEqual(c.archive, { alarmAfterSeconds: 120, pollIntervalMs: 500 });
    assert.equal(c.api.cursorSecret, 's'.repeat(40));
    assert.equal((maskedConfig(c).api as { cursorSecret: string }).cursorSecret, '****');
  });
  it('refuses a bad value naming its variable', () => {
    assert.throws(() => loadConfig({ env: { LOCKAUDIT_METRICS_REQUIRE_TOKEN: 'yes' } }), /LOCKAUDIT_METRICS_REQUIRE_TOKEN/);
    assert.throws(() => loadConfig({ env: { LOCKAUDIT_CURSOR_SECRET: 'short' } }), /cursorSecret|CURSOR_SECRET/);
  });
});
