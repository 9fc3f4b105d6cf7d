// The etcd keyspace (docs/architecture.md, the lock service's rules): written by the lock API, read by the
// tailer. Both sides use only these functions, so the layout lives here once.
import Type, { type Static } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import { Value } from 'typebox/value';

export const PREFIX = {
  hold: '/l/',
  queue: '/q/',
  sys: '/sys/',
  epoch: '/sys/epoch',
  clock: '/sys/clock',
  class: '/sys/class/',
  force: '/sys/force/',
  mark: '/sys/mark/',
  election: '/sys/election/',
} as const;

/** The election of a cluster's tailers: its campaigns live under /sys/election/tailer.<cluster>/. */
export const tailerElectionName = (cluster: string): string => `tailer.${cluster}`;

/** The end of a prefix's key range (its last byte plus one): '/l/' → '/l0'. */
export const prefixEnd = (prefix: string): string => `${prefix.slice(0, -1)}${String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)}`;

/** The prefixes the tailer watches. */
export const WATCHED_PREFIXES = [PREFIX.hold, PREFIX.queue, PREFIX.sys] as const;

// A lock name is <namespace>/<path>: a namespace segment, then one or more path segments.
const SEGMENT = '[A-Za-z0-9][A-Za-z0-9._-]{0,127}';
/** A namespace: the first segment of a lock name. */
export const NAMESPACE_PATTERN = `^${SEGMENT}$`;
export const LOCK_NAME_PATTERN = `^${SEGMENT}(/${SEGMENT}){1,15}$`;
const LOCK_NAME = new RegExp(LOCK_NAME_PATTERN);
export const LOCK_NAME_MAX = 512;

/**
 * The platform's canary (roles/canary/): its locks live in this namespace, under this class, and are granted to
 * the canary alone (the lock API refuses the namespace to every caller), so a grant there is the canary's.
 */
export const CANARY_NAMESPACE = 'lockaudit-canary';
export const CANARY_CLASS = 'lockaudit-canary';
/** The identity the canary holds its locks as: its own rows are the lock API's, in its namespace, held by it. */
export const CANARY_HOLDER = 'lockaudit-canary';

export interface LockName {
  namespace: string;
  path: string;
}

/** Parses "ns/path/…"; undefined when it is not a valid lock name. */
export function parseLockName(name: string): LockName | undefined {
  if (name.length > LOCK_NAME_MAX || !LOCK_NAME.test(name)) return undefined;
  const slash = name.indexOf('/');
  return { namespace: name.slice(0, slash), path: name.slice(slash + 1) };
}

export const holdKey = (lock: string): string => `${PREFIX.hold}${lock}`;
export const queueKey = (lock: string, leaseId: string): string => `${PREFIX.queue}${lock}/${leaseId}`;
export const queuePrefix = (lock: string): string => `${PREFIX.queue}${lock}/`;
export const classKey = (name: string): string => `${PREFIX.class}${name}`;
export const forceKey = (id: string): string => `${PREFIX.force}${id}`;
/**
 * The lock API's owner record of a session, put on the session's own lease (outside the tailed prefixes). etcd
 * deletes every key of a lease in the one revision that expires it, so the tailer reads this record at a hold
 * delete's revision as proof that the lease outlived it (tailer/decode/leaseLiveness.ts).
 */
export const sessionRecordKey = (leaseId: string): string => `/lockaudit/session/${leaseId}`;
export const markKey = (id: string): string => `${PREFIX.mark}${id}`;

// ---- values -------------------------------------------------------------

const DecimalString = Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$' });

// Bounds that make every decoded number fit the audit columns (sql/001, 004),
// so a value anyone wrote under /l/ can never stop capture: the token keeps
// 16 bits for the epoch (epoch × 2^48 + R < 2^64), wall times are
// DateTime64(3) (up to 2299-12-31), waits stay exact JS integers.
export const EPOCH_MAX = 0xffff;
export const WALL_TIME_MAX_MS = Date.UTC(2299, 11, 31, 23, 59, 59, 999);
const Epoch = Type.Integer({ minimum: 0, maximum: EPOCH_MAX });
const WallTimeMs = Type.Integer({ minimum: 0, maximum: WALL_TIME_MAX_MS });
const Millis = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

// Bounds on the strings a hold or waiter carries (issue 42 item 1): the lock API writes a holder of at most 200
// characters (a token identity) and a class name of at most 64; a value beyond these is of no shape it writes, so
// it is quarantined with the field named (its value kept as core/valueBound.ts keeps one), never a grant whose 1 MiB
// holder fills every history page.
export const HOLDER_MAX_CHARS = 256;
export const CLASS_MAX_CHARS = 128;

