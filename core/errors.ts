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
  LOCKAUDIT_ERR_AUTH_REQUIRED: { status: 401, description: 'The request carries no valid API token.' },
  LOCKAUDIT_ERR_AUTH_FORBIDDEN: { status: 403, description: 'The caller lacks a role this route requires.' },
  LOCKAUDIT_ERR_VALIDATION: { status: 400, description: 'The request failed validation; the message names the field.' },
  LOCKAUDIT_ERR_NOT_FOUND: { status: 404, description: 'The resource does not exist.' },
  LOCKAUDIT_ERR_INTERNAL: { status: 500, description: 'An unexpected error; details are in the server log, never in the response.' },
  LOCKAUDIT_ERR_TOKEN_INVALID: { status: 400, description: 'An API token request was malformed (identity or roles).' },
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
