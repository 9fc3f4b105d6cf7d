// Request logs never carry a fencing token (core/logger.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger, redactUrl } from '../../core/logger.js';

describe('request logs', () => {
  it('never carry a fencing token from a query string', () => {
    assert.equal(redactUrl('/v1/grants?key=a/b&token=11258999068426240&limit=5'), '/v1/grants?key=a/b&token=[redacted]&limit=5');
    assert.equal(redactUrl('/v1/grants?token=1'), '/v1/grants?token=[redacted]');
    const lines: string[] = [];
    const log = createLogger('info', {}, { write: (s: string) => void lines.push(s) });
    log.info({ req: { method: 'GET', url: '/v1/grants?token=11258999068426240' } }, 'incoming request');
    assert.ok(lines.length === 1 && !lines[0]?.includes('11258999068426240'), lines.join(''));
  });
});
