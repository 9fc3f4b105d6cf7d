// A role process asked to stop while it still starts ends cleanly (exit 0), not by the signal's default
// action: a `lockaudit start` stopped while its worker was still starting once ended "did not stop cleanly:
// worker (SIGTERM)". The worker here waits on an etcd endpoint that accepts the connection and never answers
// (its start-up check of its dependencies); SIGTERM arrives as that connection opens.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';
import { tempDir } from '../support/env.js';

describe('a role stopped while it starts', { timeout: 60_000 }, () => {
  const tmp = tempDir('lockaudit-stopstart-');
  const sockets: Socket[] = [];
  let server: Server | undefined;
  after(() => {
    for (const s of sockets) s.destroy();
    server?.close();
    tmp.remove();
  });

  it('exits 0 on SIGTERM during its dependency check (not killed by the signal)', async () => {
    let connected: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => {
      connected = resolve;
    });
    server = createServer((socket) => {
      sockets.push(socket); // held open, never answered
      connected();
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    assert.ok(address && typeof address === 'object');
    const child = spawn(process.execPath, [path.join(projectRoot, 'bin', 'lockaudit.js'), 'worker'], {
      cwd: projectRoot,
      env: { ...process.env, LOCKAUDIT_DATA_DIR: tmp.dir, LOCKAUDIT_ETCD: `silent=http://127.0.0.1:${address.port}` },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    await Promise.race([reached, exited.then(() => assert.fail(`the worker ended before it checked etcd: ${stderr}`))]);
    child.kill('SIGTERM');
    const { code, signal } = await exited;
    assert.equal(signal, null, `ended by ${signal}, not by its own exit; stderr: ${stderr}`);
    assert.equal(code, 0, stderr);
    // It stopped, it did not fail the check: the check's own failure would name etcd.
    assert.doesNotMatch(stderr, /does not answer/);
  });
});
