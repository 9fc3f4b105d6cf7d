// The local servers the platform needs, on ports of the project's own
// (config.local.portBase), data under <dataDir>/services: etcd (1 or 3
// members on loopback), Redis and MinIO. ClickHouse is embedded (chdb).
import { mkdirSync } from 'node:fs';
import { createConnection } from 'node:net';
import path from 'node:path';
import type { Config } from '../core/config.js';
import { binaries, ensureEtcd, ensureMinio, ensureRedis, findRedisServer, type Progress } from './install.js';
import { runningPid, startProcess, stopProcess, type ProcessSpec } from './processes.js';

export type ServiceName = 'etcd' | 'redis' | 'minio';
export const SERVICE_NAMES: readonly ServiceName[] = ['etcd', 'redis', 'minio'];

export interface InstanceStatus {
  service: ServiceName;
  instance: string;
  address: string;
  pid?: number;
  running: boolean;
  answering: boolean;
}

async function httpOk(url: string, expect?: (body: string) => boolean): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(1_500) });
  if (!res.ok) return false;
  return expect ? expect(await res.text()) : true;
}

/** Redis answers PING with +PONG: checked on a raw socket so this needs no client. */
export function redisPing(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host });
    let buffered = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      buffered += chunk.toString();
      if (buffered.includes('\r\n')) done(buffered.startsWith('+PONG'));
    });
  });
}

const serviceDir = (config: Config, name: string): string => path.join(config.dataDir, 'services', name);

function etcdSpecs(config: Config): ProcessSpec[] {
  const { ports, etcdMembers } = config.local;
  const members = Array.from({ length: etcdMembers }, (_, i) => ({
    name: `m${i + 1}`,
    client: ports.etcdClient[i] as number,
    peer: ports.etcdPeer[i] as number,
  }));
  const initialCluster = members.map((m) => `${m.name}=http://127.0.0.1:${m.peer}`).join(',');
  return members.map((m, i) => ({
    instance: `etcd-${i + 1}`,
    command: binaries.etcd,
    args: [
      `--name=${m.name}`,
      `--data-dir=${serviceDir(config, `etcd-${i + 1}`)}`,
      `--listen-client-urls=http://127.0.0.1:${m.client}`,
      `--advertise-client-urls=http://127.0.0.1:${m.client}`,
      `--listen-peer-urls=http://127.0.0.1:${m.peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${m.peer}`,
      `--initial-cluster=${initialCluster}`,
      '--initial-cluster-state=new',
      `--initial-cluster-token=lockaudit-${config.local.portBase}`,
      // etcd's default txn limits (128 ops, 1.5 MiB request) stay: they are what users run, so the
      // platform and its tests must work within them (issue 12.3).
      '--quota-backend-bytes=8589934592',
      // Progress notifications keep an idle tailer's position moving.
      '--watch-progress-notify-interval=5s',
      '--log-level=warn',
    ],
    // A member of a three-member cluster is healthy only once a quorum is up,
    // so all members start before any is waited for (see servicesUp).
    ready: () => httpOk(`http://127.0.0.1:${m.client}/health`, (body) => body.includes('"health":"true"')),
  }));
}

async function redisSpec(config: Config, redisServer: string): Promise<ProcessSpec> {
  const port = config.local.ports.redis;
  const dir = serviceDir(config, 'redis');
  mkdirSync(dir, { recursive: true });
  return {
    instance: 'redis',
    command: redisServer,
    args: [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--daemonize',
      'no',
      '--save',
      '60 1000',
      '--appendonly',
      'no',
      '--protected-mode',
      'yes',
      '--logfile',
      '',
    ],
    ready: () => redisPing(port),
  };
}

function minioSpec(config: Config): ProcessSpec {
  const { minio, minioConsole } = config.local.ports;
  return {
    instance: 'minio',
    command: binaries.minio,
    args: ['server', serviceDir(config, 'minio'), '--address', `127.0.0.1:${minio}`, '--console-address', `127.0.0.1:${minioConsole}`, '--quiet'],
    env: {
      MINIO_ROOT_USER: config.s3.accessKey,
      MINIO_ROOT_PASSWORD: config.s3.secretKey,
      MINIO_UPDATE: 'off',
      MINIO_BROWSER: 'off',
    },
    ready: () => httpOk(`http://127.0.0.1:${minio}/minio/health/ready`),
    readyTimeoutMs: 60_000,
  };
}

