// The store process (platform/storeServer.ts) as a child of a test: owns the chdb data dir `dir`, serves it on a
// free loopback port behind a fresh password; stopped by its own pid (SIGTERM, then it closes chdb).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { AuditStore } from '../../core/clickhouse.js';
import { projectRoot } from '../../core/paths.js';

export interface StoreProcess {
  url: string;
  password: string;
  /** A store that talks to it as every role does to a ClickHouse server. */
  connect(): AuditStore;
  stop(): Promise<void>;
}

export async function startStoreProcess(dir: string): Promise<StoreProcess> {
  const password = randomBytes(24).toString('base64url');
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join('test', 'support', 'storeChild.ts'), dir], {
    cwd: projectRoot,
    env: { ...process.env, LOCKAUDIT_STORE_PASSWORD: password },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout?.once('data', (c: Buffer) => resolve(c.toString().trim()));
    proc.once('exit', (code) => reject(new Error(`the store process exited ${code} before it listened`)));
  });
  return {
    url,
    password,
    connect: () => new AuditStore({ mode: 'server', url, user: 'lockaudit', password, database: 'lockaudit' }),
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null && proc.pid) process.kill(proc.pid, 'SIGTERM');
      await exited;
    },
  };
}
