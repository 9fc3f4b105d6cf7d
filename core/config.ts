// One configuration schema, validated once at start-up. Sources, lowest
// precedence first: defaults, the YAML file named by LOCKAUDIT_CONFIG, then
// LOCKAUDIT_* environment variables. Unknown keys in either source are
// rejected, and every problem names its key.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Type, { type Static } from 'typebox';
import { Value } from 'typebox/value';
import { parse as parseYaml } from 'yaml';
import { LockauditError } from './errors.js';

/** An etcd cluster's name as configured: it labels every row and metric of that cluster. */
export const CLUSTER_NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,62}$';

const EtcdClusterSchema = Type.Object(
  {
    name: Type.String({ pattern: CLUSTER_NAME_PATTERN, description: 'Cluster name: lowercase letters, digits, - and _.' }),
    endpoints: Type.Array(Type.String({ pattern: '^https?://[^\\s,;]+$' }), { minItems: 1 }),
  },
  { additionalProperties: false },
);

export const FileConfigSchema = Type.Object(
  {
    dataDir: Type.Optional(Type.String({ minLength: 1, description: 'Where local data lives (embedded ClickHouse, service data, spools). Default ./.lockaudit' })),
    host: Type.Optional(Type.String({ minLength: 1, description: 'API listen address. Default 127.0.0.1' })),
    originSecret: Type.Optional(
      Type.String({ minLength: 32, description: 'Key of the proof of origin the lock API writes into each hold (HMAC-SHA256), checked by the tailer. Default: generated once into <dataDir>/origin-secret; every API and tailer process of a deployment needs the same one' }),
    ),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'API port. Default 8080' })),
    logLevel: Type.Optional(Type.Union([Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')])),
    etcd: Type.Optional(Type.Array(EtcdClusterSchema, { minItems: 1, description: 'etcd clusters to serve and tail. Default: the local one.' })),
    clickhouse: Type.Optional(
      Type.Object(
        {
          url: Type.Optional(Type.String({ pattern: '^https?://', description: 'ClickHouse server URL; absent means embedded chdb at <dataDir>/clickhouse.' })),
          database: Type.Optional(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$', description: 'Database name. Default lockaudit' })),
          user: Type.Optional(Type.String()),
          password: Type.Optional(Type.String()),
          cluster: Type.Optional(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$', description: 'ClickHouse cluster name: migrations run ON CLUSTER with Replicated engines.' })),
        },
        { additionalProperties: false },
      ),
    ),
    s3: Type.Optional(
      Type.Object(
        {
          endpoint: Type.Optional(Type.String({ pattern: '^https?://', description: 'S3/MinIO endpoint; absent means the local MinIO.' })),
          accessKey: Type.Optional(Type.String({ minLength: 3 })),
          secretKey: Type.Optional(Type.String({ minLength: 8 })),
          region: Type.Optional(Type.String({ minLength: 1 })),
          historyBucket: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9.-]{2,62}$' })),
          archiveBucket: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9.-]{2,62}$' })),
        },
        { additionalProperties: false },
      ),
    ),
    redisUrl: Type.Optional(Type.String({ pattern: '^rediss?://', description: 'Redis URL for the job queue; absent means the local Redis.' })),
    queuePrefix: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_:-]{1,64}$', description: 'BullMQ key prefix. Default lockaudit' })),
    tailer: Type.Optional(
      Type.Object(
        {
          electionTtlSeconds: Type.Optional(Type.Integer({ minimum: 2, maximum: 300, description: 'Election lease TTL: a dead leader is replaced after about this long. Default 5' })),
          compactionWindowRevisions: Type.Optional(Type.Integer({ minimum: 1, description: "How many revisions etcd keeps before compacting (the operator's setting); lag alarms at half. Default 1000000" })),
          catchUpWindows: Type.Optional(Type.Integer({ minimum: 1, maximum: 64, description: 'Concurrent revision windows when catching up far behind. Default 8' })),
          batchMaxRows: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000000, description: 'Rows per ClickHouse insert. Default 20000' })),
          batchMaxDelayMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 60000, description: 'Longest a row waits for its batch. Default 200' })),
        },
        { additionalProperties: false },
      ),
    ),
    reports: Type.Optional(
      Type.Object(
        {
          riskRegisterCron: Type.Optional(Type.String({ pattern: '^\\S+( \\S+){4,5}$', description: "Cron pattern of the nightly advisory risk register (5 fields, or 6 with seconds). Default '0 2 * * *'" })),
          riskRegisterTz: Type.Optional(Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_+/-]{0,63}$', description: 'IANA time zone of that cron and of the register date. Default UTC' })),
          maxWindowDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3660, description: 'Longest from–to window a report accepts, in days. Default 31' })),
          maxPageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, description: 'Largest page of grant history. Default 1000' })),
          queryTimeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 3600000, description: 'Longest a report query may run in ClickHouse (max_execution_time). Default 30000' })),
          rateLimitPerMinute: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000000, description: 'Report requests per caller identity per minute. Default 120' })),
        },
        { additionalProperties: false },
      ),
    ),
    local: Type.Optional(
      Type.Object(
        {
          portBase: Type.Optional(Type.Integer({ minimum: 1024, maximum: 65000, description: 'First port of the local services block (etcd, Redis, MinIO). Default 23000' })),
          etcdMembers: Type.Optional(Type.Union([Type.Literal(1), Type.Literal(3)], { description: 'Local etcd: one member or a three-member cluster on loopback. Default 1' })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export type FileConfig = Static<typeof FileConfigSchema>;
export type EtcdCluster = Static<typeof EtcdClusterSchema>;

/** Ports of the local services, all derived from one base so test runs can move the whole block. */
export interface LocalPorts {
  etcdClient: readonly number[];
  etcdPeer: readonly number[];
  redis: number;
  minio: number;
  minioConsole: number;
}

export type ClickHouseTarget =
  | { mode: 'embedded'; path: string; database: string }
  | { mode: 'server'; url: string; database: string; user?: string; password?: string; cluster?: string };

export interface Config {
  dataDir: string;
  /** undefined: the generated one in <dataDir>/origin-secret (core/originSecret.ts). */
  originSecret?: string;
  host: string;
  port: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  etcd: { clusters: EtcdCluster[]; local: boolean };
  clickhouse: ClickHouseTarget;
  s3: { endpoint: string; accessKey: string; secretKey: string; region: string; historyBucket: string; archiveBucket: string; local: boolean };
  redis: { url: string; local: boolean };
  queuePrefix: string;
  local: { portBase: number; etcdMembers: 1 | 3; ports: LocalPorts };
  tailer: TailerSettings;
  reports: ReportSettings;
}

export interface ReportSettings {
  riskRegisterCron: string;
  riskRegisterTz: string;
  maxWindowDays: number;
  maxPageSize: number;
  queryTimeoutMs: number;
  rateLimitPerMinute: number;
}

export interface TailerSettings {
  electionTtlSeconds: number;
  compactionWindowRevisions: number;
  catchUpWindows: number;
  batchMaxRows: number;
  batchMaxDelayMs: number;
}

/** Local MinIO credentials: used only for the project's own loopback server. */
export const LOCAL_S3_ACCESS_KEY = 'lockaudit';
export const LOCAL_S3_SECRET_KEY = 'lockaudit-local-secret';

type EnvParser = (raw: string, name: string) => unknown;
const asString: EnvParser = (raw) => raw;
const asInteger: EnvParser = (raw, name) => {
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigProblem(name, `must be an integer, got "${raw}"`);
  return Number(raw.trim());
};

/** Environment variables and the config path each one sets. */
export const envVars: ReadonlyArray<{ name: string; path: readonly string[]; parse: EnvParser; secret?: boolean; doc: string }> = [
  { name: 'LOCKAUDIT_DATA_DIR', path: ['dataDir'], parse: asString, doc: 'data directory (default ./.lockaudit)' },
  { name: 'LOCKAUDIT_ORIGIN_SECRET', path: ['originSecret'], parse: asString, secret: true, doc: 'key of the lock API\'s proof of origin on holds, ≥ 32 chars (default: generated into <dataDir>/origin-secret)' },
  { name: 'LOCKAUDIT_HOST', path: ['host'], parse: asString, doc: 'API listen address (default 127.0.0.1)' },
  { name: 'LOCKAUDIT_PORT', path: ['port'], parse: asInteger, doc: 'API port (default 8080)' },
  { name: 'LOCKAUDIT_LOG_LEVEL', path: ['logLevel'], parse: asString, doc: 'fatal|error|warn|info|debug|trace|silent (default info)' },
  { name: 'LOCKAUDIT_ETCD', path: ['etcd'], parse: parseEtcdClusters, doc: 'clusters as name=url[,url…][;name=url…] (default: the local one)' },
  { name: 'LOCKAUDIT_CLICKHOUSE_URL', path: ['clickhouse', 'url'], parse: asString, doc: 'ClickHouse server URL (absent: embedded chdb)' },
  { name: 'LOCKAUDIT_CLICKHOUSE_DATABASE', path: ['clickhouse', 'database'], parse: asString, doc: 'database (default lockaudit)' },
  { name: 'LOCKAUDIT_CLICKHOUSE_USER', path: ['clickhouse', 'user'], parse: asString, doc: 'server user' },
  { name: 'LOCKAUDIT_CLICKHOUSE_PASSWORD', path: ['clickhouse', 'password'], parse: asString, secret: true, doc: 'server password' },
  { name: 'LOCKAUDIT_CLICKHOUSE_CLUSTER', path: ['clickhouse', 'cluster'], parse: asString, doc: 'run migrations ON CLUSTER with Replicated engines' },
  { name: 'LOCKAUDIT_S3_ENDPOINT', path: ['s3', 'endpoint'], parse: asString, doc: 'S3/MinIO endpoint (absent: local MinIO)' },
  { name: 'LOCKAUDIT_S3_ACCESS_KEY', path: ['s3', 'accessKey'], parse: asString, doc: 'S3 access key' },
  { name: 'LOCKAUDIT_S3_SECRET_KEY', path: ['s3', 'secretKey'], parse: asString, secret: true, doc: 'S3 secret key' },
  { name: 'LOCKAUDIT_S3_REGION', path: ['s3', 'region'], parse: asString, doc: 'S3 region (default us-east-1)' },
  { name: 'LOCKAUDIT_S3_HISTORY_BUCKET', path: ['s3', 'historyBucket'], parse: asString, doc: 'Parquet history bucket (default lockaudit-history)' },
  { name: 'LOCKAUDIT_S3_ARCHIVE_BUCKET', path: ['s3', 'archiveBucket'], parse: asString, doc: 'object-locked force-release archive (default lockaudit-force-archive)' },
  { name: 'LOCKAUDIT_REDIS_URL', path: ['redisUrl'], parse: asString, secret: true, doc: 'Redis URL (absent: local Redis)' },
  { name: 'LOCKAUDIT_QUEUE_PREFIX', path: ['queuePrefix'], parse: asString, doc: 'BullMQ key prefix (default lockaudit)' },
  { name: 'LOCKAUDIT_TAILER_ELECTION_TTL_SECONDS', path: ['tailer', 'electionTtlSeconds'], parse: asInteger, doc: 'tailer election lease TTL (default 5)' },
  { name: 'LOCKAUDIT_TAILER_COMPACTION_WINDOW_REVISIONS', path: ['tailer', 'compactionWindowRevisions'], parse: asInteger, doc: "etcd's compaction window in revisions; lag alarms at half (default 1000000)" },
  { name: 'LOCKAUDIT_TAILER_CATCH_UP_WINDOWS', path: ['tailer', 'catchUpWindows'], parse: asInteger, doc: 'concurrent revision windows for catch-up (default 8)' },
  { name: 'LOCKAUDIT_LOCAL_PORT_BASE', path: ['local', 'portBase'], parse: asInteger, doc: 'first port of the local services block (default 23000)' },
  { name: 'LOCKAUDIT_RISK_REGISTER_CRON', path: ['reports', 'riskRegisterCron'], parse: asString, doc: "cron of the nightly risk register (default '0 2 * * *')" },
  { name: 'LOCKAUDIT_RISK_REGISTER_TZ', path: ['reports', 'riskRegisterTz'], parse: asString, doc: 'time zone of that cron and of the register date (default UTC)' },
  { name: 'LOCKAUDIT_MAX_WINDOW_DAYS', path: ['reports', 'maxWindowDays'], parse: asInteger, doc: 'longest report window in days (default 31)' },
  { name: 'LOCKAUDIT_MAX_PAGE_SIZE', path: ['reports', 'maxPageSize'], parse: asInteger, doc: 'largest grant-history page (default 1000)' },
  { name: 'LOCKAUDIT_QUERY_TIMEOUT_MS', path: ['reports', 'queryTimeoutMs'], parse: asInteger, doc: 'report query timeout in ms (default 30000)' },
  { name: 'LOCKAUDIT_RATE_LIMIT_PER_MINUTE', path: ['reports', 'rateLimitPerMinute'], parse: asInteger, doc: 'report requests per identity per minute (default 120)' },
  { name: 'LOCKAUDIT_LOCAL_ETCD_MEMBERS', path: ['local', 'etcdMembers'], parse: asInteger, doc: 'local etcd members, 1 or 3 (default 1)' },
];

const NON_CONFIG_ENV = new Set(['LOCKAUDIT_CONFIG']);

class ConfigProblem extends Error {
  constructor(readonly key: string, readonly problem: string) {
    super(`${key}: ${problem}`);
  }
}

/** Parses `name=url[,url…][;name=url…]`. */
export function parseEtcdClusters(raw: string, name = 'LOCKAUDIT_ETCD'): EtcdCluster[] {
  const clusters: EtcdCluster[] = [];
  for (const part of raw.split(';').map((s) => s.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new ConfigProblem(name, `"${part}" is not name=url[,url…]`);
    const clusterName = part.slice(0, eq).trim();
    const endpoints = part.slice(eq + 1).split(',').map((s) => s.trim()).filter(Boolean);
    if (endpoints.length === 0) throw new ConfigProblem(name, `cluster "${clusterName}" has no endpoints`);
    if (clusters.some((c) => c.name === clusterName)) throw new ConfigProblem(name, `cluster "${clusterName}" is named twice`);
    clusters.push({ name: clusterName, endpoints });
  }
  if (clusters.length === 0) throw new ConfigProblem(name, 'names no cluster');
  return clusters;
}

function setPath(target: Record<string, unknown>, keys: readonly string[], value: unknown): void {
  let node = target;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1] as string] = value;
}

function keyName(instancePath: string, envByPath: Map<string, string>): string {
  const dotted = instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
  // Name the env var when the value came from one, so the user knows what to fix.
  for (const [p, env] of envByPath) if (dotted === p || dotted.startsWith(`${p}.`)) return `${env} (${dotted})`;
  return dotted || '(root)';
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/** Reads, merges and validates the configuration. Throws LOCKAUDIT_ERR_CONFIG_* naming every problem. */
export function loadConfig(options: LoadOptions = {}): Config {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const problems: string[] = [];
  let raw: Record<string, unknown> = {};

  const file = env.LOCKAUDIT_CONFIG;
  if (file) {
    let text: string;
    try {
      text = readFileSync(path.resolve(cwd, file), 'utf8');
    } catch (err) {
      throw new LockauditError('LOCKAUDIT_ERR_CONFIG_FILE', `LOCKAUDIT_CONFIG: cannot read ${file}: ${(err as Error).message}`, { cause: err });
    }
    let parsed: unknown;
    try {
      parsed = parseYaml(text);
    } catch (err) {
      throw new LockauditError('LOCKAUDIT_ERR_CONFIG_FILE', `LOCKAUDIT_CONFIG: ${file} is not valid YAML: ${(err as Error).message}`, { cause: err });
    }
    if (parsed !== null && parsed !== undefined) {
      if (typeof parsed !== 'object' || Array.isArray(parsed)) problems.push(`${file}: must be a mapping of keys to values`);
      else raw = parsed as Record<string, unknown>;
    }
  }

  const envByPath = new Map<string, string>();
  const known = new Set(envVars.map((v) => v.name));
  for (const name of Object.keys(env)) {
    if (name.startsWith('LOCKAUDIT_') && !known.has(name) && !NON_CONFIG_ENV.has(name)) {
      problems.push(`${name}: unknown setting (known: ${[...known].join(', ')})`);
    }
  }
  for (const v of envVars) {
    const value = env[v.name];
    if (value === undefined || value === '') continue;
    try {
      setPath(raw, v.path, v.parse(value, v.name));
      envByPath.set(v.path.join('.'), v.name);
    } catch (err) {
      if (err instanceof ConfigProblem) problems.push(err.message);
      else throw err;
    }
  }

  if (problems.length === 0) {
    for (const error of Value.Errors(FileConfigSchema, raw)) {
      if (error.keyword === 'boolean') continue; // reported once more, better, as additionalProperties
      if (error.keyword === 'additionalProperties') {
        const extra = (error.params as { additionalProperties?: string[] }).additionalProperties ?? [];
        for (const k of extra) problems.push(`${keyName(`${error.instancePath}/${k}`, envByPath)}: unknown key`);
        continue;
      }
      if (error.keyword === 'anyOf' || error.keyword === 'const') {
        problems.push(`${keyName(error.instancePath, envByPath)}: ${describeUnion(error.instancePath)}`);
        continue;
      }
      problems.push(`${keyName(error.instancePath, envByPath)}: ${error.message}`);
    }
  }
  // A time zone is checked against the runtime's zone database, which a pattern cannot do.
  const tz = (raw as FileConfig).reports?.riskRegisterTz;
  if (problems.length === 0 && tz !== undefined && !isTimeZone(tz)) problems.push(`${keyName('/reports/riskRegisterTz', envByPath)}: unknown time zone "${tz}"`);
  const unique = [...new Set(problems)];
  if (unique.length > 0) {
    throw new LockauditError('LOCKAUDIT_ERR_CONFIG_INVALID', `invalid configuration:\n  - ${unique.join('\n  - ')}`, { details: unique });
  }
  return resolve(raw as FileConfig, cwd);
}

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function describeUnion(instancePath: string): string {
  if (instancePath.endsWith('logLevel')) return 'must be one of fatal, error, warn, info, debug, trace, silent';
  if (instancePath.endsWith('etcdMembers')) return 'must be 1 or 3';
  return 'has an invalid value';
}

export function localPorts(portBase: number): LocalPorts {
  return {
    etcdClient: [portBase, portBase + 1, portBase + 2],
    etcdPeer: [portBase + 10, portBase + 11, portBase + 12],
    redis: portBase + 20,
    minio: portBase + 30,
    minioConsole: portBase + 31,
  };
}

function resolve(file: FileConfig, cwd: string): Config {
  const dataDir = path.resolve(cwd, file.dataDir ?? './.lockaudit');
  const portBase = file.local?.portBase ?? 23000;
  const etcdMembers = file.local?.etcdMembers ?? 1;
  const ports = localPorts(portBase);
  const localEtcd = { name: 'local', endpoints: ports.etcdClient.slice(0, etcdMembers).map((p) => `http://127.0.0.1:${p}`) };
  const ch = file.clickhouse ?? {};
  const database = ch.database ?? 'lockaudit';
  const clickhouse: ClickHouseTarget = ch.url
    ? { mode: 'server', url: ch.url, database, user: ch.user, password: ch.password, cluster: ch.cluster }
    : { mode: 'embedded', path: path.join(dataDir, 'clickhouse'), database };
  const s3 = file.s3 ?? {};
  return {
    dataDir,
    ...(file.originSecret ? { originSecret: file.originSecret } : {}),
    host: file.host ?? '127.0.0.1',
    port: file.port ?? 8080,
    logLevel: file.logLevel ?? 'info',
    etcd: { clusters: file.etcd ?? [localEtcd], local: file.etcd === undefined },
    clickhouse,
    s3: {
      endpoint: s3.endpoint ?? `http://127.0.0.1:${ports.minio}`,
      accessKey: s3.accessKey ?? (s3.endpoint ? '' : LOCAL_S3_ACCESS_KEY),
      secretKey: s3.secretKey ?? (s3.endpoint ? '' : LOCAL_S3_SECRET_KEY),
      region: s3.region ?? 'us-east-1',
      historyBucket: s3.historyBucket ?? 'lockaudit-history',
      archiveBucket: s3.archiveBucket ?? 'lockaudit-force-archive',
      local: s3.endpoint === undefined,
    },
    redis: { url: file.redisUrl ?? `redis://127.0.0.1:${ports.redis}`, local: file.redisUrl === undefined },
    queuePrefix: file.queuePrefix ?? 'lockaudit',
    local: { portBase, etcdMembers, ports },
    reports: {
      riskRegisterCron: file.reports?.riskRegisterCron ?? '0 2 * * *',
      riskRegisterTz: file.reports?.riskRegisterTz ?? 'UTC',
      maxWindowDays: file.reports?.maxWindowDays ?? 31,
      maxPageSize: file.reports?.maxPageSize ?? 1000,
      queryTimeoutMs: file.reports?.queryTimeoutMs ?? 30_000,
      rateLimitPerMinute: file.reports?.rateLimitPerMinute ?? 120,
    },
    tailer: {
      electionTtlSeconds: file.tailer?.electionTtlSeconds ?? 5,
      compactionWindowRevisions: file.tailer?.compactionWindowRevisions ?? 1_000_000,
      catchUpWindows: file.tailer?.catchUpWindows ?? 8,
      batchMaxRows: file.tailer?.batchMaxRows ?? 20_000,
      batchMaxDelayMs: file.tailer?.batchMaxDelayMs ?? 200,
    },
  };
}

const MASK = '****';

/** The effective config with secrets masked, for logs and `lockaudit config`. */
export function maskedConfig(config: Config): Record<string, unknown> {
  const copy = structuredClone(config) as unknown as Record<string, unknown>;
  const s3 = copy.s3 as Record<string, unknown>;
  if (s3.secretKey) s3.secretKey = MASK;
  const ch = copy.clickhouse as Record<string, unknown>;
  if (ch.password) ch.password = MASK;
  if (copy.originSecret) copy.originSecret = MASK;
  const redis = copy.redis as Record<string, unknown>;
  redis.url = maskUrlPassword(String(redis.url));
  return copy;
}

function maskUrlPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = MASK;
    return u.toString();
  } catch {
    return MASK;
  }
}
