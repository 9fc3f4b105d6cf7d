// `lockaudit start`: the platform's roles as processes of their own (issue 41),
// supervised. With the embedded store a store process holds it first and
// serves it (`lockaudit store`, platform/storeServer.ts); the tailer, the
// worker and the API then each run as `lockaudit <role>` and reach it as a
// server. The catch-up of a tailer no longer shares an event loop with the
// API, and `verify` or an export runs beside them. A role that exits unasked
// is started again after a backoff (1 s, doubling to 30 s; back to 1 s once
// it ran a minute) and the restart is logged; when the store process itself
// ends, the roles (whose client named it) are started again after it.
// SIGINT/SIGTERM stops the roles, newest first, then the store. Children run
// in process groups of their own (a terminal's Ctrl-C reaches only this
// process, which stops them in order) and end themselves when this process
// goes (their IPC channel closes). Each role's status (metrics, alarms)
// comes here and goes on to the API process (platform/roleStatus.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { servedStore } from '../core/embeddedOwner.js';
import type { Config } from '../core/config.js';
import { isRoleStatus, type PeerStatuses, type RoleStatus } from '../platform/roleStatus.js';
import { LISTENING } from '../platform/stopSignals.js';

export interface SupervisedRole {
  /** The CLI command: store, tailer, worker, api. */
  name: string;
  /** Its flags after the command. */
  args: string[];
}

interface Running {
  role: SupervisedRole;
  child: ChildProcess;
  startedAt: number;
  exited: Promise<number | null>;
  /** Resolves once the role catches SIGTERM (it says so, platform/stopSignals.ts) or has exited. */
  listening: Promise<void>;
}

/** Roles that check or write the tailer's proofs (core/tailerSecret.ts): no other process is given its key. */
const TAILER_KEY_HOLDERS = new Set(['tailer', 'worker']);

/** The environment a role's process gets: the supervisor's, without the tailer's key for a role that never needs it. */
export function roleEnv(role: string, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  if (TAILER_KEY_HOLDERS.has(role) || env.LOCKAUDIT_TAILER_SECRET === undefined) return env;
  const { LOCKAUDIT_TAILER_SECRET: _held, ...rest } = env;
  return rest;
}

const BACKOFF_MS = { first: 1_000, max: 30_000, resetAfter: 60_000 };

