// The error catalog: every error the platform raises on purpose has a code,
// a default HTTP status and a one-line description. Codes are stable API.

export interface ErrorSpec {
  readonly status: number;
  readonly description: string;
}

export const errorCatalog = {
  LOCKAUDIT_ERR_CONFIG_INVALID: { status: 500, description: 'The configuration failed validation; each problem names its key.' },
  LOCKAUDIT_ERR_CONFIG_FILE: { status: 500, description: 'The YAML file named by LOCKAUDIT_CONFIG could not be read or parsed.' },
  LOCKAUDIT_ERR_MIGRATION_FAILED: { status: 500, description: 'A schema migration failed; the ledger records only migrations that completed.' },
  LOCKAUDIT_ERR_MIGRATION_CHANGED: { status: 500, description: 'An applied migration file was edited; migrations are append-only.' },
  LOCKAUDIT_ERR_SERVICES_BUILD: { status: 500, description: 'A local service binary could not be installed or built.' },
  LOCKAUDIT_ERR_SERVICES_START: { status: 500, description: 'A local service did not start or did not answer in time.' },
  LOCKAUDIT_ERR_STORE_BUSY: {
    status: 500,
    description:
      'Another running process (the platform) holds the embedded ClickHouse data dir, which one process opens at a time; stop it, or ask it through its API.',
  },
  LOCKAUDIT_ERR_DEPENDENCY_DOWN: {
    status: 500,
    description: 'A service a role needs (etcd, S3) does not answer at start; the error names it and what to do (lockaudit services up for the local ones).',
  },
  LOCKAUDIT_ERR_START_PORT_IN_USE: {
    status: 500,
    description: 'The API port is taken (another lockaudit start?); stop that process or choose LOCKAUDIT_PORT.',
  },
  LOCKAUDIT_ERR_SHUTDOWN_TIMEOUT: {
    status: 500,
    description: 'Stopping took longer than shutdownTimeoutMs; the process ended anyway (SIGKILL, status 137), naming what did not drain.',
  },
  LOCKAUDIT_ERR_AUTH_REQUIRED: { status: 401, description: 'The request carries no valid API token.' },
  LOCKAUDIT_ERR_AUTH_FORBIDDEN: { status: 403, description: 'The caller lacks a role this route requires.' },
  LOCKAUDIT_ERR_AUTH_SCOPE: {
    status: 403,
    description:
      "The caller's token is scoped to some namespaces or clusters, and the request names data outside them (or a route that does not serve scoped tokens).",
  },
  LOCKAUDIT_ERR_VALIDATION: { status: 400, description: 'The request failed validation; the message names the field.' },
  LOCKAUDIT_ERR_NOT_FOUND: { status: 404, description: 'The resource does not exist.' },
  LOCKAUDIT_ERR_INTERNAL: { status: 500, description: 'An unexpected error; details are in the server log, never in the response.' },
  LOCKAUDIT_ERR_TOKEN_INVALID: { status: 400, description: 'An API token request was malformed (identity or roles).' },
  LOCKAUDIT_ERR_LOCK_NOT_GRANTED: { status: 409, description: 'The lock was not granted within waitMs; someone else holds it.' },
  LOCKAUDIT_ERR_LOCK_ALREADY_HELD: {
    status: 409,
    description: 'This session already holds (or waits for) the key; re-entrant counting belongs to the client.',
  },
  LOCKAUDIT_ERR_LOCK_LEAK: { status: 409, description: 'The caller already holds the key under a different session: a leaked hold, not contention.' },
  LOCKAUDIT_ERR_LOCK_ABANDONED: {
    status: 408,
    description: 'The caller disconnected while its acquire waited; the wait ended and nothing was granted (no one reads this response).',
  },
  LOCKAUDIT_ERR_LOCK_NOT_HOLDER: {
    status: 409,
    description: 'The session and token do not match the current hold (it was released, expired or force-released).',
  },
  LOCKAUDIT_ERR_LOCK_NOT_HELD: { status: 404, description: 'Nobody holds the key.' },
  LOCKAUDIT_ERR_LOCK_SEALED: {
    status: 503,
    description:
      'etcd was restored or rewound (its cluster id differs from /sys/epoch, or its revisions or the grant guard fell below ones already seen): grants are refused until a two-person epoch advance.',
  },
  LOCKAUDIT_ERR_LOCK_HIGHWATER_UNKNOWN: {
    status: 503,
    description:
      "The highest token already issued on the cluster (the audit store's captured grants, read at start and after etcd was unreachable) could not be read: grants are refused until it is, so a token never goes below one already issued.",
  },
  LOCKAUDIT_ERR_LOCK_CLASS_MISMATCH: { status: 400, description: 'The key, session or class do not fit together (class namespace, session TTL).' },
  LOCKAUDIT_ERR_QUORUM_LOST: { status: 503, description: 'etcd has no reachable quorum; classes with onQuorumLoss closed get no grant.' },
  LOCKAUDIT_ERR_SPOOL_WRITE: {
    status: 503,
    description: 'A fail-open grant, or the release of one, could not be made durable in the local spool, so it was not granted (or not released).',
  },
  LOCKAUDIT_ERR_SESSION_NOT_FOUND: { status: 404, description: 'No live session with this id belongs to the caller (expired, closed or never created).' },
  LOCKAUDIT_ERR_CLASS_NOT_FOUND: { status: 404, description: 'No lock class with this name is registered.' },
  LOCKAUDIT_ERR_CLASS_INVALID: { status: 400, description: 'The lock class breaks a class rule; details name each broken rule.' },
  LOCKAUDIT_ERR_FORCE_NOT_FOUND: { status: 404, description: 'No pending force-release request with this id.' },
  LOCKAUDIT_ERR_FORCE_SELF_APPROVAL: { status: 403, description: 'A force-release must be approved by a different lock-operator than its requester.' },
  LOCKAUDIT_ERR_FORCE_STALE: { status: 409, description: 'The hold changed since the force-release was requested; request again.' },
  LOCKAUDIT_ERR_EPOCH_NOT_FOUND: { status: 404, description: 'No pending epoch-advance request with this id.' },
  LOCKAUDIT_ERR_EPOCH_SELF_APPROVAL: { status: 403, description: 'An epoch advance must be approved by a different person than its requester.' },
  LOCKAUDIT_ERR_EPOCH_STALE: { status: 409, description: 'The epoch record changed since the advance was requested; request again.' },
  LOCKAUDIT_ERR_CLASS_UNPROVEN: {
    status: 409,
    description:
      "The lock class in etcd does not carry the lock API's proof (put by hand, an older version put back, or written before proofs existed): nothing is granted under it.",
  },
  LOCKAUDIT_ERR_EPOCH_ADOPT_REFUSED: {
    status: 409,
    description:
      'An epoch adoption was refused: /sys/epoch is already proven, bound to another cluster, below an epoch already used, or etcd was seen rewound.',
  },
  LOCKAUDIT_ERR_REQUEST_UNPROVEN: {
    status: 409,
    description:
      "The pending two-person request does not carry the lock API's proof for what it says: edited in etcd or written around the API; refused and alarmed.",
  },
  LOCKAUDIT_ERR_REQUEST_CHANGED: {
    status: 409,
    description: "The approval names a requestHash that is not the pending request's: it is not the request the approver was shown.",
  },
  LOCKAUDIT_ERR_EPOCH_EXHAUSTED: {
    status: 409,
    description: 'The epoch is at the last one the 16 bits of a fencing token can carry; no advance can go past it.',
  },
  LOCKAUDIT_ERR_SIMULATE_SETUP: { status: 500, description: 'The simulator could not set up its workload (API, tokens, classes or outage).' },
  LOCKAUDIT_ERR_REPORT_CURSOR: { status: 400, description: 'The paging cursor is malformed, or was issued for other filters; start again without a cursor.' },
  LOCKAUDIT_ERR_REPORT_WINDOW: { status: 400, description: 'The report window is inverted or its timestamps are invalid.' },
  LOCKAUDIT_ERR_REPORT_NOT_FOUND: { status: 404, description: 'No report (risk register of that date, unprotected grant with that id) exists.' },
  LOCKAUDIT_ERR_LIMIT_WINDOW: { status: 400, description: 'The from–to window is longer than LOCKAUDIT_MAX_WINDOW_DAYS allows.' },
  LOCKAUDIT_ERR_LIMIT_PAGE_SIZE: { status: 400, description: 'The page size (limit) is larger than LOCKAUDIT_MAX_PAGE_SIZE allows.' },
  LOCKAUDIT_ERR_LIMIT_QUERY_TIMEOUT: {
    status: 400,
    description: 'The report query ran longer than LOCKAUDIT_QUERY_TIMEOUT_MS; narrow the window or the filters.',
  },
  LOCKAUDIT_ERR_LIMIT_RATE: {
    status: 429,
    description: 'The caller made more report requests than LOCKAUDIT_RATE_LIMIT_PER_MINUTE allows; retry after the Retry-After seconds.',
  },
  LOCKAUDIT_ERR_LIMIT_WAITERS: {
    status: 429,
    description: 'Too many acquires already wait for this lock (LOCKAUDIT_MAX_WAITERS_PER_KEY) or in this API process (LOCKAUDIT_MAX_WAITERS); retry later.',
  },
  LOCKAUDIT_ERR_LIMIT_REQUESTS: {
    status: 429,
    description:
      'Too many two-person requests (force-release or epoch advance) are pending, in all (LOCKAUDIT_MAX_PENDING_REQUESTS) or for this lock (LOCKAUDIT_MAX_PENDING_REQUESTS_PER_KEY); approve, reject or let some expire first.',
  },
  LOCKAUDIT_ERR_LIMIT_EXPORT_RATE: {
    status: 429,
    description: 'The caller requested more compliance exports than LOCKAUDIT_EXPORT_REQUESTS_PER_HOUR allows; retry after the Retry-After seconds.',
  },
  LOCKAUDIT_ERR_LIMIT_EXPORTS: {
    status: 429,
    description: 'The caller already has LOCKAUDIT_EXPORT_MAX_ACTIVE compliance exports queued or running; wait for one to finish.',
  },
  LOCKAUDIT_ERR_EXPORT_INVALID: {
    status: 400,
    description: 'An export request is malformed (range reversed or too long, unknown filter); the message names the field.',
  },
  LOCKAUDIT_ERR_EXPORT_NOT_FOUND: { status: 404, description: 'No export with this id.' },
  LOCKAUDIT_ERR_EXPORT_NOT_READY: { status: 409, description: 'The export has not completed (queued, running or failed); poll GET /v1/exports/:id.' },
  LOCKAUDIT_ERR_EXPORT_PARQUET: {
    status: 500,
    description: 'ClickHouse returned Parquet parts that cannot be joined into one file (schema differs or a part is damaged).',
  },
  LOCKAUDIT_ERR_EXPORT_ARROW: {
    status: 500,
    description: 'ClickHouse returned Arrow IPC chunks that cannot be joined into one stream (schema differs, a dictionary batch, or a chunk is damaged).',
  },
  LOCKAUDIT_ERR_EXPORT_INCOMPLETE: {
    status: 500,
    description: 'A written export or history file does not match what was expected (rows or sha256); it is not presented as complete.',
  },
  LOCKAUDIT_ERR_EXPORT_UNPROVEN: {
    status: 409,
    description:
      'The grants the export would hold disagree with the events they were derived from (the digests cover the events): a grant row altered, deleted, reopened or invented in ClickHouse. Nothing is written or signed; the message names the grants.',
  },
  LOCKAUDIT_ERR_EXPORT_QUEUE: { status: 503, description: 'The export job could not be queued (Redis unavailable).' },
  LOCKAUDIT_ERR_ARCHIVE_UNLOCKED: { status: 500, description: 'The force-release archive bucket has no object lock; records are not archived into it.' },
  LOCKAUDIT_ERR_ORIGIN_SECRET: {
    status: 500,
    description:
      'The origin secret (<dataDir>/origin-secret) is shorter than 32 bytes — empty, or cut short by a full disk — and is never taken as a key anyone could compute; or its file cannot be read, which is never taken as absent; or a role started on its own over a ClickHouse server has none to share with the other roles.',
  },
  LOCKAUDIT_ERR_DIGEST_KEY: {
    status: 500,
    description:
      'The digest signing key (LOCKAUDIT_DIGEST_SIGNING_KEY or <dataDir>/digest-signing-key.pem), or a public key given to verify, is not an Ed25519 key, or its file cannot be read (never taken as absent and replaced).',
  },
  LOCKAUDIT_ERR_DIGEST_KEY_MISSING: {
    status: 503,
    description:
      'No digest signing key exists yet to publish: the worker generates it at its first start, or LOCKAUDIT_DIGEST_PUBLIC_KEY gives the API its public half.',
  },
  LOCKAUDIT_ERR_ARCHIVE_CHAIN: { status: 500, description: 'archive verify found missing or altered force records; each problem is listed.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof errorCatalog;

export class LockauditError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: readonly string[];

  constructor(code: ErrorCode, message: string, options: { details?: readonly string[]; cause?: unknown; status?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LockauditError';
    this.code = code;
    this.status = options.status ?? errorCatalog[code].status;
    this.details = options.details ?? [];
  }
}

export function isLockauditError(err: unknown, code?: ErrorCode): err is LockauditError {
  return err instanceof LockauditError && (code === undefined || err.code === code);
}
