// Which endpoint file a process trusts to reach an embedded store another process holds (core/embeddedOwner.ts):
// only one naming the process that holds the data dir's lock, on loopback. A file left by a killed process, or
// written by anyone else to steer the CLI's queries (and its password) elsewhere, is not followed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';
import { embeddedHolder, servedStore, storeEndpointFile, writeStoreEndpoint } from '../../core/embeddedOwner.js';
import { tempDir } from '../support/env.js';

describe('the embedded store\'s endpoint file', () => {
  it('is followed only when it names the process holding the data dir, on loopback', async () => {
    const data = tempDir('lockaudit-owner-');
    const chPath = path.join(data.dir, 'clickhouse');
    // Nobody holds the data dir: a file naming this process (or any) is not followed.
    writeStoreEndpoint(chPath, { url: 'http://127.0.0.1:1', password: 'p', pid: process.pid });
    assert.equal(servedStore(chPath), undefined);
    const holder = spawn(process.execPath, ['--import', 'tsx', '-e', `import('${path.join(projectRoot, 'core', 'clickhouse.ts')}').then(async ({ AuditStore }) => { const s = new AuditStore({ mode: 'embedded', path: ${JSON.stringify(chPath)}, database: 'default' }); await s.rows('SELECT 1'); process.stdout.write('open\\n'); setInterval(() => {}, 1000); })`], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
      assert.equal(embeddedHolder(chPath), holder.pid);
      // Another process's pid: not the holder's word.
      assert.equal(servedStore(chPath), undefined);
      // The holder's pid, but a host off this machine: refused (the password would go there).
      writeStoreEndpoint(chPath, { url: 'http://10.0.0.7:8123', password: 'p', pid: holder.pid as number });
      assert.equal(servedStore(chPath), undefined);
      // Not JSON at all.
      writeFileSync(storeEndpointFile(chPath), 'garbage');
      assert.equal(servedStore(chPath), undefined);
      writeStoreEndpoint(chPath, { url: 'http://127.0.0.1:45999', password: 'p', pid: holder.pid as number });
      assert.deepEqual(servedStore(chPath), { url: 'http://127.0.0.1:45999', password: 'p', pid: holder.pid });
    } finally {
      holder.kill('SIGKILL');
      await new Promise((resolve) => holder.once('exit', resolve));
    }
    // Its holder killed: the file it left points nowhere and is not followed.
    assert.equal(servedStore(chPath), undefined);
    data.remove();
  });
});
