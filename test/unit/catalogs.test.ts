// Every error code and every alarm has its runbook entry in docs/runbook.md
// (what it means, what to do), and the runbook has none that the code does not
// have (fastify's habit for FST_ERR_*).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { errorCatalog } from '../../core/errors.js';
import { alarm, alarmCatalog, alarmName } from '../../platform/alarms.js';

const runbook = readFileSync(new URL('../../docs/runbook.md', import.meta.url), 'utf8');

/** The `### \`CODE\`` entries under a `## heading`, each with its `- **Field**: value` lines. */
function entries(heading: string): Map<string, Map<string, string>> {
  const start = runbook.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `docs/runbook.md has a "## ${heading}" section`);
  const end = runbook.indexOf('\n## ', start + 1);
  const section = runbook.slice(start, end < 0 ? undefined : end);
  const found = new Map<string, Map<string, string>>();
  for (const entry of section.split('\n### ').slice(1)) {
    const [title = '', ...body] = entry.split('\n');
    const m = /^`(LOCKAUDIT_[A-Z_]+)`$/.exec(title);
    assert.ok(m, `docs/runbook.md: an entry under "${heading}" is headed by its code in backticks: ${title}`);
    assert.ok(!found.has(m[1] as string), `${m[1]}: one entry`);
    const fields = new Map<string, string>();
    for (const line of body) {
      const f = /^- \*\*([^*]+)\*\*: (.*)$/.exec(line);
      if (f) fields.set(f[1] as string, (f[2] as string).trim());
    }
    found.set(m[1] as string, fields);
  }
  return found;
}

describe('catalogs documented in docs/runbook.md', () => {
  it('has an entry for every error code with its HTTP status, what it means and what to do, and no other', () => {
    const found = entries('Error codes');
    assert.deepEqual([...found.keys()].sort(), Object.keys(errorCatalog).sort());
    for (const [code, spec] of Object.entries(errorCatalog)) {
      const fields = found.get(code) ?? new Map<string, string>();
      assert.equal(fields.get('HTTP'), String(spec.status), `${code}: runbook status`);
      assert.ok(fields.get('What it means'), `${code}: runbook says what it means`);
      assert.ok(fields.get('What to do'), `${code}: runbook says what to do`);
    }
  });

  it('has an entry for every alarm with its instance name, message, what it means and what to do, and no other', () => {
    const found = entries('Alarms');
    assert.deepEqual([...found.keys()].sort(), Object.keys(alarmCatalog).sort());
    for (const [code, spec] of Object.entries(alarmCatalog)) {
      const fields = found.get(code) ?? new Map<string, string>();
      assert.equal(fields.get('Instance'), `\`${spec.instance}\``, `${code}: runbook names the instance ${spec.instance}`);
      assert.equal(fields.get('Message'), spec.message, `${code}: runbook gives the message`);
      assert.ok(fields.get('What it means'), `${code}: runbook says what it means`);
      assert.ok(fields.get('What to do'), `${code}: runbook says what to do`);
    }
  });

  it('alarm codes follow LOCKAUDIT_ALARM_<AREA>_<WHAT> and error codes LOCKAUDIT_ERR_<AREA>_<WHAT>', () => {
    for (const code of Object.keys(alarmCatalog)) assert.match(code, /^LOCKAUDIT_ALARM_[A-Z]+_[A-Z_]+$/);
    for (const code of Object.keys(errorCatalog)) assert.match(code, /^LOCKAUDIT_ERR_[A-Z]+(_[A-Z_]+)?$/);
  });

  it('an alarm is named by its bounded labels and says its facts in the message', () => {
    const lag = alarm('LOCKAUDIT_ALARM_TAILER_LAG', { cluster: 'east' }, { lagRevisions: 12n, alarmAt: 10 });
    assert.deepEqual(lag, {
      code: 'LOCKAUDIT_ALARM_TAILER_LAG',
      name: 'tailer-lag:east',
      message: 'tailer for east is 12 revisions behind (alarm at 10 revisions)',
    });
    assert.equal(alarmName('LOCKAUDIT_ALARM_FORCE_ARCHIVE_UNLOCKED', { cluster: 'east' }), 'force-archive:east:unlocked');
  });
});
