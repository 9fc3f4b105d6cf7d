// Starts and stops the project's own server processes. Each started process
// has a pid file (pid + binary) under <dataDir>/run; stop acts only on pids
// from those files whose /proc cmdline still names the binary we started.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockauditError } from '../core/errors.js';

export interface ProcessSpec {
  /** Instance name, e.g. etcd-1, redis, minio. */
  instance: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
  /** Resolves true when the process answers like a client would use it. */
  ready: () => Promise<boolean>;
  readyTimeoutMs?: number;
}

interface PidFile {
  pid: number;
  command: string;
  startedAt: string;
}

export const runDir = (dataDir: string): string => path.join(dataDir, 'run');
export const logDir = (dataDir: string): string => path.join(dataDir, 'logs');
const pidPath = (dataDir: string, instance: string): string => path.join(runDir(dataDir), `${instance}.pid`);

function readPidFile(dataDir: string, instance: string): PidFile | undefined {
  const file = pidPath(dataDir, instance);
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as PidFile;
  } catch {
    return undefined;
  }
}

/** True when `pid` is alive and is the binary we started (pids get reused). */
async function isOurs(pid: number, command: string): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // A zombie (state Z) has exited; its parent just has not reaped it yet.
    if (/^\d+ \(.*\) Z/.test(stat)) return false;
    // Some servers (redis) rewrite their title to "path addr:port", so compare the first word.
    return (cmdline.split('\0')[0] ?? '').split(' ')[0] === command;
  } catch {
    return false;
  }
}

export async function runningPid(dataDir: string, instance: string): Promise<number | undefined> {
  const entry = readPidFile(dataDir, instance);
  if (!entry) return undefined;
  return (await isOurs(entry.pid, entry.command)) ? entry.pid : undefined;
}

async function waitReady(spec: ProcessSpec, pid: number, logFile: string, logOffset = logSize(logFile)): Promise<void> {
  const deadline = Date.now() + (spec.readyTimeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    if (!(await isOurs(pid, spec.command))) {
      throw new LockauditError('LOCKAUDIT_ERR_SERVICES_START', `${spec.instance} exited during start-up; see ${logFile}:\n${tail(logFile)}`);
    }
    try {
      if (await spec.ready()) return;
    } catch {
      // not up yet
    }
    // A server that could not bind its port may stay alive without serving (MinIO does): fail fast.
    if (/address already in use/i.test(logSince(logFile, logOffset))) {
      throw new LockauditError(
        'LOCKAUDIT_ERR_SERVICES_START',
        `${spec.instance} could not bind its port (address already in use); see ${logFile}:\n${tail(logFile)}`,
      );
    }
    await sleep(200);
  }
  throw new LockauditError(
    'LOCKAUDIT_ERR_SERVICES_START',
    `${spec.instance} did not answer within ${(spec.readyTimeoutMs ?? 30_000) / 1000} s; see ${logFile}:\n${tail(logFile)}`,
  );
}

function logSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** What this start wrote to the log (the file is appended to across starts). */
function logSince(file: string, offset: number): string {
  try {
    return readFileSync(file).subarray(offset).toString('utf8');
  } catch {
    return '';
  }
}

function tail(file: string, lines = 8): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Starts the process unless ours already runs; waits until it answers.
 * A port still held by a process that just exited ("address already in use")
 * is retried a few times before giving up.
 */
export async function startProcess(dataDir: string, spec: ProcessSpec, options: { waitReady?: boolean } = {}): Promise<{ pid: number; started: boolean }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(dataDir, spec, options);
    } catch (err) {
      const portBusy = err instanceof LockauditError && /address already in use/i.test(err.message);
      if (!portBusy || attempt >= 5) throw err;
      // Some servers (MinIO) stay up half-bound after a failed bind: stop ours before trying again.
      await stopProcess(dataDir, spec.instance, { graceMs: 3_000 });
      await sleep(500 * attempt);
    }
  }
}

async function startOnce(dataDir: string, spec: ProcessSpec, options: { waitReady?: boolean } = {}): Promise<{ pid: number; started: boolean }> {
  const existing = await runningPid(dataDir, spec.instance);
  if (existing !== undefined) {
    if (options.waitReady !== false) await waitReady(spec, existing, path.join(logDir(dataDir), `${spec.instance}.log`));
    return { pid: existing, started: false };
  }
  mkdirSync(runDir(dataDir), { recursive: true });
  mkdirSync(logDir(dataDir), { recursive: true });
  const logFile = path.join(logDir(dataDir), `${spec.instance}.log`);
  const logOffset = logSize(logFile);
  const fd = openSync(logFile, 'a');
  const child = spawn(spec.command, spec.args, {
    detached: true, // its own process group: it outlives the CLI that started it
    stdio: ['ignore', fd, fd],
    env: { ...process.env, ...spec.env },
  });
  closeSync(fd);
  const pid = await new Promise<number>((resolve, reject) => {
    child.once('spawn', () => resolve(child.pid as number));
    child.once('error', (err) =>
      reject(new LockauditError('LOCKAUDIT_ERR_SERVICES_START', `cannot start ${spec.instance} (${spec.command}): ${err.message}`, { cause: err })),
    );
  });
  child.unref();
  const entry: PidFile = { pid, command: spec.command, startedAt: new Date().toISOString() };
  writeFileSync(pidPath(dataDir, spec.instance), JSON.stringify(entry));
  if (options.waitReady !== false) await waitReady(spec, pid, logFile, logOffset);
  return { pid, started: true };
}

/** Stops our process for `instance` (SIGTERM, then SIGKILL after the grace period). Returns whether one was running. */
export async function stopProcess(dataDir: string, instance: string, options: { signal?: NodeJS.Signals; graceMs?: number } = {}): Promise<boolean> {
  const entry = readPidFile(dataDir, instance);
  if (!entry) return false;
  const alive = await isOurs(entry.pid, entry.command);
  if (alive) {
    process.kill(entry.pid, options.signal ?? 'SIGTERM');
    const deadline = Date.now() + (options.graceMs ?? 15_000);
    while (Date.now() < deadline && (await isOurs(entry.pid, entry.command))) await sleep(100);
    if (await isOurs(entry.pid, entry.command)) {
      process.kill(entry.pid, 'SIGKILL');
      while (await isOurs(entry.pid, entry.command)) await sleep(50);
    }
  }
  rmSync(pidPath(dataDir, instance), { force: true });
  return alive;
}
