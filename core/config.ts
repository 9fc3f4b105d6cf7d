// One configuration schema, validated once at start-up. Sources, lowest
// precedence first: defaults, the YAML file named by LOCKAUDIT_CONFIG, then
// LOCKAUDIT_* environment variables. Unknown keys in either source are
// rejected, and every problem names its key.
import { isIP } from 'node:net';
import { CronExpressionParser } from 'cron-parser';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Type, { type Static } from 'typebox';
import { Value } from 'typebox/value';
import { parse as parseYaml } from 'yaml';
import { LockauditError } from './errors.js';
import { digestPublicKeyProblem, digestSigningKeyProblem } from './digestKey.js';

/** An etcd cluster's name as configured: it labels every row and metric of that cluster. */
export const CLUSTER_NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,62}$';

const EtcdClusterSchema = Type.Object(
  {
    name: Type.String({ pattern: CLUSTER_NAME_PATTERN, description: 'Cluster name: lowercase letters, digits, - and _.' }),
    endpoints: Type.Array(Type.String({ pattern: '^https?://[^\\s,;]+$' }), { minItems: 1 }),
    lockApi: Type.Optional(
      Type.Boolean({
        description: 'The cluster the embedded lock API serves: required on one when several are configured (roles/lockEngine.ts); absent, the only one.',
      }),
    ),
  },
  { additionalProperties: false },
);

const LogLevelSchema = Type.Union(
  [
    Type.Literal('fatal'),
    Type.Literal('error'),
    Type.Literal('warn'),
    Type.Literal('info'),
    Type.Literal('debug'),
    Type.Literal('trace'),
    Type.Literal('silent'),
  ],
  {
    default: 'info',
    description: 'fatal error warn info debug trace silent',
  },
);

// Each default is written once, here, as the schema's `default`; resolve() fills
// them in, docs/configuration.md's settings table is checked against them
// (test/unit/config.test.ts), and classes fall back to `configDefaults`.
const ClickHouseSchema = Type.Object(
  {
    url: Type.Optional(Type.String({ pattern: '^https?://', description: 'ClickHouse server URL; absent means embedded chdb at <dataDir>/clickhouse.' })),
    database: Type.Optional(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$', default: 'lockaudit', description: 'Database name.' })),
    user: Type.Optional(Type.String({ description: 'Server user.' })),
    password: Type.Optional(Type.String({ description: 'Server password (masked).' })),
    cluster: Type.Optional(
      Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$', description: 'ClickHouse cluster name: migrations run ON CLUSTER with Replicated engines.' }),
    ),
  },
  { additionalProperties: false, default: {} },
);

const S3Schema = Type.Object(
  {
    endpoint: Type.Optional(Type.String({ pattern: '^https?://', description: 'S3/MinIO endpoint; absent means the local MinIO.' })),
    accessKey: Type.Optional(Type.String({ minLength: 3, description: "Access key; the local MinIO's when the endpoint is absent." })),
    secretKey: Type.Optional(Type.String({ minLength: 8, description: "Secret key (masked); the local MinIO's when the endpoint is absent." })),
    region: Type.Optional(Type.String({ minLength: 1, default: 'us-east-1', description: 'Region.' })),
    historyBucket: Type.Optional(
      Type.String({ pattern: '^[a-z0-9][a-z0-9.-]{2,62}$', default: 'lockaudit-history', description: 'Parquet history, 365-day lifecycle.' }),
    ),
    archiveBucket: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9][a-z0-9.-]{2,62}$',
        default: 'lockaudit-force-archive',
        description: 'Force-release archive: object lock, COMPLIANCE 7 years.',
      }),
    ),
  },
  { additionalProperties: false, default: {} },
);

const TailerSchema = Type.Object(
  {
    electionTtlSeconds: Type.Optional(
      Type.Integer({ minimum: 2, maximum: 300, default: 5, description: 'Election lease TTL: a dead leader is replaced after about this long.' }),
    ),
    compactionWindowRevisions: Type.Optional(
      Type.Integer({
        minimum: 1,
        default: 1_000_000,
        description: "How many revisions etcd keeps before compacting (the operator's setting); the lag alarm fires at half.",
      }),
    ),
    catchUpWindows: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 64,
        default: 16,
        description: 'Most revision windows watched concurrently when catching up; how many follows the lag (one per 5 000 revisions behind).',
      }),
    ),
    batchMaxRows: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 20_000, description: 'Rows per ClickHouse insert.' })),
    batchMaxDelayMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 60_000, default: 200, description: 'Longest a row waits for its batch.' })),
    catchUpBatchMaxRows: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        default: 50_000,
        description: "Rows per ClickHouse insert while catching up (more than 5 000 revisions of etcd's history not yet read).",
      }),
    ),
    catchUpBatchMaxDelayMs: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 60_000, default: 1_000, description: 'Longest a row waits for its batch while catching up.' }),
    ),
  },
  { additionalProperties: false, default: {} },
);

