// A newcomer's first hour (issue 12.6), the process edges of `lockaudit start`:
// a second start on a busy port ends with one clear line, and SIGTERM with
// Redis and etcd gone ends the process within shutdownTimeoutMs, exiting
// non-zero and saying what did not drain. The platform runs on an etcd and a
// Redis of this test's own (private ports, stopped by pid), so taking them
// down touches nobody else; MinIO is the suite's.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection, type Socket } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../../core/paths.js';
import { binaries, findRedisServer } from '../../services/install.js';
import { redisPing } from '../../services/localServices.js';
import { tempDir, uniqueId } from '../support/env.js';

// Past the suite's service block (base+0..31), inside this port block's hundred.
const base = Number(process.env.LOCKAUDIT_LOCAL_PORT_BASE ?? 24000) + 40;
const ports = { api: base, etcdClient: base + 1, etcdPeer: base + 2, redis: base + 3 };
const SHUTDOWN_TIMEOUT_MS = 3_000;

async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await fn().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(300);
  }
}

function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

function spawnCli(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; stderr: () => string } {
  const child = spawn(process.execPath, ['bin/lockaudit.js', ...args], { cwd: projectRoot, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return { child, stderr: () => stderr };
}

describe('lockaudit start: busy port and shutdown deadline', { timeout: 240_000 }, () => {
  const tmp = tempDir('lockaudit-startstop-');
  const started: ChildProcess[] = [];
  const sockets: Socket[] = [];
  let etcd: ChildProcess;
  let redis: ChildProcess;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    etcd = spawn(
      binaries.etcd,
      [
        '--name=s1',
        `--data-dir=${path.join(tmp.dir, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${ports.etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${ports.etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
        `--initial-cluster=s1=http://127.0.0.1:${ports.etcdPeer}`,
        '--log-level=error',
      ],
      { stdio: 'ignore' },
    );
    const redisServer = await findRedisServer();
    assert.ok(redisServer, 'redis-server is installed (scripts/prerequisites.sh)');
    redis = spawn(redisServer, ['--port', String(ports.redis), '--bind', '127.0.0.1', '--dir', tmp.dir, '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    started.push(etcd, redis);
    await waitFor('etcd', async () => (await fetch(`http://127.0.0.1:${ports.etcdClient}/health`)).ok, 30_000);
    await waitFor('redis', () => redisPing(ports.redis), 30_000);
    env = {
      ...process.env,
      LOCKAUDIT_DATA_DIR: path.join(tmp.dir, 'data'),
      LOCKAUDIT_PORT: String(ports.api),
      LOCKAUDIT_ETCD: `local=http://127.0.0.1:${ports.etcdClient}`,
      LOCKAUDIT_REDIS_URL: `redis://127.0.0.1:${ports.redis}`,
      LOCKAUDIT_QUEUE_PREFIX: uniqueId('startstop'),
      LOCKAUDIT_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      // The api lets a request in flight run past the deadline: the slow client below then keeps it from draining.
      LOCKAUDIT_API_SHUTDOWN_DRAIN_MS: String(10 * SHUTDOWN_TIMEOUT_MS),
      LOCKAUDIT_LOG_LEVEL: 'warn',
    };
  });

  after(() => {
    for (const s of sockets) s.destroy();
    for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    tmp.remove();
  });

  it('a second start on the busy port exits 1 with one line; SIGTERM with etcd and Redis down ends each role (SIGKILL) past the deadline naming what did not drain, and start exits 1 naming the roles', async () => {
    const first = spawnCli(['start'], env);
    started.push(first.child);
    await waitFor('/healthz', async () => (await fetch(`http://127.0.0.1:${ports.api}/healthz`)).status === 200, 90_000);

    // The same command again, as a newcomer who forgot the first one: same port, same data dir.
    const second = spawnCli(['start'], env);
    started.push(second.child);
    assert.equal(await exited(second.child), 1, second.stderr());
    assert.deepEqual(second.stderr().trim().split('\n'), [
      `lockaudit: 127.0.0.1:${ports.api} is already in use (another lockaudit start?); stop that process or set LOCKAUDIT_PORT`,
    ]);
    // The first one is unharmed.
    assert.equal((await fetch(`http://127.0.0.1:${ports.api}/healthz`)).status, 200);

    // A client that never finishes its request keeps the API from draining whatever else does
    // (a role that drains in time is no failure; this makes "did not drain" certain).
    const slowClient = createConnection({ host: '127.0.0.1', port: ports.api });
    sockets.push(slowClient);
    await new Promise((resolve) => slowClient.once('connect', resolve));
    slowClient.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    etcd.kill('SIGKILL');
    redis.kill('SIGKILL');
    await Promise.all([exited(etcd), exited(redis)]);
    // Readiness says so (and its Redis client's errors are not printed raw).
    assert.equal((await fetch(`http://127.0.0.1:${ports.api}/readyz`)).status, 503);
    first.child.kill('SIGTERM');
    const code = await exited(first.child);
    const lines = first.stderr().trim().split('\n');
    // Each role process that did not drain ends itself with SIGKILL (cli/main.ts: an ordinary exit with a client
    // still open hung or, with the embedded engine, segfaulted) naming what it was closing; the supervisor then
    // exits 1 naming those roles.
    assert.equal(code, 1, first.stderr());
    assert.ok(
      lines.some((l) =>
        new RegExp(`^lockaudit: shutdown did not finish within ${SHUTDOWN_TIMEOUT_MS} ms \\(shutdownTimeoutMs\\); exiting anyway: still closing \\w+`).test(l),
      ),
      first.stderr(),
    );
    assert.match(lines.at(-1) ?? '', /^lockaudit: stopped; did not stop cleanly: .*\bapi \(SIGKILL\)/, first.stderr());
    // Every client's errors go through the logger (JSON lines), none as ioredis' own warning.
    assert.ok(!first.stderr().includes('[ioredis] Unhandled error event'), first.stderr());
  });
});
