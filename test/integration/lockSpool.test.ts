// The fail-open spool loses nothing across a crash: a writer killed with
// SIGKILL mid-stream leaves every grant it had acknowledged on disk, and a
// torn last line is skipped by readers and closed off by the next writer.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { SpoolWriter } from '../../api/lock/spool.js';
import { projectRoot } from '../../core/paths.js';
import { readSpool } from '../../core/spool.js';
import { tempDir } from '../support/env.js';

describe('fail-open spool', () => {
  it('every acknowledged record survives a SIGKILL', async () => {
    const tmp = tempDir('lockaudit-spool-');
    try {
      const file = path.join(tmp.dir, 'spool', 'local.jsonl');
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'test/support/spoolChild.ts'), file], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'inherit'] });
      const acked: string[] = [];
      let buffered = '';
      await new Promise<void>((resolve) => {
        child.stdout.on('data', (chunk: Buffer) => {
          buffered += chunk.toString();
          const lines = buffered.split('\n');
          buffered = lines.pop() ?? '';
          acked.push(...lines.filter(Boolean));
          if (acked.length >= 200) {
            child.kill('SIGKILL');
            resolve();
          }
        });
      });
      await new Promise((resolve) => child.once('exit', resolve));
      const { records } = readSpool(file);
      const onDisk = new Set(records.map((r) => r.id));
      const missing = acked.filter((id) => !onDisk.has(id));
      assert.deepEqual(missing, [], 'every acknowledged grant is in the spool');
    } finally {
      tmp.remove();
    }
  });

  it('a torn last line is skipped by readers and closed off before the next append', async () => {
    const tmp = tempDir('lockaudit-spool-');
    try {
      const file = path.join(tmp.dir, 'local.jsonl');
      const record = { v: 1, kind: 'grant', id: 'a', cluster: 'local', key: 'ns/k', namespace: 'ns', class: 'c', holder: 'h', session: '1', token: '0', waitMs: 0, at: 1, epoch: 1 } as const;
      appendFileSync(file, `${JSON.stringify(record)}\n{"v":1,"kind":"gra`);
      assert.deepEqual(readSpool(file).badLines, [2]);
      const writer = new SpoolWriter(file);
      await writer.append({ ...record, id: 'b' });
      await writer.close();
      const after = readSpool(file);
      assert.deepEqual(after.records.map((r) => r.id), ['a', 'b']);
      assert.deepEqual(after.badLines, [2]);
      assert.ok(readFileSync(file, 'utf8').endsWith('\n'));
    } finally {
      tmp.remove();
    }
  });
});