const ReportsSchema = Type.Object(
  {
    riskRegisterCron: Type.Optional(
      Type.String({
        pattern: '^\\S+( \\S+){4,5}$',
        default: '0 2 * * *',
        description: 'Cron pattern of the nightly advisory risk register (5 fields, or 6 with seconds).',
      }),
    ),
    riskRegisterTz: Type.Optional(
      Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_+/-]{0,63}$', default: 'UTC', description: 'IANA time zone of that cron and of the register date.' }),
    ),
    maxWindowDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3660, default: 31, description: 'Longest from–to window a report accepts, in days.' })),
    maxPageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, default: 1000, description: 'Largest page of grant history.' })),
    queryTimeoutMs: Type.Optional(
      Type.Integer({ minimum: 100, maximum: 3_600_000, default: 30_000, description: 'Longest a report query may run in ClickHouse (max_execution_time).' }),
    ),
    rateLimitPerMinute: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000, default: 120, description: 'Report requests per caller identity per minute.' }),
    ),
    exportRequestsPerHour: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100_000, default: 20, description: 'Compliance export requests (POST /v1/exports) per caller identity per hour.' }),
    ),
    exportMaxActive: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000, default: 2, description: 'Compliance exports one caller identity may have queued or running at once.' }),
    ),
    exportMaxRangeDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3_660, default: 400, description: 'Longest range of one compliance export, days.' })),
  },
  { additionalProperties: false, default: {} },
);

const ApiSchema = Type.Object(
  {
    cursorSecret: Type.Optional(
      Type.String({
        minLength: 32,
        description:
          'Secret that signs grant-history cursors; give every API process the same one so a cursor pages on any of them. Absent: a random one per process (masked).',
      }),
    ),
    metricsRequireToken: Type.Optional(Type.Boolean({ default: false, description: '/metrics answers only with a valid API token (any role).' })),
    exportDownloadSeconds: Type.Optional(
      Type.Integer({ minimum: 10, maximum: 604_800, default: 300, description: 'Lifetime of a presigned export download URL, seconds.' }),
    ),
    canaryIntervalSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 3600,
        default: 0,
        description:
          'Every this many seconds the api role acquires and releases a canary lock through its own lock engine and follows it end to end (captured, sealed); 0: off. The demo runs it every 10 s.',
      }),
    ),
    shutdownDrainMs: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 3_600_000,
        description:
          'At shutdown, how long the api role lets requests in flight finish before it closes their connections (ms). Absent: half of shutdownTimeoutMs, so a long report never holds the shutdown past its deadline.',
      }),
    ),
    maxWaitersPerKey: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100_000,
        default: 256,
        description: 'Acquires one API process lets wait (or attempt) for one lock at once; past it 429.',
      }),
    ),
    maxWaiters: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        default: 10_000,
        description: 'Acquires one API process lets wait (or attempt) at once in all; past it 429.',
      }),
    ),
    maxPendingRequests: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10_000,
        default: 64,
        description: 'Pending two-person requests of one kind (force-release, epoch advance) in etcd at once; past it 429.',
      }),
    ),
    maxPendingRequestsPerKey: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000, default: 4, description: 'Pending force-release requests for one lock at once; past it 429.' }),
    ),
  },
  { additionalProperties: false, default: {} },
);

const ArchiveSchema = Type.Object(
  {
    alarmAfterSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 604_800,
        default: 3600,
        description: 'A force-release record not archived this long after its approval raises the alarm.',
      }),
    ),
    pollIntervalMs: Type.Optional(
      Type.Integer({ minimum: 100, maximum: 3_600_000, default: 2000, description: 'How often the force archiver re-reads etcd besides its watch, ms.' }),
    ),
  },
  { additionalProperties: false, default: {} },
);

const DigestsSchema = Type.Object(
  {
    periodSeconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 86_400, default: 3600, description: 'Length of a digest period (UTC-aligned); tests use seconds.' }),
    ),
    settleSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 3600,
        default: 5,
        description: 'A period is sealed once the tailer has captured a change at least this long after its end.',
      }),
    ),
    pollIntervalMs: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: 3_600_000,
        default: 10_000,
        description: 'How often the digest worker looks for sealed periods and changed ones, ms.',
      }),
    ),
    lookbackPeriods: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100_000,
        default: 48,
        description: 'How many of the latest sealed periods are re-checked for late changes (each change gets a superseding digest).',
      }),
    ),
    alarmAfterPeriods: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100_000,
        default: 2,
        description: 'Sealed periods without a digest (or a digest run failing this long) before the digest alarm.',
      }),
    ),
    clockToleranceSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 300,
        default: 5,
        description:
          "How far a captured /sys/clock write may be dated ahead of the digest worker's (or verifier's) own clock: no period ending later than that is sealed, and a clock write further ahead bounds nothing and raises LOCKAUDIT_ALARM_CLOCK_AHEAD.",
      }),
    ),
  },
  { additionalProperties: false, default: {} },
);