export const HoldValueSchema = Type.Object({
  holder: Type.String({ minLength: 1, maxLength: HOLDER_MAX_CHARS }),
  session: DecimalString, // the holder's lease id
  class: Type.String({ minLength: 1, maxLength: CLASS_MAX_CHARS }),
  epoch: Epoch,
  waitMs: Millis,
  at: WallTimeMs, // grant wall time, ms since epoch
  /** Proof of origin: the API's keyed MAC over key, hold and session (core/proof.ts); absent on foreign writes. */
  mac: Type.Optional(Type.String({ maxLength: 512 })),
});
export type HoldValue = Static<typeof HoldValueSchema>;

export const QueueValueSchema = Type.Object({
  holder: Type.String({ minLength: 1, maxLength: HOLDER_MAX_CHARS }),
  session: DecimalString,
  class: Type.String({ minLength: 1, maxLength: CLASS_MAX_CHARS }),
  at: WallTimeMs,
});
export type QueueValue = Static<typeof QueueValueSchema>;

export const EpochValueSchema = Type.Object({
  epoch: Epoch,
  clusterId: DecimalString,
  /** The mod revision of the /sys/epoch value this one replaced ('0': it created the key); the writing txn compared it. */
  from: Type.Optional(DecimalString),
  /** The API's proof over epoch, clusterId and from (core/proof.ts); without a valid one grants stay sealed. */
  mac: Type.Optional(Type.String()),
});
export type EpochValue = Static<typeof EpochValueSchema>;

/** `mac`: the elected tailer's proof (core/proof.ts clockMac), bound to the put's create revision and version. */
export const ClockValueSchema = Type.Object({ at: WallTimeMs, mac: Type.Optional(Type.String({ maxLength: 64 })) });
export type ClockValue = Static<typeof ClockValueSchema>;

/**
 * The reason marker written in the same txn as an intentional delete.
 * `release`: one hold by its holder; `session-close`: every hold of `session`;
 * `epoch-advance`: every hold restored from a backup, deleted by the advance.
 */
export const MarkValueSchema = Type.Object({
  kind: Type.Union([Type.Literal('release'), Type.Literal('session-close'), Type.Literal('epoch-advance')]),
  by: Type.String({ minLength: 1 }),
  at: WallTimeMs,
  key: Type.Optional(Type.String()),
  session: Type.Optional(DecimalString),
  /** `release`: the grant revision (create revision) of the one hold it ends. */
  grant: Type.Optional(DecimalString),
  /** `epoch-advance`: the /sys/epoch mod revision the advance replaced. */
  from: Type.Optional(DecimalString),
  /** `epoch-advance`: sha256 (hex) of the two-person request it carries out. */
  request: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
  /** The API's keyed proof (core/proof.ts); a marker without a valid one explains nothing. */
  mac: Type.Optional(Type.String()),
});
export type MarkValue = Static<typeof MarkValueSchema>;

export const ForceRecordSchema = Type.Object({
  id: Type.String({ minLength: 1 }),
  key: Type.String({ minLength: 1 }), // the lock name
  holder: Type.String(),
  session: DecimalString,
  token: DecimalString,
  class: Type.String(),
  enforcement: Type.Union([Type.Literal('fenced'), Type.Literal('advisory')]),
  requester: Type.String({ minLength: 1 }),
  approver: Type.String({ minLength: 1 }),
  reason: Type.String({ minLength: 1 }),
  requestedAt: WallTimeMs,
  approvedAt: WallTimeMs,
  revokedSession: Type.Boolean(),
  /** sha256 (hex) of the two-person request this record carries out, as its approver was shown it. */
  requestHash: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
  /** The API's keyed proof over every field (core/proof.ts); a record without a valid one is forged. */
  mac: Type.Optional(Type.String()),
});
export type ForceRecord = Static<typeof ForceRecordSchema>;

export const LockClassSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,63}$' }),
    namespace: Type.String({ pattern: `^${SEGMENT}$` }),
    purpose: Type.Union([Type.Literal('correctness'), Type.Literal('efficiency')]),
    enforcement: Type.Union([Type.Literal('fenced'), Type.Literal('advisory')]),
    // Bounded (a class value stays far below what the store keeps whole, 64 KiB: reports parse it back).
    riskOwner: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    waiverExpires: Type.Optional(Type.String({ format: 'date' })),
    ttlSeconds: Type.Integer({ minimum: 5, maximum: 300, default: 15 }),
    tier: Type.Union([Type.Literal('coord'), Type.Literal('entity')]),
    onQuorumLoss: Type.Union([Type.Literal('closed'), Type.Literal('open')]),
    fairness: Type.Union([Type.Literal('memory'), Type.Literal('durable')]),
    pauseTest: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
  },
  { additionalProperties: false },
);
export type LockClass = Static<typeof LockClassSchema>;

