// A V8 .cpuprofile split into the stages of a cost model: each sample goes to the stage of the nearest frame on
// its stack (from the leaf up) whose code belongs to a stage — so node's own stream code under an HTTP response
// counts as HTTP, and under a gRPC call as the etcd client — and is summed per unit of work over time windows
// (process.hrtime microseconds: the same monotonic clock the profile's timestamps use, in any process).
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Window {
  name: string;
  startUs: number;
  endUs: number;
  /** Units of work done in the window (cycles, events): the table is per unit. */
  units: number;
}

type Rule = readonly [stage: string, patterns: readonly RegExp[]];

const NM = (names: string): RegExp => new RegExp(`/node_modules/(${names})/`);

/** The lock API's stages, per acquire+release cycle. First match on a frame wins, so order matters. */
export const LOCK_API_STAGES: readonly Rule[] = [
  [
    'etcd client (gRPC, protobuf)',
    [NM('@grpc/grpc-js|@grpc/proto-loader|etcd3|protobufjs|@protobufjs/[^/]+|long|cockatiel'), /^node:internal\/http2\//, /^node:http2$/],
  ],
  ['proofs (HMAC-SHA256)', [/\/core\/proof\.[jt]s$/]],
  ['auth (bearer token check)', [/\/core\/apiTokens\.[jt]s$/, /\/api\/auth\.[jt]s$/]],
  ['high-water and epoch', [/\/lock\/(revisionHighWater|sharedHighWater|epoch)\.[jt]s$/, /\/roles\/lockHighWater\.[jt]s$/]],
  ['logging', [NM('pino|@pinojs/[^/]+|sonic-boom|pino-std-serializers|fast-redact')]],
  ['metrics', [NM('prom-client'), /\/lock\/lockMetrics\.[jt]s$/]],
  [
    'HTTP, routing, validation, serialisation',
    [
      NM(
        'fastify|@fastify/[^/]+|find-my-way|secure-json-parse|ajv|ajv-formats|fast-json-stringify|avvio|fast-querystring|light-my-request|fast-uri|toad-cache',
      ),
      /^node:(_http_\w+|http|net)$/,
      /^node:internal\/(http|streams\/|stream_base_commons)/,
    ],
  ],
  ['lock logic (keys, values, compares)', [/\/(lock|core|api)\/.+\.[jt]s$/]],
];

/** The tailer's stages, per captured event (the main thread only: the store's insert threads are not in a V8 profile). */
export const TAILER_STAGES: readonly Rule[] = [
  ['watch decode (gRPC, protobuf)', [NM('@grpc/grpc-js|etcd3|protobufjs|@protobufjs/[^/]+|long|cockatiel'), /^node:internal\/http2\//, /^node:http2$/]],
  ['proof checks (HMAC-SHA256)', [/\/core\/proof\.[jt]s$/]],
  ['value parse and classification', [/\/tailer\/decode\/.+\.[jt]s$/, /\/core\/(keyspace|token)\.[jt]s$/]],
  ['row build and RowBinary encode', [/\/tailer\/sink\/(rowWriter|clickhouseSink)\.[jt]s$/, /\/core\/rowBinary\.[jt]s$/]],
  ['store client (insert, queries)', [NM('@clickhouse/client|@clickhouse/client-common|chdb'), /\/core\/(clickhouse|embeddedOwner)\.[jt]s$/]],
  ['checkpoint and watermark', [/\/tailer\/sink\/(checkpointWriter|offsets|grantHighWater)\.[jt]s$/, /\/tailer\/watch\/watermark\.[jt]s$/]],
  ['logging', [NM('pino|@pinojs/[^/]+|sonic-boom')]],
  ['metrics', [NM('prom-client')]],
  ['tailer (windows, brackets, pipeline)', [/\/tailer\/.+\.[jt]s$/]],
];

export interface StageTable {
  window: Window;
  /** Microseconds of CPU per unit, by stage; 'GC' and 'other' included, idle left out. */
  perUnitUs: Map<string, number>;
  totalPerUnitUs: number;
}

export function stageTables(profile: Profile, rules: readonly Rule[], windows: readonly Window[]): StageTable[] {
  const parent = new Map<number, number>();
  const byId = new Map<number, ProfileNode>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const stageOfNode = new Map<number, string | undefined>();
  const stageOf = (id: number): string | undefined => {
    if (stageOfNode.has(id)) return stageOfNode.get(id);
    const leaf = byId.get(id)?.callFrame.functionName ?? '';
    let stage: string | undefined;
    if (leaf === '(idle)') stage = undefined;
    else if (leaf === '(garbage collector)') stage = 'garbage collection';
    else {
      for (let at: number | undefined = id; at !== undefined && stage === undefined; at = parent.get(at)) {
        const url = byId.get(at)?.callFrame.url ?? '';
        if (url) stage = rules.find(([, patterns]) => patterns.some((p) => p.test(url)))?.[0];
      }
      stage ??= leaf === '(program)' ? 'V8 (program)' : 'other (event loop, native)';
    }
    stageOfNode.set(id, stage);
    return stage;
  };
  const tables = windows.map((window) => ({ window, us: new Map<string, number>() }));
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    const dt = profile.timeDeltas[i + 1] ?? 0;
    const stage = stageOf(profile.samples[i] as number);
    if (stage === undefined) continue;
    for (const table of tables) if (t >= table.window.startUs && t < table.window.endUs) table.us.set(stage, (table.us.get(stage) ?? 0) + dt);
  }
  return tables.map(({ window, us }) => {
    const perUnitUs = new Map([...us].sort((a, b) => b[1] - a[1]).map(([s, v]) => [s, v / Math.max(1, window.units)]));
    return { window, perUnitUs, totalPerUnitUs: [...perUnitUs.values()].reduce((a, b) => a + b, 0) };
  });
}

export function readProfile(file: string): Profile {
  return JSON.parse(readFileSync(file, 'utf8')) as Profile;
}

/** The tables as text: one column per window, µs per unit. */
export function formatStages(tables: readonly StageTable[], unit: string): string {
  const stages = [...new Set(tables.flatMap((t) => [...t.perUnitUs.keys()]))];
  const width = Math.max(...stages.map((s) => s.length), 10);
  const head = `${'stage'.padEnd(width)} | ${tables.map((t) => `${t.window.name} (µs/${unit})`.padStart(22)).join(' | ')}`;
  const rows = stages.map((s) => `${s.padEnd(width)} | ${tables.map((t) => (t.perUnitUs.get(s) ?? 0).toFixed(1).padStart(22)).join(' | ')}`);
  const total = `${'total (main thread)'.padEnd(width)} | ${tables.map((t) => t.totalPerUnitUs.toFixed(1).padStart(22)).join(' | ')}`;
  return [head, '-'.repeat(head.length), ...rows, total].join('\n');
}
