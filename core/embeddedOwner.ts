// Who owns an embedded store (chdb lets one process open a data dir), and
// where that process serves it to the others (platform/storeServer.ts): its
// endpoint file beside the data dir names the URL and the password. A second
// process — a role of its own, or a CLI command (verify, export, doctor,
// migrate, token) while the platform runs — then talks to the store through
// that process exactly as to a ClickHouse server, instead of failing on the
// data dir's lock. The file is trusted only while the process it names holds
// the data dir's lock and owns the socket listening on that port, and only
// when the file is this user's and readable by nobody else: a file left by a
// killed process, or edited to point elsewhere, points nowhere.
// Whoever can read the data dir can read the store's files anyway; the file is
// written 0600 all the same.
import { readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface StoreEndpoint {
  /** http://127.0.0.1:<port> of the process serving the store. */
  url: string;
  password: string;
  /** The serving process: the one holding the data dir. */
  pid: number;
}

/** The endpoint file of an embedded data dir: `<dir>.endpoint.json` beside it (chdb owns the dir itself). */
export function storeEndpointFile(dataPath: string): string {
  const resolved = path.resolve(dataPath);
  return path.join(path.dirname(resolved), `${path.basename(resolved)}.endpoint.json`);
}

/** Published by the process that holds `dataPath` once it serves it. */
export function writeStoreEndpoint(dataPath: string, endpoint: StoreEndpoint): void {
  const file = storeEndpointFile(dataPath);
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(endpoint)}\n`, { mode: 0o600 });
  renameSync(temp, file);
}

/** Withdrawn by that process when it stops serving (only its own: a successor's file stays). */
export function removeStoreEndpoint(dataPath: string, pid = process.pid): void {
  const file = storeEndpointFile(dataPath);
  if (readEndpointFile(file)?.pid === pid) rmSync(file, { force: true });
}

/**
 * The endpoint of another process that holds `dataPath` and serves it; undefined when none does (nobody
 * holds it, this process does, or the holder serves nothing — then opening it fails as busy).
 */
export function servedStore(dataPath: string): StoreEndpoint | undefined {
  const holder = embeddedHolder(dataPath);
  if (holder === undefined) return undefined;
  const endpoint = readEndpointFile(storeEndpointFile(dataPath));
  if (endpoint?.pid !== holder) return undefined;
  // The port must be the holder's own listening socket: a file naming the holder's pid (readable in /proc/locks)
  // and a port of someone else's server would hand the CLI's queries and the password to that server (insider
  // review), which could show `verify` an untouched copy of an edited store.
  return listensOn(holder, Number(new URL(endpoint.url).port)) ? endpoint : undefined;
}

/** Whether process `pid` owns the socket listening on 127.0.0.1:`port` (Linux: /proc/net/tcp and the pid's fds). */
export function listensOn(pid: number, port: number): boolean {
  let table: string;
  try {
    table = readFileSync('/proc/net/tcp', 'utf8');
  } catch {
    return false; // no way to tell: not followed
  }
  // "sl local_address rem_address st … inode": 0100007F:<port hex> in state 0A (LISTEN).
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const inodes = new Set<string>();
  for (const line of table.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1] === local && f[3] === '0A' && f[9]) inodes.add(`socket:[${f[9]}]`);
  }
  if (inodes.size === 0) return false;
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return inodes.has(readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

function readEndpointFile(file: string): StoreEndpoint | undefined {
  try {
    // Written by a process of this user, readable by nobody else (the password is in it).
    const st = statSync(file);
    if ((st.mode & 0o077) !== 0 || (typeof process.getuid === 'function' && st.uid !== process.getuid())) return undefined;
    const value = JSON.parse(readFileSync(file, 'utf8')) as Partial<StoreEndpoint>;
    if (typeof value.url !== 'string' || !/^http:\/\/127\.0\.0\.1:\d+$/.test(value.url)) return undefined;
    if (typeof value.password !== 'string' || typeof value.pid !== 'number' || !Number.isSafeInteger(value.pid)) return undefined;
    return { url: value.url, password: value.password, pid: value.pid };
  } catch {
    return undefined;
  }
}

/**
 * The pid of another process that holds the embedded data dir, undefined when none. On Linux it is the
 * owner of chdb's lock on `status` as /proc/locks lists it: the status file and its pid outlive a killed
 * process (SIGKILL, a shutdown past its deadline), and that pid may belong to any process since. Elsewhere,
 * the pid chdb wrote there if that process is alive.
 */
export function embeddedHolder(dataPath: string): number | undefined {
  const file = path.join(dataPath, 'status');
  let text: string;
  let ino: number;
  let dev: number;
  try {
    text = readFileSync(file, 'utf8');
    ({ ino, dev } = statSync(file));
  } catch {
    return undefined; // no status file: nobody opened it, or the last one closed cleanly
  }
  let locks: string | undefined;
  try {
    locks = readFileSync('/proc/locks', 'utf8');
  } catch {
    locks = undefined;
  }
  if (locks !== undefined) {
    // "1: FLOCK  ADVISORY  WRITE 20206 fe:00:10027441 0 EOF": pid, then major:minor:inode (hex, hex, decimal).
    const major = ((dev >> 8) & 0xfff).toString(16).padStart(2, '0');
    const minor = (dev & 0xff).toString(16).padStart(2, '0');
    for (const line of locks.split('\n')) {
      const m = /^\d+:\s+\S+\s+\S+\s+\S+\s+(\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line);
      if (!m || Number(m[4]) !== ino || m[2]?.padStart(2, '0') !== major || m[3]?.padStart(2, '0') !== minor) continue;
      const pid = Number(m[1]);
      return pid === process.pid ? undefined : pid;
    }
    return undefined; // the file is there but nobody holds its lock: left by a process that died
  }
  const pid = Number(/PID:\s*(\d+)/.exec(text)?.[1] ?? NaN);
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return undefined; // gone: a stale file
  }
  return pid;
}
