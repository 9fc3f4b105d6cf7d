// The stack a chaos run stands up on its own port block and data dir: a
// three-member etcd, Redis and MinIO (the project's services code, by pid
// file), and lockaudit itself (`lockaudit start`: API, tailer and worker in
// one process, since embedded ClickHouse binds its data dir to one process)
// as a child this run starts, kills, pauses and restarts by pid.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Etcd3 } from 'etcd3';
import { loadConfig, type Config } from '../../core/config.js';
import { projectRoot } from '../../core/paths.js';
import { binaries } from '../../services/install.js';
import { servicesDown, servicesUp, startInstance, stopInstance } from '../../services/localServices.js';

const run = promisify(execFile);

export interface StackOptions {
  dataDir: string;
  portBase: number;
  apiPort: number;
  electionTtlSeconds: number;
  log: (message: string) => void;
}

export interface ChaosTokens {
  admin: string;
  operators: [string, string];
  clients: string[];
  investigator: string;
  /** Clients of the run's own force-release tests, one identity each. */
  chaosClients: string[];
  /** Clients of the throughput pump (the realistic profile), one identity per loop. */
  pumpClients: string[];
}

/** The environment every lockaudit child of this run gets: ours only, none inherited. */
export function stackEnv(options: StackOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('LOCKAUDIT_')) env[k] = v;
  return {
    ...env,
    LOCKAUDIT_DATA_DIR: options.dataDir,
    LOCKAUDIT_LOCAL_PORT_BASE: String(options.portBase),
    LOCKAUDIT_LOCAL_ETCD_MEMBERS: '3',
    LOCKAUDIT_PORT: String(options.apiPort),
    LOCKAUDIT_LOG_LEVEL: 'info',
    LOCKAUDIT_TAILER_ELECTION_TTL_SECONDS: String(options.electionTtlSeconds),
  };
}

const CLI = ['--import', 'tsx', path.join('test', 'chaos', 'lockauditBin.ts')];

export class Stack {
  readonly config: Config;
  readonly env: NodeJS.ProcessEnv;
  readonly apiUrl: string;
  readonly endpoints: string[];
  #platform: ChildProcess | undefined;
  #platformExit: Promise<void> | undefined;
  platformStarts = 0;

  constructor(readonly options: StackOptions) {
    this.env = stackEnv(options);
    this.config = loadConfig({ env: this.env });
    this.apiUrl = `http://127.0.0.1:${options.apiPort}`;
    this.endpoints = this.config.etcd.clusters[0]?.endpoints ?? [];
  }