const AlertRuleSchema = Type.Object(
  {
    kinds: Type.Array(
      Type.Union([
        Type.Literal('grant'),
        Type.Literal('release'),
        Type.Literal('expiry'),
        Type.Literal('force-release'),
        Type.Literal('session-close'),
        Type.Literal('epoch-release'),
        Type.Literal('epoch-advance'),
        Type.Literal('class-change'),
        Type.Literal('unprotected-grant'),
        Type.Literal('gap'),
        Type.Literal('deleted'),
        Type.Literal('foreign-grant'),
        Type.Literal('waiver-expired'),
        Type.Literal('waiver-expiring'),
        Type.Literal('two-person'),
        Type.Literal('two-person-refused'),
        Type.Literal('canary'),
      ]),
      {
        minItems: 1,
        description:
          'Event kinds this rule matches (gap: a recorded history gap; deleted: a hold removed by hand while its lease lived; foreign-grant: a hold written around the lock API, also matched by grant; waiver-expired / waiver-expiring: a class of a stored risk-register run; two-person: every act of a force-release or epoch-advance request — requested, approved, rejected, cancelled, refused —, two-person-refused: only the refused approvals, also matched by two-person; canary: the own grants of the platform canary — no other kind matches them — and a sink that subscribes is followed as a stage of the canary)',
      },
    ),
    namespaces: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: 'Only events of these lock namespaces. Default: any' })),
    classes: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: 'Only events of these lock classes. Default: any' })),
    purposes: Type.Optional(
      Type.Array(Type.Union([Type.Literal('correctness'), Type.Literal('efficiency')]), {
        description: 'Only events whose class has this purpose (e.g. every expiry of a correctness class). Default: any',
      }),
    ),
  },
  { additionalProperties: false },
);

const AlertWebhookSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,62}$', description: 'Names the sink in its checkpoint, dead letters and metrics' }),
    url: Type.String({ pattern: '^https?://', description: 'The endpoint: receives POSTs of JSON lines (or CEF lines)' }),
    secret: Type.String({
      minLength: 16,
      description: 'HMAC-SHA256 key: each delivery carries X-Lockaudit-Signature: t=<ms>,v1=<hex of HMAC(t + "." + body)>',
    }),
    format: Type.Optional(Type.Union([Type.Literal('ocsf'), Type.Literal('cef')], { description: 'ocsf (JSON lines, default) or cef (CEF lines)' })),
    rules: Type.Array(AlertRuleSchema, { minItems: 1, description: 'An event is delivered when any rule matches' }),
    batchSize: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10000, description: 'Events read and delivered per request, which bounds memory. Default 200' }),
    ),
    maxAttempts: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, description: 'Failed attempts before a batch goes to the dead-letter table. Default 20' }),
    ),
    backoffMaxMs: Type.Optional(
      Type.Integer({ minimum: 10, maximum: 600000, description: 'Longest wait between retries (exponential from 100 ms, jittered). Default 30000' }),
    ),
    pollIntervalMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 600000, description: 'Wait when caught up. Default 1000' })),
    timeoutMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 600000, description: 'Per request. Default 10000' })),
  },
  { additionalProperties: false },
);

export type AlertRule = Static<typeof AlertRuleSchema>;
export type AlertWebhookConfig = Static<typeof AlertWebhookSchema>;

const LocalSchema = Type.Object(
  {
    portBase: Type.Optional(
      Type.Integer({ minimum: 1024, maximum: 65000, default: 23000, description: 'First port of the local services block (etcd, Redis, MinIO).' }),
    ),
    etcdMembers: Type.Optional(
      Type.Union([Type.Literal(1), Type.Literal(3)], { default: 1, description: 'Local etcd: one member or a three-member cluster on loopback.' }),
    ),
  },
  { additionalProperties: false, default: {} },
);

