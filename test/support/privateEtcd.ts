// A throw-away single-member etcd of a test's own (for compaction, restores and
// a second cluster), on ports the caller picks, stopped by its pid. A restore
// uses etcdutl with the member's own name, peer URL and cluster token, so the
// restored cluster keeps its cluster id (the case the id check alone misses).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { tempDir } from './env.js';

const run = promisify(execFile);
const BIN = path.resolve(fileURLToPath(new URL('../../.tools/bin', import.meta.url)));
const ETCD = path.join(BIN, 'etcd');
const ETCDCTL = path.join(BIN, 'etcdctl');
const ETCDUTL = path.join(BIN, 'etcdutl');

export interface RestoreOptions {
  /** etcdutl --bump-revision (with --mark-compacted): revisions continue above the old ones. */
  bumpRevision?: number;
  /**
   * Runs `run` against the restored member while it listens on `port` only, then starts it on
   * its own endpoint: writes made there reach etcd before any client of the endpoint (a tailer
   * running or not) can see the restored cluster — the restore is over before anyone looks.
   */
  offline?: { port: number; run: (endpoint: string) => Promise<void> };
}

export interface PrivateEtcd {
  endpoint: string;
  /** Saves a snapshot of the running member to a file in the instance's temp dir; returns its path. */
  snapshot(name: string): Promise<string>;
  /** Stops the member, restores `snapshotFile` into a fresh data dir (same name, peer URL, token) and starts it. */
  restore(snapshotFile: string, options?: RestoreOptions): Promise<void>;
  /** Stops the member and starts it again on an empty data dir (same name, peer URL, token: same cluster id): a rebuild. */
  rebuild(): Promise<void>;
  stop(): Promise<void>;
}

interface Running {
  proc: ChildProcess;
  exited: Promise<void>;
}

export interface PrivateEtcdOptions {
  /** Keep etcd's default limits (128 ops a txn, 1.5 MiB a request) instead of the raised ones. */
  defaultLimits?: boolean;
}

/**
 * Members still running when the test process exits (a test cut by its timeout never reaches its `finally`; the
 * runner's --test-force-exit then ends the process): killed by their pids, so no member outlives its test and
 * holds its ports against the next file's.
 */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const proc of live) if (proc.pid && proc.exitCode === null && proc.signalCode === null) process.kill(proc.pid, 'SIGKILL');
});

export async function startPrivateEtcd(clientPort: number, peerPort: number, options: PrivateEtcdOptions = {}): Promise<PrivateEtcd> {
  const tmp = tempDir('lockaudit-etcd-');
  const name = `p${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const ownEndpoint = `http://127.0.0.1:${clientPort}`;
  let generation = 0;
  const dataDir = (): string => path.join(tmp.dir, `data${generation}`);

  const logFile = path.join(tmp.dir, 'etcd.log');
  async function launch(endpoint = ownEndpoint): Promise<Running> {
    const logFd = openSync(logFile, 'a');
    const proc: ChildProcess = spawn(
      ETCD,
      [
        `--name=${name}`,
        `--data-dir=${dataDir()}`,
        `--listen-client-urls=${endpoint}`,
        `--advertise-client-urls=${endpoint}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=${name}=${peerUrl}`,
        ...(options.defaultLimits ? [] : ['--max-txn-ops=65536', '--max-request-bytes=33554432']),
        '--watch-progress-notify-interval=5s',
        '--log-level=error',
      ],
      // etcd's own errors in a file of the instance: a member that does not come up says why.
      { stdio: ['ignore', 'ignore', logFd] },
    );
    closeSync(logFd);
    live.add(proc);
    proc.once('exit', () => live.delete(proc));
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        const res = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(1_000) });
        if (res.ok && (await res.text()).includes('"health":"true"')) break;
      } catch {
        // not up yet
      }
      if (Date.now() > deadline || proc.exitCode !== null || proc.signalCode !== null) {
        if (proc.pid && proc.exitCode === null && proc.signalCode === null) process.kill(proc.pid, 'SIGKILL');
        throw new Error(
          `private etcd on ${endpoint} did not start (${proc.exitCode === null && proc.signalCode === null ? 'no health in 20 s' : `exited ${proc.exitCode ?? proc.signalCode}`}): ${readFileSync(logFile, 'utf8').slice(-1_500)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    return { proc, exited };
  }

  async function halt(r: Running): Promise<void> {
    const { proc } = r;
    if (proc.pid && proc.exitCode === null && proc.signalCode === null) {
      try {
        process.kill(proc.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await r.exited;
  }

  let running = await launch();
  return {
    endpoint: ownEndpoint,
    async snapshot(file) {
      const out = path.join(tmp.dir, file);
      await run(ETCDCTL, [`--endpoints=${ownEndpoint}`, 'snapshot', 'save', out]);
      return out;
    },
    async restore(snapshotFile, options = {}) {
      await halt(running);
      generation += 1;
      const bump = options.bumpRevision ? [`--bump-revision=${options.bumpRevision}`, '--mark-compacted'] : [];
      await run(ETCDUTL, [
        'snapshot',
        'restore',
        snapshotFile,
        `--data-dir=${dataDir()}`,
        `--name=${name}`,
        `--initial-cluster=${name}=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        ...bump,
      ]);
      if (options.offline) {
        const side = await launch(`http://127.0.0.1:${options.offline.port}`);
        try {
          await options.offline.run(`http://127.0.0.1:${options.offline.port}`);
        } finally {
          await halt(side);
        }
      }
      running = await launch();
    },
    async rebuild() {
      await halt(running);
      generation += 1;
      running = await launch();
    },
    async stop() {
      await halt(running);
      tmp.remove();
    },
  };
}