export async function supervise(config: Config, roles: SupervisedRole[], say: (message: string) => void): Promise<number> {
  const running = new Map<string, Running>();
  const backoff = new Map<string, number>();
  const statuses = new Map<string, RoleStatus>();
  let stopping = false;
  // Caught from the first moment: a stop asked for while the store still starts stops it once it serves, in
  // order (not the default action, which left the children to notice their supervisor gone).
  let asked: string | undefined;
  const signalled = new Promise<string>((resolve) => {
    const on = (s: string): void => {
      asked ??= s;
      resolve(s);
    };
    process.once('SIGINT', on);
    process.once('SIGTERM', on);
  });

  /** Every role's latest status to the API process (the whole set: an ended role's alarms go with it). */
  const forwardStatuses = (): void => {
    const api = running.get('api')?.child;
    const forward: PeerStatuses = { type: 'lockaudit-peer-statuses', peers: [...statuses.values()] };
    if (api?.connected) api.send(forward, undefined, {}, () => undefined);
  };

  const start = (role: SupervisedRole): Running => {
    const child = spawn(process.execPath, [...process.execArgv, process.argv[1] as string, role.name, ...role.args], {
      env: roleEnv(role.name),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      detached: true,
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let nowListening: () => void = () => undefined;
    const listening = new Promise<void>((resolve) => {
      nowListening = resolve;
      void exited.then(() => resolve());
    });
    const entry: Running = { role, child, startedAt: Date.now(), exited, listening };
    running.set(role.name, entry);
    say(`${role.name}: started (pid ${child.pid})`);
    child.on('message', (message: unknown) => {
      if (typeof message === 'object' && message !== null && (message as { type?: unknown }).type === LISTENING.type) return nowListening();
      if (!isRoleStatus(message) || message.role === 'api') return;
      statuses.set(message.role, message);
      forwardStatuses();
    });
    child.once('exit', (code, signal) => void onExit(entry, code, signal));
    return entry;
  };

  const onExit = async (entry: Running, code: number | null, signal: NodeJS.Signals | null): Promise<void> => {
    if (running.get(entry.role.name) === entry) running.delete(entry.role.name);
    if (statuses.delete(entry.role.name)) forwardStatuses();
    if (stopping) return;
    const ranMs = Date.now() - entry.startedAt;
    const wait = ranMs >= BACKOFF_MS.resetAfter ? BACKOFF_MS.first : Math.min(BACKOFF_MS.max, backoff.get(entry.role.name) ?? BACKOFF_MS.first);
    backoff.set(entry.role.name, Math.min(BACKOFF_MS.max, wait * 2));
    say(
      `${entry.role.name} (pid ${entry.child.pid}) exited ${signal ? `on ${signal}` : `with code ${code}`} after ${Math.round(ranMs / 1000)} s: starting it again in ${wait / 1000} s`,
    );
    await sleep(wait);
    if (stopping) return;
    if (entry.role.name === 'store') {
      // Its own exit handler tries again if it ends before it serves.
      if (!(await startStore(entry.role))) return;
      // The roles' store client named the old process (its port, its password): they start again after it.
      for (const r of [...running.values()]) if (r.role.name !== 'store') r.child.kill('SIGTERM');
      return;
    }
    // A role never starts while the store process is down: it would open the embedded store itself, and the
    // store process could then never hold it again.
    if (!(await storeServes())) return;
    start(entry.role);
  };

  const path = config.clickhouse.mode === 'embedded' ? config.clickhouse.path : '';
  const storeRole = roles.find((r) => r.name === 'store');

  /** Whether the store process serves the store (at once when there is none to wait for); false once stopping. */
  const storeServes = async (): Promise<boolean> => {
    while (!stopping) {
      const store = running.get('store');
      if (!storeRole || (store && servedStore(path)?.pid === store.child.pid)) return true;
      await sleep(100);
    }
    return false;
  };

  /** Starts the store process and waits until it serves: false when it ended first, or on stopping. */
  const startStore = async (role: SupervisedRole): Promise<boolean> => {
    const entry = start(role);
    // A stop asked for meanwhile waits for this too: the store then stops as a started store does.
    while (!stopping) {
      if (servedStore(path)?.pid === entry.child.pid) return true;
      if (entry.child.exitCode !== null || entry.child.signalCode !== null) return false;
      await sleep(100);
    }
    return false;
  };

  if (storeRole && !(await startStore(storeRole))) {
    stopping = true;
    say('the store process ended before it served the store: see its lines above');
    return 1;
  }
  if (!asked) for (const role of roles) if (role.name !== 'store') start(role);

  const signal = await signalled;
  stopping = true;
  say(`${signal}: stopping the roles, then the store`);
  const failed: string[] = [];
  const order = [...roles].reverse();
  const deadlineMs = config.shutdownTimeoutMs + 5_000;
  for (const role of order) {
    const entry = running.get(role.name);
    if (!entry || entry.child.exitCode !== null || entry.child.signalCode !== null) continue;
    // A role still booting would be ended by the signal's default action, not stopped: it is sent once the role
    // catches it (moments after its process starts).
    const late = sleep(deadlineMs).then(() => 'late' as const);
    await Promise.race([entry.listening, late]);
    entry.child.kill('SIGTERM');
    const code = await Promise.race([entry.exited, late]);
    if (code === 'late') {
      say(`${role.name} (pid ${entry.child.pid}) did not stop within ${deadlineMs / 1000} s: killed`);
      entry.child.kill('SIGKILL');
      await entry.exited;
      failed.push(`${role.name} (killed)`);
    } else if (code !== 0) failed.push(`${role.name} (${code === null ? entry.child.signalCode : `exit ${code}`})`);
  }
  say(failed.length === 0 ? 'stopped' : `stopped; did not stop cleanly: ${failed.join(', ')}`);
  return failed.length === 0 ? 0 : 1;
}
