// The clients of lockApiProcesses.bench.ts, in a process of their own (forked, IPC): on `run`, `concurrency`
// clients each acquire and release their own key for `seconds` — over HTTP against a `lockaudit api` process
// (keep-alive connections, as a service's client library holds them), or as the bare etcd txn pair
// (barePair.ts) — and answer with the acquire latencies, the cycles, and this process's CPU over the run.
import { Agent, request } from 'node:http';
import { Etcd3 } from 'etcd3';
import { barePair, type BarePair } from './barePair.js';

export interface DriverInit {
  kind: 'init';
  url: string;
  token: string;
  session: string;
  ns: string;
  className: string;
  endpoints: string[];
  root: string;
}

export interface DriverRun {
  kind: 'run';
  mode: 'api' | 'bare';
  concurrency: number;
  seconds: number;
}

export interface DriverResult {
  kind: 'result';
  acquireMs: number[];
  cycles: number;
  seconds: number;
  /** This process's CPU (user + system) over the run, ms. */
  cpuMs: number;
}

export type DriverReply = DriverResult | { kind: 'ready' } | { kind: 'error'; message: string };

let init: DriverInit | undefined;
let etcd: Etcd3 | undefined;
let pair: BarePair | undefined;
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

function post(path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const s = init as DriverInit;
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${s.url}${path}`,
      {
        method: 'POST',
        agent,
        headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function apiCycle(clientNo: number): Promise<number> {
  const s = init as DriverInit;
  const key = `${s.ns}/k-${clientNo}`;
  const t0 = performance.now();
  const got = await post('/v1/locks/acquire', { key, session: s.session, class: s.className });
  const acquired = performance.now() - t0;
  if (got.status !== 200) throw new Error(`acquire answered ${got.status}: ${JSON.stringify(got.body)}`);
  const rel = await post('/v1/locks/release', { key, session: s.session, token: got.body.token });
  if (rel.status !== 200) throw new Error(`release answered ${rel.status}: ${JSON.stringify(rel.body)}`);
  return acquired;
}

async function run(cmd: DriverRun): Promise<DriverResult> {
  const cycle = cmd.mode === 'api' ? apiCycle : (pair as BarePair).cycle;
  const acquireMs: number[] = [];
  let cycles = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const until = started + cmd.seconds * 1000;
  await Promise.all(
    Array.from({ length: cmd.concurrency }, async (_, clientNo) => {
      while (performance.now() < until) {
        acquireMs.push(await cycle(clientNo));
        cycles++;
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  return { kind: 'result', acquireMs, cycles, seconds: (performance.now() - started) / 1000, cpuMs: (used.user + used.system) / 1000 };
}

const reply = (m: DriverReply): void => void process.send?.(m);

process.on('message', (msg: DriverInit | DriverRun | { kind: 'stop' }) => {
  void (async () => {
    try {
      if (msg.kind === 'init') {
        init = msg;
        etcd = new Etcd3({ hosts: msg.endpoints });
        pair = await barePair(etcd, msg.root, msg.ns, msg.className);
        reply({ kind: 'ready' });
      } else if (msg.kind === 'run') {
        reply(await run(msg));
      } else {
        await pair?.close();
        etcd?.close();
        agent.destroy();
        process.disconnect();
      }
    } catch (err) {
      reply({ kind: 'error', message: (err as Error).message });
    }
  })();
});
