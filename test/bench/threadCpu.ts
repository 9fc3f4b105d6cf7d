// This process's CPU by thread group, from /proc/self/task/<tid>/stat: the main thread (JavaScript, and the
// native work it calls), V8's helper threads (concurrent GC and compilation), libuv's pool (crypto, fs, zlib)
// threads that carry no name, and every other thread by its name — the embedded store engine's (chdb parses,
// inserts and merges on pools of named threads).
// A V8 profile sees only the main thread; this is what it does not.
import { readdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** A group, or `store: <thread name>` for the store engine's threads (chdb names its pools: inserts, merges, …). */
export type ThreadGroup = 'main thread' | 'V8 helper threads (GC, compile)' | 'libuv pool' | 'unnamed threads' | `store: ${string}`;

/** CPU ms so far (user + system) of a process or thread, from its /proc stat file. */
export function statCpuMs(statFile: string): { comm: string; ms: number } {
  const stat = readFileSync(statFile, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), ms: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND };
}

/** CPU ms so far per thread id, with its group. Threads that have ended are not listed. */
export function threadCpu(): Map<number, { group: ThreadGroup; ms: number }> {
  const out = new Map<number, { group: ThreadGroup; ms: number }>();
  for (const name of readdirSync('/proc/self/task')) {
    let comm: string;
    let ms: number;
    try {
      ({ comm, ms } = statCpuMs(`/proc/self/task/${name}/stat`));
    } catch {
      continue; // ended between the listing and the read
    }
    const tid = Number(name);
    const group: ThreadGroup =
      tid === process.pid
        ? 'main thread'
        : comm.startsWith('V8')
          ? 'V8 helper threads (GC, compile)'
          : comm.startsWith('libuv')
            ? 'libuv pool'
            : comm === 'Unknown'
              ? 'unnamed threads'
              : `store: ${comm.replace(/[\d_]+$/, '')}`;
    out.set(tid, { group, ms });
  }
  return out;
}

/** CPU ms per group between two readings (threads in both; a thread started since counts from 0). */
export function threadCpuSince(before: Map<number, { group: ThreadGroup; ms: number }>): Map<ThreadGroup, number> {
  const groups = new Map<ThreadGroup, number>();
  for (const [tid, now] of threadCpu()) groups.set(now.group, (groups.get(now.group) ?? 0) + now.ms - (before.get(tid)?.ms ?? 0));
  return groups;
}
