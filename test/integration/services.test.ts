// The project's own services, really started: up/status/down, a three-member
// etcd, and doctor naming the one that is stopped. Runs on a port block and
// data dir of its own, so it never touches the suite's shared services.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { projectRoot } from '../../core/paths.js';
import { servicesDown, servicesStatus, servicesUp, stopInstance } from '../../services/localServices.js';
import { tempDir, testConfig } from '../support/env.js';

const run = promisify(execFile);

describe('local services', { timeout: 240_000 }, () => {
  const tmp = tempDir('lockaudit-svc-');
  const env = { LOCKAUDIT_DATA_DIR: tmp.dir, LOCKAUDIT_LOCAL_PORT_BASE: '25000', LOCKAUDIT_LOCAL_ETCD_MEMBERS: '3', LOCKAUDIT_LOG_LEVEL: 'warn' };
  const config = testConfig(env);
  const cli = (...args: string[]) =>
    run(process.execPath, ['bin/lockaudit.js', ...args], { cwd: projectRoot, env: { ...process.env, ...env } }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );

  before(async () => {
    await servicesUp(config);
  });
  after(async () => {
    await servicesDown(config);
    tmp.remove();
  });

  it('starts etcd (three members), Redis and MinIO, each answering', async () => {
    const status = await servicesStatus(config);
    assert.deepEqual(
      status.map((s) => s.instance),
      ['etcd-1', 'etcd-2', 'etcd-3', 'redis', 'minio'],
    );
    for (const s of status) assert.ok(s.running && s.answering && s.pid, `${s.instance}: ${JSON.stringify(s)}`);
    assert.equal(status[0]?.address, 'http://127.0.0.1:25000');
  });

  it('up twice is a no-op: the same processes keep running', async () => {
    const pids = (await servicesStatus(config)).map((s) => s.pid);
    await servicesUp(config);
    assert.deepEqual(
      (await servicesStatus(config)).map((s) => s.pid),
      pids,
    );
  });

  it('status says what runs where', async () => {
    const r = await cli('services', 'status');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /etcd-2\s+running\s+http:\/\/127\.0\.0\.1:25001\s+pid \d+/);
    assert.match(r.stdout, /minio\s+running\s+http:\/\/127\.0\.0\.1:25030/);
  });

  it('doctor is all green with everything up, and names the stopped service with a non-zero exit', async () => {
    const migrated = await cli('migrate');
    assert.equal(migrated.code, 0, migrated.stderr);
    const green = await cli('doctor');
    assert.equal(green.code, 0, green.stdout + green.stderr);
    for (const name of ['etcd:local', 'clickhouse', 's3', 'redis']) assert.match(green.stdout, new RegExp(`^ok\\s+${name}`, 'm'));

    assert.equal(await stopInstance(config, 'redis'), true);
    const red = await cli('doctor');
    assert.equal(red.code, 1);
    assert.match(red.stdout, /^FAIL\s+redis/m);
    assert.match(red.stdout, /fix: start the local services: lockaudit services up/);
    for (const name of ['etcd:local', 'clickhouse', 's3']) assert.match(red.stdout, new RegExp(`^ok\\s+${name}`, 'm'));
  });

  it('etcd keeps serving with one member of three stopped', async () => {
    assert.equal(await stopInstance(config, 'etcd-3'), true);
    const r = await cli('doctor', '--json');
    const results = JSON.parse(r.stdout) as Array<{ name: string; ok: boolean }>;
    assert.equal(results.find((x) => x.name === 'etcd:local')?.ok, true);
  });

  it('down stops only what it started, and status then says stopped', async () => {
    const stopped = await servicesDown(config);
    assert.deepEqual(stopped.sort(), ['etcd-1', 'etcd-2', 'minio']);
    const status = await servicesStatus(config);
    assert.ok(
      status.every((s) => !s.running && !s.answering),
      JSON.stringify(status),
    );
  });
});
