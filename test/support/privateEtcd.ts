// A throw-away single-member etcd of a test's own (for compaction and a
// second cluster), on ports the caller picks, stopped by its pid.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './env.js';

const ETCD = path.resolve(fileURLToPath(new URL('../../.tools/bin/etcd', import.meta.url)));

export interface PrivateEtcd {
  endpoint: string;
  stop(): Promise<void>;
}

export interface PrivateEtcdOptions {
  /** Keep etcd's default limits (128 ops a txn, 1.5 MiB a request) instead of the raised ones. */
  defaultLimits?: boolean;
}

export async function startPrivateEtcd(clientPort: number, peerPort: number, options: PrivateEtcdOptions = {}): Promise<PrivateEtcd> {
  const tmp = tempDir('lockaudit-etcd-');
  const proc: ChildProcess = spawn(
    ETCD,
    [
      `--name=p${clientPort}`,
      `--data-dir=${tmp.dir}`,
      `--listen-client-urls=http://127.0.0.1:${clientPort}`,
      `--advertise-client-urls=http://127.0.0.1:${clientPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=p${clientPort}=http://127.0.0.1:${peerPort}`,
      ...(options.defaultLimits ? [] : ['--max-txn-ops=65536', '--max-request-bytes=33554432']),
      '--watch-progress-notify-interval=5s',
      '--log-level=error',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const endpoint = `http://127.0.0.1:${clientPort}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const res = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(1_000) });
      if (res.ok && (await res.text()).includes('"health":"true"')) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      if (proc.pid) process.kill(proc.pid, 'SIGKILL');
      throw new Error(`private etcd on ${clientPort} did not start`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    endpoint,
    async stop() {
      if (proc.pid && proc.exitCode === null && proc.signalCode === null) {
        try {
          process.kill(proc.pid, 'SIGTERM');
        } catch {
          // already gone
        }
      }
      await exited;
      tmp.remove();
    },
  };
}
