// The demo workload of the README's first command: the simulator drives the
// running API over HTTP in rounds until the platform stops, so there is
// history, contention, expiries and force-releases to look at.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createApiToken } from '../core/apiTokens.js';
import type { Runtime, RoleHandle } from '../platform/runtime.js';
import { createFleetTokens } from './simulate/fleetTokens.js';
import { simulate } from './simulate/run.js';
import { HttpTransport } from './simulate/transport.js';

export interface DemoOptions {
  workers: number;
  rate: number;
  roundSeconds: number;
}

/** Lines of the banner printed once the demo is ready: where to go, how to sign in, what to try, how to stop. */
export function demoBanner(apiUrl: string, tokenFile: string): string {
  const q = (v: string): string => `'${v.replace(/'/g, `'\\''`)}'`;
  const curl = (p: string): string => `curl -s -H "Authorization: Bearer $LOCKAUDIT_TOKEN" ${q(`${apiUrl}${p}`)}`;
  return [
    '',
    '  lockaudit demo is ready',
    `  Console     ${apiUrl}/ui/    (API reference: ${apiUrl}/docs)`,
    `  Sign in     paste the "investigator" token from ${tokenFile} ("admin" for force-releases and classes)`,
    '  Try',
    `    export LOCKAUDIT_TOKEN=$(node -p ${q(`require(${JSON.stringify(tokenFile)}).investigator`)})`,
    `    ${curl('/v1/grants?limit=5')}        # who held what, with which token`,
    `    ${curl('/v1/reports/contention?by=namespace')}        # waits and hold times`,
    `    ${curl('/v1/tailers')}        # capture lag and gaps`,
    '  Stop        Ctrl-C; then `npx lockaudit services down` stops etcd, MinIO and Redis',
    '',
  ].join('\n');
}

/**
 * Waits until the API says ready (every role up), then prints the banner; stops asking only when the demo stops. No
 * deadline: on a busy machine readiness can take minutes (a full test run beside it took over two), and the banner is
 * still where to go when it comes. Each question has its own timeout, so a slow /readyz cannot hold the loop.
 */
async function bannerWhenReady(apiUrl: string, tokenFile: string, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      if ((await fetch(`${apiUrl}/readyz`, { signal: AbortSignal.any([signal, AbortSignal.timeout(5_000)]) })).status === 200) {
        process.stderr.write(`${demoBanner(apiUrl, tokenFile)}\n`);
        return;
      }
    } catch {
      // not ready, or stopping
    }
    await new Promise((resolve) => setTimeout(resolve, 500).unref());
  }
}

export async function startDemoWorkload(runtime: Runtime, apiUrl: string, options: DemoOptions): Promise<RoleHandle> {
  const tokens = await createFleetTokens(runtime.store, options.workers);
  const log = runtime.logger.child({ role: 'demo' });
  // Embedded ClickHouse is held by this process, so `lockaudit token create`
  // cannot run beside it: hand the person trying the demo tokens to query with.
  const file = path.join(runtime.config.dataDir, 'demo-tokens.json');
  const reader = await createApiToken(runtime.store, 'demo-investigator@corp.example', ['investigator', 'auditor']);
  // The fleet's tokens too, so `lockaudit simulate --url … --tokens <this file>` can drive more load (or an outage) against the demo.
  const contents = {
    admin: tokens.admin,
    investigator: reader.token,
    api: apiUrl,
    operators: tokens.operators.map((o) => o.token),
    clients: tokens.clients.map((c) => c.token),
  };
  writeFileSync(file, `${JSON.stringify(contents, null, 2)}\n`, { mode: 0o600 });
  process.stderr.write(`lockaudit: demo API tokens (admin, investigator) are in ${file}\n`);
  let stopped = false;
  const loop = (async () => {
    for (let round = 1; !stopped; round++) {
      const stats = await simulate({
        seed: round,
        durationSeconds: options.roundSeconds,
        workers: options.workers,
        rate: options.rate,
        api: new HttpTransport(apiUrl),
        tokens,
      });
      log.info({ round, summary: stats.summary() }, 'demo workload round done');
    }
  })().catch((err: Error) => {
    if (!stopped) log.error({ err: err.message }, 'demo workload stopped');
  });
  // The register is built nightly; build one early so the demo has one to show.
  const registerTimer = setTimeout(() => {
    fetch(`${apiUrl}/v1/reports/risk-register/run`, { method: 'POST', headers: { authorization: `Bearer ${tokens.admin}` } })
      .then((res) => log.info({ status: res.status }, 'demo: advisory risk register built'))
      .catch((err: Error) => log.warn({ err: err.message }, 'demo: risk register build failed'));
  }, 15_000);
  registerTimer.unref();
  log.info({ apiUrl, ...options }, 'demo workload running');
  const bannerStop = new AbortController();
  void bannerWhenReady(apiUrl, file, bannerStop.signal);
  return {
    name: 'demo',
    // The current round's requests fail once the API closes; nothing waits for it.
    close: async () => {
      stopped = true;
      bannerStop.abort();
      clearTimeout(registerTimer);
      void loop;
    },
  };
}