export const FileConfigSchema = Type.Object(
  {
    dataDir: Type.Optional(
      Type.String({ minLength: 1, default: './.lockaudit', description: 'Where local data lives (embedded ClickHouse, service data, spools).' }),
    ),
    host: Type.Optional(Type.String({ minLength: 1, default: '127.0.0.1', description: 'API listen address.' })),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, default: 8080, description: 'API port.' })),
    shutdownTimeoutMs: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: 600_000,
        default: 20_000,
        description: 'How long a stopping process waits for its roles to drain before it exits non-zero, naming what did not.',
      }),
    ),
    logLevel: Type.Optional(LogLevelSchema),
    etcd: Type.Optional(Type.Array(EtcdClusterSchema, { minItems: 1, description: 'etcd clusters to serve and tail; absent means the local one.' })),
    clickhouse: Type.Optional(ClickHouseSchema),
    s3: Type.Optional(S3Schema),
    redisUrl: Type.Optional(Type.String({ pattern: '^rediss?://', description: 'Redis URL for the job queue; absent means the local Redis.' })),
    queuePrefix: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_:-]{1,64}$', default: 'lockaudit', description: 'BullMQ key prefix.' })),
    originSecret: Type.Optional(
      Type.String({
        minLength: 32,
        description:
          'Key of the proof of origin the lock API writes into each hold (HMAC-SHA256), checked by the tailer; every API and tailer process of a deployment needs the same one. Absent: generated once into <dataDir>/origin-secret (masked).',
      }),
    ),
    tailerSecret: Type.Optional(
      Type.String({
        minLength: 32,
        description:
          "Key of the tailer's own proofs (its /sys/clock writes, checkpoints, catch-up segments, restore gaps, quarantined rows; HMAC-SHA256), checked by the tailer, the worker and verify; give it to the tailer and worker processes, never the api. Absent: <dataDir>/tailer-secret, generated with a new deployment that does not set originSecret; a deployment from before the split, or one that sets originSecret alone, uses its origin secret, and says so at start (masked).",
      }),
    ),
    digestSigningKey: Type.Optional(
      Type.String({
        minLength: 40,
        description:
          'Ed25519 private key (PKCS#8 PEM, or its DER in base64) that signs the tamper-evident digests and compliance manifests. Absent: generated once into <dataDir>/digest-signing-key.pem (masked).',
      }),
    ),
    digestNextSigningKey: Type.Optional(
      Type.String({
        minLength: 40,
        description:
          'A rotation: the Ed25519 private key (PKCS#8) the digest worker hands signing over to, in its next digest, signed by both keys; then set it as the signing key and remove this. Absent: <dataDir>/digest-signing-key.next.pem when `lockaudit keys rotate` wrote one (masked).',
      }),
    ),
    digestPublicKey: Type.Optional(
      Type.String({
        minLength: 40,
        description:
          "The public half of the digest signing key (SPKI PEM), or every key's after a rotation, one PEM block after another, newest last: what the API publishes at GET /v1/digests/public-key, so an API process never needs the private key. Absent: the public half of the deployment's existing signing key (never generated by the API).",
      }),
    ),
    api: Type.Optional(ApiSchema),
    archive: Type.Optional(ArchiveSchema),
    digests: Type.Optional(DigestsSchema),
    alerts: Type.Optional(
      Type.Object(
        { webhooks: Type.Optional(Type.Array(AlertWebhookSchema, { description: 'Alert / SIEM sinks run by the worker role; absent means none.' })) },
        { additionalProperties: false, default: {} },
      ),
    ),
    tailer: Type.Optional(TailerSchema),
    reports: Type.Optional(ReportsSchema),
    local: Type.Optional(LocalSchema),
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
  { mode: 'embedded'; path: string; database: string } | { mode: 'server'; url: string; database: string; user?: string; password?: string; cluster?: string };

/** A section of the file schema with every setting present (defaults filled in). */
type Settled<T> = Required<NonNullable<T>>;

export type ApiSettings = Static<typeof ApiSchema> & {
  metricsRequireToken: boolean;
  exportDownloadSeconds: number;
  canaryIntervalSeconds: number;
  maxWaitersPerKey: number;
  maxWaiters: number;
  maxPendingRequests: number;
  maxPendingRequestsPerKey: number;
};
export type ArchiveSettings = Settled<Static<typeof ArchiveSchema>>;
export type DigestSettings = Settled<Static<typeof DigestsSchema>>;
export type TailerSettings = Settled<Static<typeof TailerSchema>>;
export type ReportSettings = Settled<Static<typeof ReportsSchema>>;
export type LogLevel = Static<typeof LogLevelSchema>;

