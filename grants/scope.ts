// A reader's scope over grant history (issue 44): a token scoped to some
// namespaces or etcd clusters reads only their grants. Two halves: the check
// of what a request names — a namespace, key, key prefix or cluster outside
// the scope is a 403 naming the field and the scope, never an empty page that
// looks like "nothing happened" — and the bound every grant query applies on
// top of its filters (filterPrewhere.sql, filterEvents.sql: scopeNamespaces,
// scopeClusters). A request that pins nothing (no namespace, a prefix shorter
// than a namespace) is narrowed to the scope, and says so.
import Type from 'typebox';
import type { TokenScope } from '../core/apiTokens.js';
import { LockauditError } from '../core/errors.js';
import { CANARY_HOLDER, CANARY_NAMESPACE, parseLockName, PREFIX } from '../core/keyspace.js';

/** What of a request's filters a scope bounds (filter.ts GrantFilters has them, with the same names). */
export interface ScopedFilters {
  cluster?: string;
  namespace?: string;
  key?: string;
  keyPrefix?: string;
}

/** Who reads: a token's scope, or null — every namespace of every cluster (an unscoped token, the platform's own jobs). */
export type ReadScope = TokenScope | null;

/** What a scoped read was narrowed to, when the request did not pin it inside the scope itself. */
export interface Narrowed {
  namespaces: string[];
  clusters: string[];
}

/** `narrowedTo` of every answer a scoped reader's request was narrowed in. */
export const NarrowedSchema = Type.Object(
  {
    namespaces: Type.Array(Type.String(), { description: 'The namespaces read (empty: the request itself pinned one inside the scope)' }),
    clusters: Type.Array(Type.String(), { description: 'The clusters read (empty: the request itself pinned one inside the scope)' }),
  },
  {
    description:
      "Present when the caller's token is scoped and the request (no namespace, or a key prefix shorter than a namespace) was narrowed to the scope: these grants are the scope's part only",
  },
);

/** Whether a read holds the platform's canary grants: a report never does (`exclude`); the record does (`include`). */
export type CanaryRows = 'exclude' | 'include';

/** The parameters scopeBound.sql (so filterPrewhere.sql and filterEvents.sql) binds for `scope` (empty lists: no bound). */
export function scopeParams(
  scope: ReadScope,
  canary: CanaryRows = 'exclude',
): { scopeNamespaces: string[]; scopeClusters: string[]; canaryNamespace: string; canaryHolder: string; withCanary: number } {
  return {
    scopeNamespaces: scope?.namespaces ?? [],
    scopeClusters: scope?.clusters ?? [],
    canaryNamespace: CANARY_NAMESPACE,
    canaryHolder: CANARY_HOLDER,
    withCanary: canary === 'include' ? 1 : 0,
  };
}

/** The parameters of the scope's bound on rows with a key and no namespace column (keyNamespaceBound.sql), and its cluster bound. */
export function keyScopeParams(scope: ReadScope): { scopeNamespaces: string[]; scopeClusters: string[]; holdPrefix: string; queuePrefix: string } {
  return { scopeNamespaces: scope?.namespaces ?? [], scopeClusters: scope?.clusters ?? [], holdPrefix: PREFIX.hold, queuePrefix: PREFIX.queue };
}

/** Whether a grant filter names the canary (its namespace, a key or a key prefix in it): grant history then shows its grants. */
export function namesCanary(filters: ScopedFilters): boolean {
  const inCanary = (k: string | undefined): boolean => k !== undefined && k.startsWith(`${CANARY_NAMESPACE}/`);
  return filters.namespace === CANARY_NAMESPACE || inCanary(filters.key) || inCanary(filters.keyPrefix);
}

/** The scope as a caller reads it. */
export function scopeText(scope: TokenScope): string {
  const parts = [
    scope.namespaces.length ? `namespaces ${scope.namespaces.join(', ')}` : '',
    scope.clusters.length ? `clusters ${scope.clusters.join(', ')}` : '',
  ];
  return parts.filter(Boolean).join(' and ');
}

/** Whether `cluster` is one a reader may read: every one, or a cluster-scoped token's own. */
export function clusterInScope(scope: ReadScope, cluster: string): boolean {
  return !scope || scope.clusters.length === 0 || scope.clusters.includes(cluster);
}

/**
 * Whether a reader may see what was made under `made` (an export): an unscoped reader sees everything; a scoped
 * one only what was made under a scope inside its own — never an unscoped export, which holds every namespace.
 */
export function scopeCovers(reader: ReadScope, made: ReadScope): boolean {
  if (!reader) return true;
  if (!made) return false;
  const within = (mine: string[], theirs: string[]): boolean => mine.length === 0 || (theirs.length > 0 && theirs.every((x) => mine.includes(x)));
  return within(reader.namespaces, made.namespaces) && within(reader.clusters, made.clusters);
}

function outside(field: string, what: string, scope: TokenScope): LockauditError {
  return new LockauditError('LOCKAUDIT_ERR_AUTH_SCOPE', `${field}: ${what} is outside this token's scope (it reads only ${scopeText(scope)})`);
}

/** The namespace a key prefix pins ("payments/acct" pins payments), or undefined when it is still inside the first segment. */
function prefixNamespace(prefix: string): string | undefined {
  const slash = prefix.indexOf('/');
  return slash > 0 ? prefix.slice(0, slash) : undefined;
}

/**
 * Checks what a request names against the caller's scope; `field` names a filter as the request gave it
 * (`querystring.namespace`). Throws LOCKAUDIT_ERR_AUTH_SCOPE for a namespace, key, key prefix or cluster outside
 * the scope. Returns what the read is narrowed to when the request pins no namespace (or no cluster) inside it,
 * else null.
 */
export function scopeRead(scope: ReadScope, filters: ScopedFilters, field: (name: keyof ScopedFilters) => string): Narrowed | null {
  if (!scope) return null;
  let narrowNamespaces = false;
  let narrowClusters = false;
  if (scope.clusters.length > 0) {
    if (filters.cluster !== undefined) {
      if (!scope.clusters.includes(filters.cluster)) throw outside(field('cluster'), `cluster ${filters.cluster}`, scope);
    } else narrowClusters = true;
  }
  if (scope.namespaces.length > 0) {
    const named: [keyof ScopedFilters, string | undefined][] = [
      ['namespace', filters.namespace],
      ['key', filters.key === undefined ? undefined : (parseLockName(filters.key)?.namespace ?? filters.key)],
      ['keyPrefix', filters.keyPrefix === undefined ? undefined : prefixNamespace(filters.keyPrefix)],
    ];
    let pinned = false;
    for (const [name, ns] of named) {
      if (ns === undefined) continue;
      if (!scope.namespaces.includes(ns)) throw outside(field(name), `namespace ${ns}`, scope);
      pinned = true;
    }
    narrowNamespaces = !pinned;
  }
  if (!narrowNamespaces && !narrowClusters) return null;
  return { namespaces: narrowNamespaces ? scope.namespaces : [], clusters: narrowClusters ? scope.clusters : [] };
}
