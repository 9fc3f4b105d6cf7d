// The grant filter: one definition of "which grants" for every view of grant
// history — the API's pages (JSON, CSV, Arrow), the key timeline's lanes and
// the exports (compliance, CLI, the daily Parquet history). Here: the filters'
// schemas (what the API and the exports accept), their reading of text input,
// and the parameters the SQL half binds. The SQL half is filterPrewhere.sql and
// filterWhere.sql beside this file, included by every grant query with
// `-- @include` (test/unit/sqlFiles.test.ts checks that each one does).
import Type, { type Static } from 'typebox';
import { Value } from 'typebox/value';
import { END_KINDS } from '../core/events.js';
import { LockauditError } from '../core/errors.js';
import { parseToken } from '../core/token.js';
import { namesCanary, scopeParams, type CanaryRows, type ReadScope } from './scope.js';
import { ClassName, ClusterName, Decimal64, Holder, KeyPrefix, LockName, Namespace } from './schemas.js';

/** The two SQL fragments every grant query includes. */
export const GRANT_FILTER_SQL = ['grants/filterPrewhere.sql', 'grants/filterWhere.sql'] as const;

/** endKind filter values: how a grant ended, or `held` (not ended). */
export const END_KIND_FILTERS = [...END_KINDS, 'held'] as const;

export const ORIGINS = ['api', 'foreign'] as const;

/** Each filter's schema: the same for the API's query string and an export's body or flags. */
export const GRANT_FILTER_SCHEMAS = {
  cluster: ClusterName({ description: 'Only this etcd cluster' }),
  key: LockName(),
  keyPrefix: KeyPrefix(),
  holder: Holder(),
  class: ClassName(),
  namespace: Namespace(),
  token: Decimal64({ description: 'Which grant held this fencing token? (decimal string; tokens exceed 2^53)' }),
  endKind: Type.Enum(END_KIND_FILTERS, { type: 'string', description: 'Only grants that ended this way (held: still held)' }),
  origin: Type.Enum(ORIGINS, {
    type: 'string',
    description: 'api: granted by the lock API (valid proof of origin); foreign: written straight into etcd, bypassing it',
  }),
};

export type GrantFilterName = keyof typeof GRANT_FILTER_SCHEMAS;
export const GRANT_FILTER_NAMES = Object.keys(GRANT_FILTER_SCHEMAS) as GrantFilterName[];

/** The filters as schema properties, each optional: spread into a route's query or body schema. */
export const grantFilterProperties = () =>
  Object.fromEntries(GRANT_FILTER_NAMES.map((n) => [n, Type.Optional(GRANT_FILTER_SCHEMAS[n])])) as {
    [K in GrantFilterName]: ReturnType<typeof Type.Optional<(typeof GRANT_FILTER_SCHEMAS)[K]>>;
  };

export type GrantFilters = { [K in GrantFilterName]?: Static<(typeof GRANT_FILTER_SCHEMAS)[K]> };

/**
 * Which grants a window selects. overlapping: every grant whose hold overlaps
 * [from, to] (the API's grant history: what was held then). granted: grants
 * granted in [from, to) (exports and the daily history: ranges that do not
 * overlap never share a grant, so consecutive exports hold each grant once).
 */
export type WindowRule = 'overlapping' | 'granted';

export interface GrantWindow {
  fromMs: number;
  toMs: number;
  rule: WindowRule;
}

/**
 * Reads filters given as text (an export body, CLI flags); every problem
 * names its field through `field`. Unknown names and empty values are problems.
 */
export function readGrantFilters(input: Record<string, string | undefined>, field: (name: string) => string, problems: string[]): GrantFilters {
  const filters: Record<string, string> = {};
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (!(GRANT_FILTER_NAMES as string[]).includes(name)) {
      problems.push(`${field(name)}: is not a known filter (${GRANT_FILTER_NAMES.join(', ')})`);
      continue;
    }
    const schema = GRANT_FILTER_SCHEMAS[name as GrantFilterName] as { pattern?: string; maxLength?: number; enum?: readonly string[] };
    if (value === '') problems.push(`${field(name)}: must not be empty`);
    else if (name === 'token' && parseToken(value) === undefined) problems.push(`${field(name)}: must be a decimal 64-bit token`);
    else if (!Value.Check(GRANT_FILTER_SCHEMAS[name as GrantFilterName], value)) {
      problems.push(
        schema.enum
          ? `${field(name)}: must be one of ${schema.enum.join(', ')}`
          : `${field(name)}: must match ${schema.pattern ?? '.'} (at most ${schema.maxLength ?? 512} characters)`,
      );
    } else filters[name] = value;
  }
  return filters as GrantFilters;
}

/**
 * The parameters grants/filter*.sql bind, the reader's scope included (scope.ts: null reads everything; every
 * caller says which). A token at or above 2^64 is a 400 naming `tokenField`.
 */
export function grantFilterParams(
  filters: GrantFilters,
  window: GrantWindow,
  scope: ReadScope,
  tokenField = 'querystring.token',
  canary: CanaryRows | 'when-named' = 'when-named',
): Record<string, string | number | string[]> {
  const token = filters.token === undefined ? undefined : parseToken(filters.token);
  if (filters.token !== undefined && token === undefined) throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', `${tokenField}: must be below 2^64`);
  return {
    cluster: filters.cluster ?? '',
    key: filters.key ?? '',
    keyPrefix: filters.keyPrefix ?? '',
    holder: filters.holder ?? '',
    class: filters.class ?? '',
    namespace: filters.namespace ?? '',
    hasToken: token === undefined ? 0 : 1,
    token: (token ?? 0n).toString(),
    origin: filters.origin ?? '',
    endKind: filters.endKind ?? '',
    window: window.rule,
    fromMs: window.fromMs,
    toMs: window.toMs,
    ...scopeParams(scope, canary === 'include' || (canary === 'when-named' && namesCanary(filters)) ? 'include' : 'exclude'),
  };
}

/** The filters alone (no window, paging or format) picked from a wider object, e.g. a request's query. */
export function pickGrantFilters(p: Partial<Record<GrantFilterName, unknown>>): GrantFilters {
  return Object.fromEntries(GRANT_FILTER_NAMES.filter((n) => p[n] !== undefined).map((n) => [n, p[n]])) as GrantFilters;
}
