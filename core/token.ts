// Fencing token = epoch × 2^48 + R, R the revision of the txn that created the
// hold (ADR-002). It passes 2^53 as soon as epoch ≥ 32, so it is a bigint in
// code and a decimal string on the wire — never a JS number.

export const REVISION_BITS = 48n;
export const REVISION_LIMIT = 1n << REVISION_BITS;
export const TOKEN_LIMIT = 1n << 64n;
const DECIMAL = /^(0|[1-9]\d{0,19})$/;

export function makeToken(epoch: number | bigint, revision: bigint | string | number): bigint {
  const e = BigInt(epoch);
  const r = BigInt(revision);
  if (e < 0n) throw new RangeError('epoch must be >= 0');
  if (r < 0n || r >= REVISION_LIMIT) throw new RangeError('revision must be in [0, 2^48)');
  const token = e * REVISION_LIMIT + r;
  if (token >= TOKEN_LIMIT) throw new RangeError('token exceeds 64 bits');
  return token;
}

export function splitToken(token: bigint): { epoch: bigint; revision: bigint } {
  return { epoch: token / REVISION_LIMIT, revision: token % REVISION_LIMIT };
}

/** Parses a decimal token string; undefined when it is not one (callers answer 400). */
export function parseToken(text: string): bigint | undefined {
  if (!DECIMAL.test(text)) return undefined;
  const token = BigInt(text);
  return token < TOKEN_LIMIT ? token : undefined;
}

export function tokenToString(token: bigint): string {
  return token.toString(10);
}
