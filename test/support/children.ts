// Child processes for tailer tests: started with `node --import tsx`, stopped
// only by their own pid.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ChildSpec } from './tailerProcess.js';

const ENTRY = fileURLToPath(new URL('./tailerProcess.ts', import.meta.url));

export interface TailerChild {
  proc: ChildProcess;
  pid: number;
  checkpoint: bigint;
  leaderAt: number | undefined;
  /** Events the child's sink made durable, as last reported. */
  durable: number;
  /** (ms since start, checkpoint) as reported. */
  progress: Array<[number, bigint]>;
  exited: Promise<number | null>;
  waitFor(pred: (c: TailerChild) => boolean, timeoutMs?: number): Promise<void>;
  kill9(): Promise<void>;
  term(): Promise<void>;
}

/** Children still running when the test process exits (a test cut by its timeout): killed by their pids. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const proc of live) if (proc.pid && proc.exitCode === null && proc.signalCode === null) process.kill(proc.pid, 'SIGKILL');
});

export function startTailerChild(spec: ChildSpec): TailerChild {
  const proc = spawn(process.execPath, ['--import', 'tsx', ENTRY], {
    env: { ...process.env, LOCKAUDIT_TEST_TAILER: JSON.stringify(spec) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  const listeners = new Set<() => void>();
  const started = Date.now();
  const child: TailerChild = {
    proc,
    pid: proc.pid ?? -1,
    checkpoint: 0n,
    leaderAt: undefined,
    durable: 0,
    progress: [],
    exited: new Promise((resolve) => proc.once('exit', (code) => resolve(code))),
    waitFor(pred, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        if (pred(child)) return resolve();
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`child ${child.pid}: timed out (checkpoint ${child.checkpoint})`));
        }, timeoutMs);
        const check = (): void => {
          if (!pred(child)) return;
          clearTimeout(timer);
          listeners.delete(check);
          resolve();
        };
        listeners.add(check);
      });
    },
    async kill9() {
      if (proc.exitCode === null && proc.signalCode === null) process.kill(child.pid, 'SIGKILL');
      await child.exited;
    },
    async term() {
      if (proc.exitCode === null && proc.signalCode === null) process.kill(child.pid, 'SIGTERM');
      await child.exited;
    },
  };
  createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    let msg: { event?: string; revision?: string; at?: number; events?: number };
    try {
      msg = JSON.parse(line) as typeof msg;
    } catch {
      return;
    }
    if (msg.event === 'checkpoint' && msg.revision) {
      child.checkpoint = BigInt(msg.revision);
      child.progress.push([Date.now() - started, child.checkpoint]);
    }
    if (msg.event === 'durable' && typeof msg.events === 'number') child.durable = msg.events;
    if (msg.event === 'leader') child.leaderAt = msg.at ?? Date.now();
    for (const l of [...listeners]) l();
  });
  return child;
}