/** A class as /sys/class/<name> holds it: the class and the API's proof (core/proof.ts), bound to the put. */
export const StoredClassSchema = Type.Object(
  {
    ...LockClassSchema.properties,
    // Read as written before the bounds above existed: a class stored then stays readable.
    riskOwner: Type.Optional(Type.String({ minLength: 1 })),
    pauseTest: Type.Optional(Type.String({ minLength: 1 })),
    mac: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type StoredClass = Static<typeof StoredClassSchema>;

/** The class rules (docs/architecture.md, the lock service's rules) beyond field shapes; returns every broken rule. */
export function classRuleViolations(c: LockClass): string[] {
  const broken: string[] = [];
  if (c.enforcement === 'advisory') {
    if (!c.riskOwner) broken.push('riskOwner: required when enforcement is advisory');
    if (!c.waiverExpires) broken.push('waiverExpires: required when enforcement is advisory');
    if (c.ttlSeconds < 30) broken.push('ttlSeconds: advisory classes need at least 30');
  }
  if (c.onQuorumLoss === 'open') {
    if (c.purpose !== 'efficiency') broken.push('onQuorumLoss: open is only for efficiency classes');
    if (c.enforcement === 'fenced') broken.push('onQuorumLoss: open is not allowed for fenced classes');
  }
  if (c.enforcement === 'fenced' && !c.pauseTest) broken.push('pauseTest: fenced classes need a reference to a passed pause test');
  return broken;
}

// Compiled once per schema: the interpreted Value.Check walks the schema each time — the tailer's
// largest single cost in catch-up (≈ 15 % of its main thread in a 60 000-revision profile) and a few %
// of the lock API's CPU. Errors (the rare path) still come from Value.Errors.
const validators = new WeakMap<Type.TSchema, Validator>();
function validatorOf(schema: Type.TSchema): Validator {
  let v = validators.get(schema);
  if (!v) validators.set(schema, (v = Compile(schema) as Validator));
  return v;
}

/** Decodes a JSON value against a schema; undefined (not an exception) when it does not fit. */
export function decodeValue<S extends Type.TSchema>(schema: S, text: string): Static<S> | undefined {
  const r = decodeChecked(schema, text);
  return r.ok ? r.value : undefined;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string };

/** Like decodeValue, but says why a value does not fit, naming the first offending field (e.g. "/epoch must be <= 65535"). */
export function decodeChecked<S extends Type.TSchema>(schema: S, text: string): Checked<Static<S>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (validatorOf(schema).Check(parsed)) return { ok: true, value: parsed as Static<S> };
  const first = Value.Errors(schema, parsed)[0];
  if (!first) return { ok: false, reason: 'does not fit the schema' };
  return { ok: false, reason: `${first.instancePath || '/'} ${first.message}` };
}

export type KeyKind =
  | { kind: 'hold'; lock: string; namespace: string; path: string }
  | { kind: 'queue'; lock: string; namespace: string; path: string; leaseId: string }
  | { kind: 'epoch' }
  | { kind: 'clock' }
  | { kind: 'class'; name: string }
  | { kind: 'force'; id: string }
  | { kind: 'mark'; id: string }
  | { kind: 'election' }
  | { kind: 'other' };

/** Classifies an etcd key of the lock keyspace. */
export function classifyKey(key: string): KeyKind {
  if (key.startsWith(PREFIX.hold)) {
    const lock = key.slice(PREFIX.hold.length);
    const name = parseLockName(lock);
    return name ? { kind: 'hold', lock, ...name } : { kind: 'other' };
  }
  if (key.startsWith(PREFIX.queue)) {
    const rest = key.slice(PREFIX.queue.length);
    const slash = rest.lastIndexOf('/');
    const lock = rest.slice(0, slash);
    const leaseId = rest.slice(slash + 1);
    const name = slash > 0 ? parseLockName(lock) : undefined;
    return name && /^\d+$/.test(leaseId) ? { kind: 'queue', lock, leaseId, ...name } : { kind: 'other' };
  }
  if (key === PREFIX.epoch) return { kind: 'epoch' };
  if (key === PREFIX.clock) return { kind: 'clock' };
  if (key.startsWith(PREFIX.class)) return { kind: 'class', name: key.slice(PREFIX.class.length) };
  if (key.startsWith(PREFIX.force)) return { kind: 'force', id: key.slice(PREFIX.force.length) };
  if (key.startsWith(PREFIX.mark)) return { kind: 'mark', id: key.slice(PREFIX.mark.length) };
  if (key.startsWith(PREFIX.election)) return { kind: 'election' };
  return { kind: 'other' };
}
