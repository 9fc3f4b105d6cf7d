// `lockaudit <role>` processes of a test (bin/lockaudit.js, built by the suite): started with the test's
// environment, stopped in reverse order by their own pids — roles first, the store process last.
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../../core/paths.js';

export class RoleProcesses {
  readonly #children: ChildProcess[] = [];

  constructor(private readonly env: NodeJS.ProcessEnv) {}

  start(args: string[], extra: NodeJS.ProcessEnv = {}): ChildProcess {
    const child = spawn(process.execPath, ['bin/lockaudit.js', ...args], {
      cwd: projectRoot,
      env: { ...this.env, ...extra },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    this.#children.push(child);
    return child;
  }

  /** SIGTERM each still running, newest first; SIGKILL one that has not exited within `graceMs`. */
  async stopAll(graceMs = 20_000): Promise<void> {
    for (const child of [...this.#children].reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(graceMs).then(() => child.kill('SIGKILL'))]);
    }
  }
}