/** The effective configuration: the file schema's settings with defaults filled in, plus what is derived from them. */
export interface Config extends Settled<Pick<FileConfig, 'dataDir' | 'host' | 'port' | 'shutdownTimeoutMs' | 'queuePrefix'>> {
  logLevel: LogLevel;
  /** undefined: the generated one in <dataDir>/origin-secret (core/originSecret.ts). */
  originSecret?: string;
  /** undefined: <dataDir>/tailer-secret, or the origin secret of a deployment from before it (core/tailerSecret.ts). */
  tailerSecret?: string;
  /** undefined: the generated one in <dataDir>/digest-signing-key.pem (core/digestKey.ts). */
  digestSigningKey?: string;
  /** A rotation's next key; undefined: <dataDir>/digest-signing-key.next.pem, if any (core/digestKey.ts nextDigestSigner). */
  digestNextSigningKey?: string;
  /** What the API publishes; undefined: the existing signing key's public half (core/digestKey.ts servedDigestPublicKey). */
  digestPublicKey?: string;
  digests: DigestSettings;
  etcd: { clusters: EtcdCluster[]; local: boolean };
  clickhouse: ClickHouseTarget;
  s3: Settled<Static<typeof S3Schema>> & { local: boolean };
  redis: { url: string; local: boolean };
  local: Settled<Static<typeof LocalSchema>> & { ports: LocalPorts };
  api: ApiSettings;
  archive: ArchiveSettings;
  alerts: { webhooks: AlertWebhookConfig[] };
  tailer: TailerSettings;
  reports: ReportSettings;
}

/** The settings the schema gives a default (the values are the schema's). */
interface SchemaDefaults {
  dataDir: string;
  host: string;
  port: number;
  shutdownTimeoutMs: number;
  logLevel: LogLevel;
  queuePrefix: string;
  clickhouse: { database: string };
  s3: { region: string; historyBucket: string; archiveBucket: string };
  tailer: TailerSettings;
  reports: ReportSettings;
  api: ApiSettings;
  archive: ArchiveSettings;
  digests: DigestSettings;
  local: Settled<Static<typeof LocalSchema>>;
}

/** Every default of the schema, for classes that can also be built without a Config (tests, benches). */
export const configDefaults = Value.Default(FileConfigSchema, {}) as SchemaDefaults;

/** Local MinIO credentials: used only for the project's own loopback server. */
export const LOCAL_S3_ACCESS_KEY = 'lockaudit';
export const LOCAL_S3_SECRET_KEY = 'lockaudit-local-secret';

type EnvParser = (raw: string, name: string) => unknown;
const asString: EnvParser = (raw) => raw;
const asBoolean: EnvParser = (raw, name) => {
  if (!/^(true|false)$/i.test(raw.trim())) throw new ConfigProblem(name, `must be true or false, got "${raw}"`);
  return raw.trim().toLowerCase() === 'true';
};
const asJson: EnvParser = (raw, name) => {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw new ConfigProblem(name, 'must be JSON (a list of webhook objects)');
  }
};
const asInteger: EnvParser = (raw, name) => {
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigProblem(name, `must be an integer, got "${raw}"`);
  return Number(raw.trim());
};

