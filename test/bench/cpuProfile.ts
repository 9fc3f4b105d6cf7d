// Optional CPU profiling of one part of a benchmark (BENCH_CPU_PROFILE_DIR):
// the V8 sampling profiler of this thread, started and stopped around the
// part, written as <dir>/<name>.cpuprofile (open in Chrome DevTools, or sum it
// with scripts/cpuprofileTop.mjs). Also returns the process's CPU seconds
// (every thread: chdb parses and merges on threads of its own) beside the wall
// time, which the JS profile alone does not show.
import { Session } from 'node:inspector/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Profiled<T> {
  result: T;
  wallSeconds: number;
  /** user + system CPU of the whole process (all threads) during the part. */
  cpuSeconds: number;
}

export async function profiled<T>(name: string, part: () => Promise<T>): Promise<Profiled<T>> {
  const dir = process.env.BENCH_CPU_PROFILE_DIR;
  const session = dir ? new Session() : undefined;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  try {
    const result = await part();
    const wallSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    return { result, wallSeconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
  } finally {
    if (session && dir) {
      const { profile } = await session.post('Profiler.stop');
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    }
  }
}
