// API tokens: `la_<id>_<secret>`; only sha256(token) is stored. A token maps
// to an identity and roles (docs/architecture.md, the lock service's rules).
import { createHash, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { AuditStore } from './clickhouse.js';
import { CLUSTER_NAME_PATTERN } from './config.js';
import { LockauditError } from './errors.js';
import { NAMESPACE_PATTERN } from './keyspace.js';

export const ROLES = ['client', 'investigator', 'auditor', 'lock-operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a token may read of per-key data (issue 44): these namespaces and these etcd clusters. An empty list is
 * no bound on that side; a token without a scope (null) reads everything, as every token before scopes did.
 */
export interface TokenScope {
  namespaces: string[];
  clusters: string[];
}

export interface Identity {
  identity: string;
  roles: Role[];
  tokenId: string;
  /** null: every namespace of every cluster. */
  scope: TokenScope | null;
}

/** Namespaces or clusters one scope may name. */
export const MAX_SCOPE_ENTRIES = 100;

/**
 * Checks a scope as given (CLI flags, POST /v1/tokens); every problem names its field. Both lists empty is no
 * scope (null). An admin token reads and manages everything, so it cannot be scoped.
 */
export function checkScope(
  given: { namespaces?: string[]; clusters?: string[] },
  roles: Role[],
  field: (name: 'namespaces' | 'clusters') => string,
): TokenScope | null {
  const namespaces = [...new Set(given.namespaces ?? [])];
  const clusters = [...new Set(given.clusters ?? [])];
  const ns = new RegExp(NAMESPACE_PATTERN);
  const cl = new RegExp(CLUSTER_NAME_PATTERN);
  for (const [name, list, re] of [
    ['namespaces', namespaces, ns],
    ['clusters', clusters, cl],
  ] as const) {
    if (list.length > MAX_SCOPE_ENTRIES) throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', `${field(name)}: at most ${MAX_SCOPE_ENTRIES} entries`);
    const bad = list.find((x) => !re.test(x));
    if (bad !== undefined) throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', `${field(name)}: "${bad.slice(0, 40)}" does not match ${re.source}`);
  }
  if (namespaces.length === 0 && clusters.length === 0) return null;
  if (roles.includes('admin'))
    throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', `${field('namespaces')}: an admin token cannot be scoped (it manages every token)`);
  return { namespaces: namespaces.sort(), clusters: clusters.sort() };
}

/** The scope as stored (empty arrays: none). */
function scopeOf(namespaces: readonly string[] | undefined, clusters: readonly string[] | undefined): TokenScope | null {
  const n = [...(namespaces ?? [])];
  const c = [...(clusters ?? [])];
  return n.length === 0 && c.length === 0 ? null : { namespaces: n, clusters: c };
}

// SPIFFE-style or plain names: letters, digits and ./:_@- ; no spaces or control characters.
const IDENTITY = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$/;
const TOKEN = /^la_([a-f0-9]{12})_([A-Za-z0-9_-]{43})$/;

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function parseRoles(text: string): Role[] {
  const roles = text
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  if (roles.length === 0) throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', `roles: give at least one of ${ROLES.join(', ')}`);
  const unknown = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
  if (unknown.length > 0)
    throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', `roles: unknown role ${unknown.map((r) => `"${r}"`).join(', ')} (known: ${ROLES.join(', ')})`);
  return [...new Set(roles)] as Role[];
}

/** What `token list` and GET /v1/tokens show of a token: never the token or its hash. */
export interface TokenInfo {
  tokenId: string;
  identity: string;
  roles: Role[];
  issuedAt: string;
  issuedBy: string;
  expiresAt: string | null;
  revoked: boolean;
  revokedAt: string | null;
  lastUsedAt: string | null;
  /** What it may read (null: everything). */
  scope: TokenScope | null;
}

/** Longest expiry accepted: ten years. */
export const MAX_EXPIRES_IN_SECONDS = 10 * 366 * 86_400;

/** Reads `--expires-in`: 3600s, 30m, 12h, 90d (or plain seconds). */
export function parseExpiresIn(text: string): number {
  const m = /^([1-9][0-9]{0,9})([smhd]?)$/.exec(text.trim());
  const unit = { '': 1, s: 1, m: 60, h: 3_600, d: 86_400 }[m?.[2] ?? ''] ?? 1;
  const seconds = m ? Number(m[1]) * unit : NaN;
  if (!Number.isSafeInteger(seconds) || seconds > MAX_EXPIRES_IN_SECONDS) {
    throw new LockauditError(
      'LOCKAUDIT_ERR_TOKEN_INVALID',
      `expires-in: give a duration such as 3600s, 30m, 12h or 90d, at most ${MAX_EXPIRES_IN_SECONDS / 86_400} days`,
    );
  }
  return seconds;
}

async function audit(
  store: AuditStore,
  action: 'create' | 'revoke' | 'use',
  tokenId: string,
  identity: string,
  actor: string,
  detail: Record<string, unknown> = {},
): Promise<void> {
  await store.insert('token_audit', [{ action, token_id: tokenId, identity, actor, detail: JSON.stringify(detail) }]);
}

export async function createApiToken(
  store: AuditStore,
  identity: string,
  roles: Role[],
  options: { expiresInSeconds?: number; issuedBy?: string; nowMs?: number; scope?: TokenScope | null } = {},
): Promise<{ token: string; tokenId: string; expiresAt: string | null; scope: TokenScope | null }> {
  if (!IDENTITY.test(identity))
    throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', 'identity: 1-200 characters: letters, digits and . _ : / @ -, starting with a letter or digit');
  if (roles.length === 0) throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', 'roles: give at least one role');
  const now = options.nowMs ?? Date.now();
  const expiresAtMs = options.expiresInSeconds === undefined ? 0 : now + options.expiresInSeconds * 1000;
  const tokenId = randomBytes(6).toString('hex');
  const token = `la_${tokenId}_${randomBytes(32).toString('base64url')}`;
  const issuedBy = options.issuedBy ?? 'cli';
  const scope = options.scope ? checkScope(options.scope, roles, (n) => n) : null;
  await store.insert('api_tokens', [
    {
      token_hash: hashToken(token),
      token_id: tokenId,
      identity,
      roles,
      revoked: 0,
      expires_at_ms: expiresAtMs,
      issued_at_ms: now,
      issued_by: issuedBy,
      scope_namespaces: scope?.namespaces ?? [],
      scope_clusters: scope?.clusters ?? [],
    },
  ]);
  await audit(store, 'create', tokenId, identity, issuedBy, { roles, expiresAtMs, ...(scope ? { scope } : {}) });
  return { token, tokenId, expiresAt: expiresAtMs ? new Date(expiresAtMs).toISOString() : null, scope };
}

interface TokenRow {
  token_hash: string;
  token_id: string;
  identity: string;
  roles: string[];
  revoked: number;
  created_at: string;
  expires_at_ms: string;
  issued_at_ms: string;
  issued_by: string;
  last_used_ms: string | null;
  scope_namespaces: string[];
  scope_clusters: string[];
}

const LIST_SQL = `SELECT t.token_hash, t.token_id, t.identity, t.roles, t.revoked, toUnixTimestamp64Milli(t.created_at) AS created_at, t.expires_at_ms, t.issued_at_ms, t.issued_by, u.last_used_ms, t.scope_namespaces, t.scope_clusters
FROM {db:Identifier}.api_tokens AS t FINAL
LEFT JOIN (SELECT token_id, toUnixTimestamp64Milli(max(at)) AS last_used_ms FROM {db:Identifier}.token_audit WHERE action = 'use' GROUP BY token_id) AS u ON u.token_id = t.token_id
WHERE {tokenId:String} = '' OR t.token_id = {tokenId:String}
ORDER BY t.issued_at_ms, t.token_id`;

const iso = (ms: string | number | null | undefined): string | null =>
  ms === null || ms === undefined || Number(ms) <= 0 ? null : new Date(Number(ms)).toISOString();

function info(r: TokenRow): TokenInfo {
  const revoked = Number(r.revoked) === 1;
  return {
    tokenId: r.token_id,
    identity: r.identity,
    roles: r.roles as Role[],
    issuedAt: iso(r.issued_at_ms) ?? '',
    issuedBy: r.issued_by,
    expiresAt: iso(r.expires_at_ms),
    revoked,
    revokedAt: revoked ? iso(r.created_at) : null,
    lastUsedAt: iso(r.last_used_ms),
    scope: scopeOf(r.scope_namespaces, r.scope_clusters),
  };
}

/** Every token (or one), oldest first, with its last use. */
export async function listApiTokens(store: AuditStore, tokenId = ''): Promise<TokenInfo[]> {
  return (await store.rows<TokenRow>(LIST_SQL, { tokenId })).map(info);
}

/**
 * Revokes a token by its public id; undefined when there is none. Every
 * process refuses it once its cache entry ends (TOKEN_CACHE_TTL_MS).
 */
export async function revokeApiToken(store: AuditStore, tokenId: string, by: string): Promise<TokenInfo | undefined> {
  const row = (await store.rows<TokenRow>(LIST_SQL, { tokenId }))[0];
  if (!row) return undefined;
  if (Number(row.revoked) === 0) {
    // A newer row replaces the old one (ReplacingMergeTree on created_at): created_at becomes the revocation time.
    await store.insert('api_tokens', [
      {
        token_hash: row.token_hash,
        token_id: row.token_id,
        identity: row.identity,
        roles: row.roles,
        revoked: 1,
        expires_at_ms: row.expires_at_ms,
        issued_at_ms: row.issued_at_ms,
        issued_by: row.issued_by,
        scope_namespaces: row.scope_namespaces,
        scope_clusters: row.scope_clusters,
      },
    ]);
    await audit(store, 'revoke', row.token_id, row.identity, by);
  }
  return (await listApiTokens(store, tokenId))[0];
}

/** Tokens remembered per process; beyond it the least recently used is looked up again. */
export const TOKEN_CACHE_MAX = 10_000;
/** How long a lookup is trusted: a revoked token is refused by every process within this (well under 5 s). */
export const TOKEN_CACHE_TTL_MS = 4_000;
/** A token's use is recorded at most this often per process: "last used" to the minute, not a row per request. */
const USE_RECORD_EVERY_MS = 60_000;

interface Known extends Identity {
  expiresAtMs: number;
}

/** Looks a presented token up; undefined for malformed, unknown or revoked tokens alike. */
export class ApiTokenVerifier {
  readonly #store: AuditStore;
  // Known tokens and unknown ones in separate bounded LRU maps: a flood of
  // random tokens churns only the second, and never costs a legitimate
  // caller its cached entry (and a ClickHouse lookup per request).
  readonly #known: LRUCache<string, Known>;
  readonly #unknown: LRUCache<string, true>;
  readonly #usesRecorded: LRUCache<string, true>;
  readonly #now: () => number;

  constructor(store: AuditStore, options: { cacheTtlMs?: number; cacheMax?: number; now?: () => number } = {}) {
    this.#store = store;
    const ttl = Math.min(options.cacheTtlMs ?? TOKEN_CACHE_TTL_MS, TOKEN_CACHE_TTL_MS);
    const max = options.cacheMax ?? TOKEN_CACHE_MAX;
    this.#now = options.now ?? Date.now;
    const clock = options.now ? { perf: { now: options.now }, ttlResolution: 0 } : {};
    this.#known = new LRUCache({ max, ttl, ...clock });
    this.#unknown = new LRUCache({ max, ttl, ...clock });
    this.#usesRecorded = new LRUCache({ max, ttl: USE_RECORD_EVERY_MS, ...clock });
  }

  async verify(token: string): Promise<Identity | undefined> {
    if (!TOKEN.test(token)) return undefined;
    const hash = hashToken(token);
    let known = this.#known.get(hash);
    if (!known) {
      if (this.#unknown.get(hash)) return undefined;
      const rows = await this.#store.rows<{
        identity: string;
        roles: string[];
        token_id: string;
        revoked: number;
        expires_at_ms: string;
        scope_namespaces: string[];
        scope_clusters: string[];
      }>(
        'SELECT identity, roles, token_id, revoked, expires_at_ms, scope_namespaces, scope_clusters FROM {db:Identifier}.api_tokens FINAL WHERE token_hash = {hash:String}',
        { hash },
      );
      const row = rows[0];
      if (!row || Number(row.revoked) !== 0) {
        this.#unknown.set(hash, true);
        return undefined;
      }
      known = {
        identity: row.identity,
        roles: row.roles as Role[],
        tokenId: row.token_id,
        expiresAtMs: Number(row.expires_at_ms ?? 0),
        scope: scopeOf(row.scope_namespaces, row.scope_clusters),
      };
      this.#known.set(hash, known);
    }
    if (known.expiresAtMs > 0 && this.#now() >= known.expiresAtMs) return undefined;
    await this.#recordUse(known);
    return { identity: known.identity, roles: known.roles, tokenId: known.tokenId, scope: known.scope };
  }

  async #recordUse(who: Known): Promise<void> {
    if (this.#usesRecorded.get(who.tokenId)) return;
    this.#usesRecorded.set(who.tokenId, true);
    // Best effort: an audit store that cannot take the row must not refuse the caller; the next minute tries again.
    await audit(this.#store, 'use', who.tokenId, who.identity, who.identity).catch(() => this.#usesRecorded.delete(who.tokenId));
  }
}