  /** Runs the lockaudit CLI from source; resolves with its output, rejects on a non-zero exit. */
  async cli(args: string[], timeoutMs = 120_000): Promise<{ stdout: string; stderr: string }> {
    return run(process.execPath, [...CLI, ...args], { cwd: projectRoot, env: this.env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  }

  async servicesUp(): Promise<void> {
    await servicesUp(this.config, { progress: (m) => this.options.log(m) });
  }

  async servicesDown(): Promise<void> {
    await servicesDown(this.config);
  }

  etcdClient(): Etcd3 {
    return new Etcd3({ hosts: this.endpoints, dialTimeout: 2_000 });
  }

  // ---- lockaudit itself ----------------------------------------------------

  get platformPid(): number | undefined {
    return this.#platform?.exitCode === null && this.#platform.signalCode === null ? this.#platform.pid : undefined;
  }

  /** Starts `lockaudit start` and waits until /healthz answers (retrying a start that fails, e.g. while etcd has no quorum). */
  async startPlatform(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    mkdirSync(path.join(this.options.dataDir, 'logs'), { recursive: true });
    while (Date.now() < deadline) {
      if (this.platformPid === undefined) {
        const fd = openSync(path.join(this.options.dataDir, 'logs', 'platform.log'), 'a');
        // One process (--one-process): the faults kill -9 the platform as the tailer's crash; the supervised topology is not yet in the chaos run.
        const child = spawn(process.execPath, [...CLI, 'start', '--one-process'], { cwd: projectRoot, env: this.env, stdio: ['ignore', fd, fd] });
        closeSync(fd);
        this.#platform = child;
        this.#platformExit = new Promise((resolve) => child.once('exit', () => resolve()));
        this.platformStarts++;
      }
      const started = Date.now();
      while (this.platformPid !== undefined && Date.now() - started < 60_000) {
        if (await this.#answers('/healthz')) return;
        await sleep(300);
      }
      if (this.platformPid !== undefined) await this.stopPlatform('SIGKILL');
      await sleep(1_000);
    }
    throw new Error(`lockaudit did not start within ${timeoutMs / 1000} s; see ${path.join(this.options.dataDir, 'logs', 'platform.log')}`);
  }

  async #answers(url: string): Promise<boolean> {
    try {
      const res = await fetch(`${this.apiUrl}${url}`, { signal: AbortSignal.timeout(2_000) });
      return res.ok;
    } catch {
      return false;
    }
  }

  /** SIGTERM (a clean stop) or SIGKILL; waits for the exit. */
  async stopPlatform(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM', graceMs = 30_000): Promise<void> {
    const pid = this.platformPid;
    if (pid === undefined) return;
    process.kill(pid, 'SIGCONT'); // a paused process cannot act on SIGTERM
    process.kill(pid, signal);
    const exited = await Promise.race([this.#platformExit?.then(() => true), sleep(graceMs).then(() => false)]);
    if (!exited && this.platformPid !== undefined) {
      process.kill(pid, 'SIGKILL');
      await this.#platformExit;
    }
  }

  pausePlatform(): void {
    if (this.platformPid !== undefined) process.kill(this.platformPid, 'SIGSTOP');
  }

  resumePlatform(): void {
    if (this.platformPid !== undefined) process.kill(this.platformPid, 'SIGCONT');
  }

  /** Creates the run's API tokens in the (not yet running) platform's store, in a child that owns chdb briefly. */
  async createTokens(workers: number): Promise<ChaosTokens> {
    const file = path.join(this.options.dataDir, 'chaos-tokens.json');
    await run(process.execPath, ['--import', 'tsx', path.join('test', 'chaos', 'createTokens.ts'), file, String(workers)], {
      cwd: projectRoot,
      env: this.env,
      timeout: 180_000,
    });
    return JSON.parse(readFileSync(file, 'utf8')) as ChaosTokens;
  }

  get tokensFile(): string {
    return path.join(this.options.dataDir, 'chaos-tokens.json');
  }

  async api(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, token: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    try {
      const res = await fetch(`${this.apiUrl}${url}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(15_000),
      });
      const text = await res.text();
      let parsed: unknown = {};
      try {
        parsed = text ? JSON.parse(text) : {};
      } catch {
        parsed = { text };
      }
      return { status: res.status, body: (typeof parsed === 'object' && parsed !== null ? parsed : { value: parsed }) as Record<string, unknown> };
    } catch (err) {
      return { status: 0, body: { message: (err as Error).message } };
    }
  }

  // ---- etcd members --------------------------------------------------------

  /** Member instance names (etcd-1…3) keyed by etcd member id, and which one leads. */
  async etcdMembers(): Promise<{ byId: Map<string, string>; leader?: string }> {
    const byId = new Map<string, string>();
    let leaderId: string | undefined;
    for (let i = 0; i < this.endpoints.length; i++) {
      const client = new Etcd3({ hosts: [this.endpoints[i] as string], dialTimeout: 1_000 });
      try {
        const status = await client.maintenance.status();
        byId.set(status.header.member_id, `etcd-${i + 1}`);
        if (status.leader !== '0') leaderId = status.leader;
      } catch {
        // down
      } finally {
        client.close();
      }
    }
    return { byId, leader: leaderId ? byId.get(leaderId) : undefined };
  }

  async killMember(instance: string): Promise<void> {
    await stopInstance(this.config, instance, 'SIGKILL');
  }

  async stopMember(instance: string): Promise<void> {
    await stopInstance(this.config, instance);
  }

  async startMember(instance: string): Promise<void> {
    await startInstance(this.config, instance);
  }

  async stopService(instance: 'redis' | 'minio'): Promise<void> {
    await stopInstance(this.config, instance);
  }

  async startService(instance: 'redis' | 'minio'): Promise<void> {
    await servicesUp(this.config, { only: [instance] });
  }

  async waitEtcdHealthy(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const client = this.etcdClient();
      try {
        await client.put('/chaos-health').value(String(Date.now())).exec();
        await client.delete().key('/chaos-health').exec();
        return;
      } catch {
        await sleep(500);
      } finally {
        client.close();
      }
    }
    throw new Error('etcd did not regain a quorum in time');
  }

  // ---- snapshot and restore ------------------------------------------------

  async snapshot(file: string): Promise<bigint> {
    // etcdctl takes a snapshot from one member only: the first that answers.
    let lastError: unknown;
    for (const endpoint of this.endpoints) {
      try {
        await run(binaries.etcdctl, [`--endpoints=${endpoint}`, 'snapshot', 'save', file], { timeout: 60_000 });
        lastError = undefined;
        break;
      } catch (err) {
        lastError = err;
      }
    }
    if (lastError) throw lastError;
    const { stdout } = await run(etcdutlPath(), ['snapshot', 'status', file, '-w', 'json'], { timeout: 60_000 });
    return BigInt((JSON.parse(stdout) as { revision: number }).revision);
  }

  /**
   * Stops every member, restores each one's data dir from `file` with the
   * project's own member names, peer URLs and cluster token (so the cluster
   * id is unchanged — the hard case), optionally bumping the revision, and
   * starts the members again.
   */
  async restore(file: string, bumpRevision: number): Promise<{ oldHead: bigint | undefined }> {
    for (const i of [1, 2, 3]) await this.stopMember(`etcd-${i}`);
    const { ports } = this.config.local;
    const initialCluster = [0, 1, 2].map((i) => `m${i + 1}=http://127.0.0.1:${ports.etcdPeer[i]}`).join(',');
    let oldHead: bigint | undefined;
    for (const i of [0, 1, 2]) {
      const dir = path.join(this.config.dataDir, 'services', `etcd-${i + 1}`);
      if (existsSync(dir)) {
        const kept = `${dir}.before-restore-${Date.now()}`;
        renameSync(dir, kept);
        // The old timeline's true end: the highest revision any stopped member applied (the recorder may
        // not have seen the last few, committed as the members stopped).
        const head = await this.#dbRevision(path.join(kept, 'member', 'snap', 'db'));
        if (head !== undefined && (oldHead === undefined || head > oldHead)) oldHead = head;
      }
      const args = [
        'snapshot',
        'restore',
        file,
        `--name=m${i + 1}`,
        `--initial-cluster=${initialCluster}`,
        `--initial-cluster-token=lockaudit-${this.config.local.portBase}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${ports.etcdPeer[i]}`,
        `--data-dir=${dir}`,
      ];
      if (bumpRevision > 0) args.push(`--bump-revision=${bumpRevision}`, '--mark-compacted');
      await run(etcdutlPath(), args, { timeout: 120_000 });
    }
    await servicesUp(this.config, { only: ['etcd'] });
    return { oldHead };
  }

  async #dbRevision(db: string): Promise<bigint | undefined> {
    try {
      const { stdout } = await run(etcdutlPath(), ['snapshot', 'status', db, '-w', 'json'], { timeout: 60_000 });
      return BigInt((JSON.parse(stdout) as { revision: number }).revision);
    } catch {
      return undefined;
    }
  }
}

/** etcdutl (snapshot status/restore): .tools/bin has none; build it with `node --import tsx test/chaos/buildEtcdutl.ts`. */
export function etcdutlPath(): string {
  return process.env.CHAOS_ETCDUTL ?? path.join(projectRoot, '.chaos-tools', 'etcdutl');
}
