// The first minute of `npm run demo`: logs a person can read on a terminal
// (pino-pretty), JSON lines otherwise or when asked, and the banner that says
// where to go. The banner's commands run against a live instance in
// test/integration/monitoring.test.ts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { demoBanner } from '../../cli/demo.js';
import { buildCli } from '../../cli/main.js';
import { resolveLogFormat } from '../../core/logger.js';
import { projectRoot } from '../../core/paths.js';

const run = promisify(execFile);

describe('demo start: log format and banner', () => {
  it('auto is pretty on a terminal and JSON otherwise; json and pretty are what they say', () => {
    assert.equal(resolveLogFormat('auto', true), 'pretty');
    assert.equal(resolveLogFormat('auto', false), 'json');
    assert.equal(resolveLogFormat('json', true), 'json');
    assert.equal(resolveLogFormat('pretty', false), 'pretty');
  });

  it('lockaudit start takes --log-format auto|json|pretty (default auto) and refuses anything else', async () => {
    const start = buildCli().commands.find((c) => c.name() === 'start');
    const option = start?.options.find((o) => o.long === '--log-format');
    assert.equal(option?.defaultValue, 'auto');
    assert.deepEqual(option?.argChoices, ['auto', 'json', 'pretty']);
    await assert.rejects(
      run(process.execPath, ['bin/lockaudit.js', 'start', '--log-format', 'xml'], { cwd: projectRoot }),
      /Allowed choices are auto, json, pretty/,
    );
  });

  it("pino-pretty's transport writes one readable line per entry, tokens still redacted", async () => {
    const script = `import('./core/logger.ts').then((m) => { const l = m.createLogger('info', { role: 'demo' }, m.prettyDestination()); l.info({ token: 'sekret-123', cluster: 'local' }, 'demo workload running'); });`;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '-e', script], { cwd: projectRoot });
    // Colour codes (a terminal gets them) aside.
    const line = stdout.trim().replace(/\x1b\[[0-9;]*m/g, '');
    assert.throws(() => JSON.parse(line), 'not JSON');
    assert.match(line, /^\[\d\d:\d\d:\d\d\] INFO: demo workload running/);
    assert.match(line, /"role":"demo"/);
    assert.doesNotMatch(line, /sekret-123/);
    assert.match(line, /\[redacted\]/);
  });

  it('the banner names the console URL, the token file to sign in with, three commands and how to stop', () => {
    const b = demoBanner('http://127.0.0.1:8080', "/data/it's/demo-tokens.json");
    assert.match(b, /Console {5}http:\/\/127\.0\.0\.1:8080\/ui\//);
    assert.match(b, /"investigator" token from \/data\/it's\/demo-tokens\.json/);
    assert.equal(b.split('\n').filter((l) => l.trim().startsWith('curl ')).length, 3);
    assert.match(b, /node -p 'require\("\/data\/it'\\''s\/demo-tokens\.json"\)\.investigator'/, 'the path is shell-quoted');
    assert.match(b, /Ctrl-C/);
    assert.ok(b.split('\n').length <= 12, 'short');
  });
});
