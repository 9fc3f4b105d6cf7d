// A fencing token as it may leave the platform for a log or a SIEM: a keyed
// hash, as Vault's audit devices hash secrets (`hmac-sha256:<hex>`). A token in
// a log is a token anyone with log access can present; its hash is not, yet an
// investigator who holds a token can hash it (POST /v1/token-hash, `lockaudit
// token-hash`) and search the SIEM for it. The key is derived from the origin
// secret (HKDF, its own label), so a hash never reveals the secret and one
// deployment's hashes are stable across its processes. Defence in depth only: an
// event also carries the epoch and the grant revision a token is made of
// (core/token.ts), and whoever reads both can compute it.
import { createHmac, hkdfSync } from 'node:crypto';

export const TOKEN_HASH_PREFIX = 'hmac-sha256:';

/** The key token hashes are made with, derived from the deployment's origin secret. */
export function tokenHashKey(originSecret: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', originSecret, Buffer.alloc(0), 'lockaudit/token-hash/v1', 32));
}

/** `hmac-sha256:<64 hex>` of a decimal token; '' for token 0 (an unprotected grant has no fencing token to hide). */
export function hashToken(key: Buffer, token: string): string {
  if (token === '0' || token === '') return '';
  return `${TOKEN_HASH_PREFIX}${createHmac('sha256', key).update(token, 'utf8').digest('hex')}`;
}
