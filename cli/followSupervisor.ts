// A process started by `lockaudit start` (an IPC channel to its supervisor)
// stops, as on SIGTERM, when its supervisor is gone — also while it is still
// starting (before its signal handlers: SIGTERM then ends it at once) — and is
// killed a minute later whatever its shutdown waits on: a role left running by
// a killed `start` was found an hour later. The minute is kept twice: by a
// timer on the main thread, and by a watchdog on a thread of its own, which
// fires even while the main thread is held in a native call (chdb closing)
// where neither the disconnect, nor SIGTERM's handler, nor that timer runs: a
// store process was found still running 90 s after its supervisor was killed -9.
import { Worker } from 'node:worker_threads';

/** What the watchdog thread runs (CommonJS, eval'd): once the supervisor is no longer the parent, SIGKILL after `afterMs`. */
const WATCHDOG = `
const { workerData } = require('node:worker_threads');
const { supervisor, pid, afterMs } = workerData;
const poll = setInterval(() => {
  if (process.ppid === supervisor) return;
  clearInterval(poll);
  setTimeout(() => process.kill(pid, 'SIGKILL'), afterMs);
}, 250);
`;

export function followSupervisor(options: { killAfterMs?: number } = {}): void {
  if (typeof process.send !== 'function') return;
  const afterMs = options.killAfterMs ?? 60_000;
  const gone = (): void => {
    // Once the shutdown is done no one reads this exit status, and what runs after 'exit' is out of every timer's
    // reach: worker threads (the watchdog) are ended first, then the native libraries' exit handlers run, where a
    // store process is suspected to have hung (unreproduced: 94 s after a kill -9 of its supervisor, a clean
    // shutdown logged). Ending at 'exit' skips them; everything the shutdown wrote is written by then.
    process.once('exit', () => process.kill(process.pid, 'SIGKILL'));
    process.kill(process.pid, 'SIGTERM');
    setTimeout(() => process.kill(process.pid, 'SIGKILL'), afterMs).unref();
  };
  if (!process.connected) gone();
  else process.once('disconnect', gone);
  new Worker(WATCHDOG, { eval: true, workerData: { supervisor: process.ppid, pid: process.pid, afterMs } }).unref();
}
