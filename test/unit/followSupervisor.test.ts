// A role whose supervisor is killed -9 ends within its kill delay even while
// its main thread is held in a blocking call (cli/followSupervisor.ts: the
// watchdog thread). Before it, the only fallback was a timer on the main
// thread, which never ran: a store process was found running 90 s after
// `lockaudit start` was killed -9. A supervisor process of the test's own
// forks test/support/blockedRole.ts and is killed; the role is followed by pid
// and start time (/proc/<pid>/stat), and killed by the test if it outlives
// the wait.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';

const KILL_AFTER_MS = 1_500;

/** The start time of a process (field 22 of /proc/<pid>/stat), or undefined when it is gone or a zombie. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

describe('a role under a supervisor', () => {
  it('is killed after its delay when the supervisor dies, even with its main thread blocked', async () => {
    const helper = path.join(projectRoot, 'test/support/blockedRole.ts');
    const supervisor = spawn(
      process.execPath,
      [
        '-e',
        `const c = require('node:child_process').fork(${JSON.stringify(helper)}, [${JSON.stringify(String(KILL_AFTER_MS))}], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
         c.on('message', () => process.stdout.write(String(c.pid) + '\\n'));`,
      ],
      { cwd: projectRoot, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const pid = await new Promise<number>((resolve, reject) => {
      supervisor.stdout.on('data', (c: Buffer) => resolve(Number(c.toString().trim())));
      supervisor.once('exit', () => reject(new Error('the supervisor exited before its role was ready')));
      setTimeout(() => reject(new Error('the role was not ready within 30 s')), 30_000).unref();
    });
    const started = startTime(pid);
    assert.ok(started, `role ${pid} running`);
    const exited = new Promise((resolve) => supervisor.once('exit', resolve));
    supervisor.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    try {
      while (startTime(pid) === started && Date.now() - killedAt < KILL_AFTER_MS + 8_000) await new Promise((r) => setTimeout(r, 100));
      assert.notEqual(startTime(pid), started, `role ${pid} still running ${Date.now() - killedAt} ms after its supervisor was killed`);
      assert.ok(Date.now() - killedAt >= KILL_AFTER_MS - 100, 'not before its delay: the shutdown gets its minute');
    } finally {
      if (startTime(pid) === started) process.kill(pid, 'SIGKILL');
    }
  });
});