/** Environment variables and the config path each one sets (its meaning and default are the schema's). */
export const envVars: ReadonlyArray<{ name: string; path: readonly string[]; parse: EnvParser; secret?: boolean }> = [
  { name: 'LOCKAUDIT_DATA_DIR', path: ['dataDir'], parse: asString },
  { name: 'LOCKAUDIT_HOST', path: ['host'], parse: asString },
  { name: 'LOCKAUDIT_PORT', path: ['port'], parse: asInteger },
  { name: 'LOCKAUDIT_SHUTDOWN_TIMEOUT_MS', path: ['shutdownTimeoutMs'], parse: asInteger },
  { name: 'LOCKAUDIT_LOG_LEVEL', path: ['logLevel'], parse: asString },
  { name: 'LOCKAUDIT_ETCD', path: ['etcd'], parse: parseEtcdClusters },
  { name: 'LOCKAUDIT_CLICKHOUSE_URL', path: ['clickhouse', 'url'], parse: asString },
  { name: 'LOCKAUDIT_CLICKHOUSE_DATABASE', path: ['clickhouse', 'database'], parse: asString },
  { name: 'LOCKAUDIT_CLICKHOUSE_USER', path: ['clickhouse', 'user'], parse: asString },
  { name: 'LOCKAUDIT_CLICKHOUSE_PASSWORD', path: ['clickhouse', 'password'], parse: asString, secret: true },
  { name: 'LOCKAUDIT_CLICKHOUSE_CLUSTER', path: ['clickhouse', 'cluster'], parse: asString },
  { name: 'LOCKAUDIT_S3_ENDPOINT', path: ['s3', 'endpoint'], parse: asString },
  { name: 'LOCKAUDIT_S3_ACCESS_KEY', path: ['s3', 'accessKey'], parse: asString },
  { name: 'LOCKAUDIT_S3_SECRET_KEY', path: ['s3', 'secretKey'], parse: asString, secret: true },
  { name: 'LOCKAUDIT_S3_REGION', path: ['s3', 'region'], parse: asString },
  { name: 'LOCKAUDIT_S3_HISTORY_BUCKET', path: ['s3', 'historyBucket'], parse: asString },
  { name: 'LOCKAUDIT_S3_ARCHIVE_BUCKET', path: ['s3', 'archiveBucket'], parse: asString },
  { name: 'LOCKAUDIT_REDIS_URL', path: ['redisUrl'], parse: asString, secret: true },
  { name: 'LOCKAUDIT_ORIGIN_SECRET', path: ['originSecret'], parse: asString, secret: true },
  { name: 'LOCKAUDIT_TAILER_SECRET', path: ['tailerSecret'], parse: asString, secret: true },
  { name: 'LOCKAUDIT_CURSOR_SECRET', path: ['api', 'cursorSecret'], parse: asString, secret: true },
  { name: 'LOCKAUDIT_METRICS_REQUIRE_TOKEN', path: ['api', 'metricsRequireToken'], parse: asBoolean },
  { name: 'LOCKAUDIT_EXPORT_DOWNLOAD_SECONDS', path: ['api', 'exportDownloadSeconds'], parse: asInteger },
  { name: 'LOCKAUDIT_CANARY_INTERVAL_SECONDS', path: ['api', 'canaryIntervalSeconds'], parse: asInteger },
  { name: 'LOCKAUDIT_API_SHUTDOWN_DRAIN_MS', path: ['api', 'shutdownDrainMs'], parse: asInteger },
  { name: 'LOCKAUDIT_MAX_WAITERS_PER_KEY', path: ['api', 'maxWaitersPerKey'], parse: asInteger },
  { name: 'LOCKAUDIT_MAX_WAITERS', path: ['api', 'maxWaiters'], parse: asInteger },
  { name: 'LOCKAUDIT_MAX_PENDING_REQUESTS', path: ['api', 'maxPendingRequests'], parse: asInteger },
  { name: 'LOCKAUDIT_MAX_PENDING_REQUESTS_PER_KEY', path: ['api', 'maxPendingRequestsPerKey'], parse: asInteger },
  { name: 'LOCKAUDIT_ARCHIVE_ALARM_AFTER_SECONDS', path: ['archive', 'alarmAfterSeconds'], parse: asInteger },
  { name: 'LOCKAUDIT_ARCHIVE_POLL_INTERVAL_MS', path: ['archive', 'pollIntervalMs'], parse: asInteger },
  { name: 'LOCKAUDIT_DIGEST_SIGNING_KEY', path: ['digestSigningKey'], parse: asString, secret: true },
  { name: 'LOCKAUDIT_DIGEST_NEXT_SIGNING_KEY', path: ['digestNextSigningKey'], parse: asString, secret: true },
  { name: 'LOCKAUDIT_DIGEST_PUBLIC_KEY', path: ['digestPublicKey'], parse: asString },
  { name: 'LOCKAUDIT_DIGEST_PERIOD_SECONDS', path: ['digests', 'periodSeconds'], parse: asInteger },
  { name: 'LOCKAUDIT_DIGEST_SETTLE_SECONDS', path: ['digests', 'settleSeconds'], parse: asInteger },
  { name: 'LOCKAUDIT_DIGEST_POLL_INTERVAL_MS', path: ['digests', 'pollIntervalMs'], parse: asInteger },
  { name: 'LOCKAUDIT_DIGEST_LOOKBACK_PERIODS', path: ['digests', 'lookbackPeriods'], parse: asInteger },
  { name: 'LOCKAUDIT_DIGEST_ALARM_AFTER_PERIODS', path: ['digests', 'alarmAfterPeriods'], parse: asInteger },
  { name: 'LOCKAUDIT_DIGEST_CLOCK_TOLERANCE_SECONDS', path: ['digests', 'clockToleranceSeconds'], parse: asInteger },
  { name: 'LOCKAUDIT_ALERT_WEBHOOKS', path: ['alerts', 'webhooks'], parse: asJson, secret: true },
  { name: 'LOCKAUDIT_QUEUE_PREFIX', path: ['queuePrefix'], parse: asString },
  { name: 'LOCKAUDIT_TAILER_ELECTION_TTL_SECONDS', path: ['tailer', 'electionTtlSeconds'], parse: asInteger },
  { name: 'LOCKAUDIT_TAILER_COMPACTION_WINDOW_REVISIONS', path: ['tailer', 'compactionWindowRevisions'], parse: asInteger },
  { name: 'LOCKAUDIT_TAILER_CATCH_UP_WINDOWS', path: ['tailer', 'catchUpWindows'], parse: asInteger },
  { name: 'LOCKAUDIT_TAILER_BATCH_MAX_ROWS', path: ['tailer', 'batchMaxRows'], parse: asInteger },
  { name: 'LOCKAUDIT_TAILER_BATCH_MAX_DELAY_MS', path: ['tailer', 'batchMaxDelayMs'], parse: asInteger },
  { name: 'LOCKAUDIT_TAILER_CATCH_UP_BATCH_MAX_ROWS', path: ['tailer', 'catchUpBatchMaxRows'], parse: asInteger },
  { name: 'LOCKAUDIT_TAILER_CATCH_UP_BATCH_MAX_DELAY_MS', path: ['tailer', 'catchUpBatchMaxDelayMs'], parse: asInteger },
  { name: 'LOCKAUDIT_LOCAL_PORT_BASE', path: ['local', 'portBase'], parse: asInteger },
  { name: 'LOCKAUDIT_RISK_REGISTER_CRON', path: ['reports', 'riskRegisterCron'], parse: asString },
  { name: 'LOCKAUDIT_RISK_REGISTER_TZ', path: ['reports', 'riskRegisterTz'], parse: asString },
  { name: 'LOCKAUDIT_MAX_WINDOW_DAYS', path: ['reports', 'maxWindowDays'], parse: asInteger },
  { name: 'LOCKAUDIT_MAX_PAGE_SIZE', path: ['reports', 'maxPageSize'], parse: asInteger },
  { name: 'LOCKAUDIT_QUERY_TIMEOUT_MS', path: ['reports', 'queryTimeoutMs'], parse: asInteger },
  { name: 'LOCKAUDIT_RATE_LIMIT_PER_MINUTE', path: ['reports', 'rateLimitPerMinute'], parse: asInteger },
  { name: 'LOCKAUDIT_EXPORT_REQUESTS_PER_HOUR', path: ['reports', 'exportRequestsPerHour'], parse: asInteger },
  { name: 'LOCKAUDIT_EXPORT_MAX_ACTIVE', path: ['reports', 'exportMaxActive'], parse: asInteger },
  { name: 'LOCKAUDIT_EXPORT_MAX_RANGE_DAYS', path: ['reports', 'exportMaxRangeDays'], parse: asInteger },
  { name: 'LOCKAUDIT_LOCAL_ETCD_MEMBERS', path: ['local', 'etcdMembers'], parse: asInteger },
];

