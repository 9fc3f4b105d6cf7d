// Which endpoint file a process trusts to reach an embedded store another process holds (core/embeddedOwner.ts):
// only one naming the process that holds the data dir's lock and a loopback port that process listens on, in a
// file readable by nobody else. A file left by a killed process, or
// written by anyone else to steer the CLI's queries (and its password) elsewhere, is not followed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';
import { embeddedHolder, servedStore, storeEndpointFile, writeStoreEndpoint } from '../../core/embeddedOwner.js';
import { tempDir } from '../support/env.js';

describe("the embedded store's endpoint file", () => {
  it('is followed only when it names the process holding the data dir and a port that process listens on', async () => {
    const data = tempDir('lockaudit-owner-');
    const chPath = path.join(data.dir, 'clickhouse');
    // Nobody holds the data dir: a file naming this process (or any) is not followed.
    writeStoreEndpoint(chPath, { url: 'http://127.0.0.1:1', password: 'p', pid: process.pid });
    assert.equal(servedStore(chPath), undefined);
    // The holder opens the data dir and serves it (platform/storeServer.ts), printing the address it listens on.
    const holder = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `Promise.all([import('${path.join(projectRoot, 'core', 'clickhouse.ts')}'), import('${path.join(projectRoot, 'platform', 'storeServer.ts')}')]).then(async ([{ AuditStore }, { startStoreServer }]) => { const s = new AuditStore({ mode: 'embedded', path: ${JSON.stringify(chPath)}, database: 'default' }); await s.rows('SELECT 1'); const server = await startStoreServer({ path: ${JSON.stringify(chPath)}, password: 'p', listen: { port: 0 } }); process.stdout.write(server.address + '\\n'); setInterval(() => {}, 1000); })`,
      ],
      { cwd: projectRoot, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    // Someone else's server on loopback, where a forged file could send the CLI's queries and the password.
    const decoy = createServer((_req, res) => res.end('Ok.\n'));
    await new Promise<void>((resolve) => decoy.listen(0, '127.0.0.1', resolve));
    const decoyUrl = `http://127.0.0.1:${(decoy.address() as AddressInfo).port}`;
    try {
      const served = await new Promise<string>((resolve) => holder.stdout.once('data', (c: Buffer) => resolve(c.toString().trim())));
      assert.equal(embeddedHolder(chPath), holder.pid);
      // Another process's pid: not the holder's word.
      assert.equal(servedStore(chPath), undefined);
      // The holder's pid, but a host off this machine: refused (the password would go there).
      writeStoreEndpoint(chPath, { url: 'http://10.0.0.7:8123', password: 'p', pid: holder.pid as number });
      assert.equal(servedStore(chPath), undefined);
      // Not JSON at all.
      writeFileSync(storeEndpointFile(chPath), 'garbage');
      assert.equal(servedStore(chPath), undefined);
      // The holder's pid and a loopback port that is not the holder's socket: refused (before, followed).
      writeStoreEndpoint(chPath, { url: decoyUrl, password: 'p', pid: holder.pid as number });
      assert.equal(servedStore(chPath), undefined);
      // The holder's own server: followed — but not from a file others can read.
      writeStoreEndpoint(chPath, { url: served, password: 'p', pid: holder.pid as number });
      assert.deepEqual(servedStore(chPath), { url: served, password: 'p', pid: holder.pid });
      chmodSync(storeEndpointFile(chPath), 0o644);
      assert.equal(servedStore(chPath), undefined);
    } finally {
      decoy.close();
      holder.kill('SIGKILL');
      await new Promise((resolve) => holder.once('exit', resolve));
    }
    // Its holder killed: the file it left points nowhere and is not followed.
    assert.equal(servedStore(chPath), undefined);
    data.remove();
  });
});
