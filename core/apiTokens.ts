// API tokens: `la_<id>_<secret>`; only sha256(token) is stored. A token maps
// to an identity and roles (DESIGN.md §6).
import { createHash, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { AuditStore } from './clickhouse.js';
import { LockauditError } from './errors.js';

export const ROLES = ['client', 'investigator', 'auditor', 'lock-operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export interface Identity {
  identity: string;
  roles: Role[];
  tokenId: string;
}

// SPIFFE-style or plain names: letters, digits and ./:_@- ; no spaces or control characters.
const IDENTITY = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$/;
const TOKEN = /^la_([a-f0-9]{12})_([A-Za-z0-9_-]{43})$/;

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function parseRoles(text: string): Role[] {
  const roles = text.split(',').map((r) => r.trim()).filter(Boolean);
  if (roles.length === 0) throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', `roles: give at least one of ${ROLES.join(', ')}`);
  const unknown = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
  if (unknown.length > 0) throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', `roles: unknown role ${unknown.map((r) => `"${r}"`).join(', ')} (known: ${ROLES.join(', ')})`);
  return [...new Set(roles)] as Role[];
}

export async function createApiToken(store: AuditStore, identity: string, roles: Role[]): Promise<{ token: string; tokenId: string }> {
  if (!IDENTITY.test(identity)) throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', 'identity: 1-200 characters: letters, digits and . _ : / @ -, starting with a letter or digit');
  if (roles.length === 0) throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', 'roles: give at least one role');
  const tokenId = randomBytes(6).toString('hex');
  const token = `la_${tokenId}_${randomBytes(32).toString('base64url')}`;
  await store.insert('api_tokens', [{ token_hash: hashToken(token), token_id: tokenId, identity, roles, revoked: 0 }]);
  return { token, tokenId };
}

/** Tokens remembered per process; beyond it the least recently used is looked up again. */
export const TOKEN_CACHE_MAX = 10_000;

/** Looks a presented token up; undefined for malformed, unknown or revoked tokens alike. */
export class ApiTokenVerifier {
  readonly #store: AuditStore;
  // Known tokens and unknown ones in separate bounded LRU maps: a flood of
  // random tokens churns only the second, and never costs a legitimate
  // caller its cached entry (and a ClickHouse lookup per request).
  readonly #known: LRUCache<string, Identity>;
  readonly #unknown: LRUCache<string, true>;

  constructor(store: AuditStore, options: { cacheTtlMs?: number; cacheMax?: number } = {}) {
    this.#store = store;
    const ttl = options.cacheTtlMs ?? 30_000;
    const max = options.cacheMax ?? TOKEN_CACHE_MAX;
    this.#known = new LRUCache({ max, ttl });
    this.#unknown = new LRUCache({ max, ttl });
  }

  async verify(token: string): Promise<Identity | undefined> {
    if (!TOKEN.test(token)) return undefined;
    const hash = hashToken(token);
    const known = this.#known.get(hash);
    if (known) return known;
    if (this.#unknown.get(hash)) return undefined;
    const rows = await this.#store.rows<{ identity: string; roles: string[]; token_id: string; revoked: number }>(
      'SELECT identity, roles, token_id, revoked FROM {db:Identifier}.api_tokens FINAL WHERE token_hash = {hash:String}',
      { hash },
    );
    const row = rows[0];
    const value = row && Number(row.revoked) === 0 ? { identity: row.identity, roles: row.roles as Role[], tokenId: row.token_id } : undefined;
    if (value) this.#known.set(hash, value);
    else this.#unknown.set(hash, true);
    return value;
  }
}