// LOCKAUDIT_ADMIN_TOKEN and LOCKAUDIT_API_TOKEN are credentials for the CLI's calls to a running API,
// LOCKAUDIT_URL where that API is (cli/apiClient.ts): not settings of the platform.
const NON_CONFIG_ENV = new Set(['LOCKAUDIT_CONFIG', 'LOCKAUDIT_ADMIN_TOKEN', 'LOCKAUDIT_API_TOKEN', 'LOCKAUDIT_URL']);

class ConfigProblem extends Error {
  constructor(
    readonly key: string,
    readonly problem: string,
  ) {
    super(`${key}: ${problem}`);
  }
}

/** Parses `name=url[,url…][;name=url…]`. */
export function parseEtcdClusters(raw: string, name = 'LOCKAUDIT_ETCD'): EtcdCluster[] {
  const clusters: EtcdCluster[] = [];
  for (const part of raw
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new ConfigProblem(name, `"${part}" is not name=url[,url…]`);
    const clusterName = part.slice(0, eq).trim();
    const endpoints = part
      .slice(eq + 1)
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
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
  if (problems.length === 0 && tz !== undefined && !isTimeZone(tz))
    problems.push(`${keyName('/reports/riskRegisterTz', envByPath)}: unknown time zone "${tz}"`);
  // A cron pattern is parsed by the parser the scheduler (BullMQ) uses: six fields of any text pass the pattern above.
  const cron = (raw as FileConfig).reports?.riskRegisterCron;
  if (problems.length === 0 && cron !== undefined) {
    try {
      CronExpressionParser.parse(cron, { tz: tz ?? 'UTC' });
    } catch (err) {
      problems.push(`${keyName('/reports/riskRegisterCron', envByPath)}: not a cron pattern "${cron}" (${(err as Error).message})`);
    }
  }
  // The signing key is parsed here too, so `lockaudit config` says it is unusable, not only the worker at start.
  const signingKey = (raw as FileConfig).digestSigningKey;
  const keyProblem = problems.length === 0 && signingKey ? digestSigningKeyProblem(signingKey) : undefined;
  if (keyProblem) problems.push(`${keyName('/digestSigningKey', envByPath)}: ${keyProblem}`);
  const nextKey = (raw as FileConfig).digestNextSigningKey;
  const nextProblem = problems.length === 0 && nextKey ? digestSigningKeyProblem(nextKey) : undefined;
  if (nextProblem) problems.push(`${keyName('/digestNextSigningKey', envByPath)}: ${nextProblem}`);
  const publicKey = (raw as FileConfig).digestPublicKey;
  const publicProblem = problems.length === 0 && publicKey ? digestPublicKeyProblem(publicKey, signingKey) : undefined;
  if (publicProblem) problems.push(`${keyName('/digestPublicKey', envByPath)}: ${publicProblem}`);
  const host = (raw as FileConfig).host;
  if (problems.length === 0 && host !== undefined && isIP(host) === 0 && !HOSTNAME.test(host)) {
    problems.push(`${keyName('/host', envByPath)}: "${host}" is neither an IP address nor a host name`);
  }
  const unique = [...new Set(problems)];
  if (unique.length > 0) {
    throw new LockauditError('LOCKAUDIT_ERR_CONFIG_INVALID', `invalid configuration:\n  - ${unique.join('\n  - ')}`, { details: unique });
  }
  return resolve(raw as FileConfig, cwd);
}

// Host names as resolvers take them: dot-separated labels of letters, digits, inner hyphens and underscores
// (RFC 1123 has no underscore, but /etc/hosts and container service names do).
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function describeUnion(instancePath: string): string {
  if (instancePath.endsWith('logLevel')) return `must be one of ${LogLevelSchema.anyOf.map((l) => l.const).join(', ')}`;
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

function resolve(input: FileConfig, cwd: string): Config {
  const file = Value.Default(FileConfigSchema, structuredClone(input)) as FileConfig & SchemaDefaults;
  const dataDir = path.resolve(cwd, file.dataDir);
  const { portBase, etcdMembers } = file.local;
  const ports = localPorts(portBase);
  const localEtcd = { name: 'local', endpoints: ports.etcdClient.slice(0, etcdMembers).map((p) => `http://127.0.0.1:${p}`) };
  const ch = file.clickhouse;
  const clickhouse: ClickHouseTarget = ch.url
    ? { mode: 'server', url: ch.url, database: ch.database, user: ch.user, password: ch.password, cluster: ch.cluster }
    : { mode: 'embedded', path: path.join(dataDir, 'clickhouse'), database: ch.database };
  const s3 = file.s3;
  return {
    dataDir,
    host: file.host,
    port: file.port,
    shutdownTimeoutMs: file.shutdownTimeoutMs,
    logLevel: file.logLevel,
    etcd: { clusters: file.etcd ?? [localEtcd], local: file.etcd === undefined },
    clickhouse,
    s3: {
      endpoint: s3.endpoint ?? `http://127.0.0.1:${ports.minio}`,
      accessKey: s3.accessKey ?? (s3.endpoint ? '' : LOCAL_S3_ACCESS_KEY),
      secretKey: s3.secretKey ?? (s3.endpoint ? '' : LOCAL_S3_SECRET_KEY),
      region: s3.region,
      historyBucket: s3.historyBucket,
      archiveBucket: s3.archiveBucket,
      local: s3.endpoint === undefined,
    },
    redis: { url: file.redisUrl ?? `redis://127.0.0.1:${ports.redis}`, local: file.redisUrl === undefined },
    queuePrefix: file.queuePrefix,
    local: { portBase, etcdMembers, ports },
    reports: file.reports,
    tailer: file.tailer,
    api: file.api,
    ...(file.originSecret ? { originSecret: file.originSecret } : {}),
    ...(file.tailerSecret ? { tailerSecret: file.tailerSecret } : {}),
    ...(file.digestSigningKey ? { digestSigningKey: file.digestSigningKey } : {}),
    ...(file.digestNextSigningKey ? { digestNextSigningKey: file.digestNextSigningKey } : {}),
    ...(file.digestPublicKey ? { digestPublicKey: file.digestPublicKey } : {}),
    digests: file.digests,
    archive: file.archive,
    alerts: { webhooks: file.alerts?.webhooks ?? [] },
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
  const api = copy.api as Record<string, unknown>;
  if (api.cursorSecret) api.cursorSecret = MASK;
  if (copy.originSecret) copy.originSecret = MASK;
  if (copy.tailerSecret) copy.tailerSecret = MASK;
  if (copy.digestSigningKey) copy.digestSigningKey = MASK;
  if (copy.digestNextSigningKey) copy.digestNextSigningKey = MASK;
  for (const w of (copy.alerts as { webhooks: Array<Record<string, unknown>> }).webhooks) w.secret = MASK;
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
