// Every error code and every alarm is documented in README.md, and the README
// documents none that the code does not have (fastify's habit for FST_ERR_*).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { errorCatalog } from '../../core/errors.js';
import { alarm, alarmCatalog, alarmName } from '../../platform/alarms.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The codes in the first column of the table under a `## heading`, with the rest of their row. */
function tableRows(heading: string): Map<string, string> {
  const start = readme.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `README.md has a "## ${heading}" section`);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const rows = new Map<string, string>();
  for (const line of section.split('\n')) {
    const m = /^\| `(LOCKAUDIT_[A-Z_]+)` \|(.*)\|$/.exec(line);
    if (m) rows.set(m[1] as string, m[2] as string);
  }
  return rows;
}

describe('catalogs documented in README.md', () => {
  it('lists every error code with its HTTP status, and no other', () => {
    const rows = tableRows('Error codes');
    assert.deepEqual([...rows.keys()].sort(), Object.keys(errorCatalog).sort());
    for (const [code, spec] of Object.entries(errorCatalog)) {
      const status = (rows.get(code) ?? '').split('|')[0]?.trim();
      assert.equal(status, String(spec.status), `${code}: README status`);
    }
  });

  it('lists every alarm with its instance name and what to do, and no other', () => {
    const rows = tableRows('Alarms');
    assert.deepEqual([...rows.keys()].sort(), Object.keys(alarmCatalog).sort());
    for (const [code, spec] of Object.entries(alarmCatalog)) {
      const row = rows.get(code) ?? '';
      assert.ok(row.includes(`\`${spec.instance}\``), `${code}: README names the instance ${spec.instance}`);
      assert.ok(row.split('|').at(-1)?.trim(), `${code}: README says what to do`);
    }
  });

  it('alarm codes follow LOCKAUDIT_ALARM_<AREA>_<WHAT> and error codes LOCKAUDIT_ERR_<AREA>_<WHAT>', () => {
    for (const code of Object.keys(alarmCatalog)) assert.match(code, /^LOCKAUDIT_ALARM_[A-Z]+_[A-Z_]+$/);
    for (const code of Object.keys(errorCatalog)) assert.match(code, /^LOCKAUDIT_ERR_[A-Z]+(_[A-Z_]+)?$/);
  });

  it('an alarm is named by its bounded labels and says its facts in the message', () => {
    const lag = alarm('LOCKAUDIT_ALARM_TAILER_LAG', { cluster: 'east' }, { lagRevisions: 12n, alarmAt: 10 });
    assert.deepEqual(lag, { code: 'LOCKAUDIT_ALARM_TAILER_LAG', name: 'tailer-lag:east', message: 'tailer for east is 12 revisions behind (alarm at 10 revisions)' });
    assert.equal(alarmName('LOCKAUDIT_ALARM_FORCE_ARCHIVE_UNLOCKED', { cluster: 'east' }), 'force-archive:east:unlocked');
  });
});