async function specsFor(config: Config, name: ServiceName): Promise<ProcessSpec[]> {
  if (name === 'etcd') return etcdSpecs(config);
  if (name === 'minio') return [minioSpec(config)];
  const redis = (await findRedisServer()) ?? 'redis-server';
  return [await redisSpec(config, redis)];
}

/** The services this config runs locally (a remote S3 or Redis is not ours to start). */
export function localServiceNames(config: Config): ServiceName[] {
  return SERVICE_NAMES.filter((s) => (s === 'etcd' ? config.etcd.local : s === 'redis' ? config.redis.local : config.s3.local));
}

export interface UpOptions {
  only?: ServiceName[];
  progress?: Progress;
}

/** Installs what is missing, starts what is not running, waits until all answer. Twice is a no-op. */
export async function servicesUp(config: Config, options: UpOptions = {}): Promise<InstanceStatus[]> {
  const progress = options.progress ?? (() => {});
  const names = options.only ?? localServiceNames(config);
  if (names.includes('etcd')) await ensureEtcd(progress);
  if (names.includes('minio')) await ensureMinio(progress);
  if (names.includes('redis')) await ensureRedis(progress);
  for (const name of names) {
    const specs = await specsFor(config, name);
    // Start every member first, then wait: etcd members need each other for quorum.
    const started = await Promise.all(specs.map((spec) => startProcess(config.dataDir, spec, { waitReady: false })));
    await Promise.all(specs.map((spec) => startProcess(config.dataDir, spec)));
    specs.forEach((spec, i) => progress(`${spec.instance}: ${started[i]?.started ? 'started' : 'already running'} (pid ${started[i]?.pid})`));
  }
  return servicesStatus(config, names);
}

export async function servicesDown(config: Config, options: UpOptions = {}): Promise<string[]> {
  const names = options.only ?? SERVICE_NAMES;
  const stopped: string[] = [];
  for (const name of names) {
    // All three etcd members, whatever the current member count: a changed config must not orphan one.
    const instances = name === 'etcd' ? ['etcd-1', 'etcd-2', 'etcd-3'] : [name];
    for (const instance of instances) {
      if (await stopProcess(config.dataDir, instance)) {
        stopped.push(instance);
        options.progress?.(`${instance}: stopped`);
      }
    }
  }
  return stopped;
}

function addressOf(config: Config, spec: ProcessSpec, service: ServiceName): string {
  const { ports } = config.local;
  if (service === 'redis') return `redis://127.0.0.1:${ports.redis}`;
  if (service === 'minio') return `http://127.0.0.1:${ports.minio}`;
  const i = Number(spec.instance.split('-')[1]) - 1;
  return `http://127.0.0.1:${ports.etcdClient[i]}`;
}

export async function servicesStatus(config: Config, only: readonly ServiceName[] = SERVICE_NAMES): Promise<InstanceStatus[]> {
  const out: InstanceStatus[] = [];
  for (const service of only) {
    for (const spec of await specsFor(config, service)) {
      const pid = await runningPid(config.dataDir, spec.instance);
      let answering = false;
      try {
        answering = await spec.ready();
      } catch {
        answering = false;
      }
      out.push({ service, instance: spec.instance, address: addressOf(config, spec, service), pid, running: pid !== undefined, answering });
    }
  }
  return out;
}

/** Stops one instance (e.g. `etcd-2`), for failover and quorum-loss tests. */
export function stopInstance(config: Config, instance: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<boolean> {
  return stopProcess(config.dataDir, instance, { signal });
}

/** Starts one instance again after stopInstance. */
export async function startInstance(config: Config, instance: string): Promise<void> {
  const service = instance.split('-')[0] as ServiceName;
  const spec = (await specsFor(config, service)).find((s) => s.instance === instance);
  if (!spec) throw new Error(`no such instance: ${instance}`);
  await startProcess(config.dataDir, spec, { waitReady: false });
}
