// The key of the lock API's proof of origin (core/proof.ts). Configured
// (LOCKAUDIT_ORIGIN_SECRET) or generated once into <dataDir>/origin-secret,
// so the API and the tailer of one deployment share it without setup; never
// logged (maskedConfig hides a configured one).
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';
import { LockauditError } from './errors.js';

export const ORIGIN_SECRET_FILE = 'origin-secret';
/** The shortest key taken (a configured one is held to the same by the config schema). */
export const ORIGIN_SECRET_MIN_BYTES = 32;

/** The key a file holds, refused when it is too short to be one (an empty file left by a full disk is no key). */
function fromFile(file: string, text: string): Buffer {
  const key = Buffer.from(text.trim(), 'utf8');
  if (key.length < ORIGIN_SECRET_MIN_BYTES) {
    throw new LockauditError(
      'LOCKAUDIT_ERR_ORIGIN_SECRET',
      `${file} holds ${key.length} byte(s), not a key (at least ${ORIGIN_SECRET_MIN_BYTES}): it was cut short or emptied. Restore it from your backup; only if this deployment never wrote a proof, delete it to have one generated`,
    );
  }
  return key;
}

export function originSecret(config: Pick<Config, 'dataDir' | 'originSecret'>): Buffer {
  const existing = existingOriginSecret(config);
  if (existing) return existing;
  const file = path.join(config.dataDir, ORIGIN_SECRET_FILE);
  mkdirSync(config.dataDir, { recursive: true });
  try {
    // 'wx': a second process creating it at the same moment keeps the first one's key.
    writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return fromFile(file, readFileSync(file, 'utf8'));
}

/** The origin secret if this deployment has one (configured, or its file exists); never creates one — for checkers. */
export function existingOriginSecret(config: Pick<Config, 'dataDir' | 'originSecret'>): Buffer | undefined {
  if (config.originSecret) return Buffer.from(config.originSecret, 'utf8');
  const file = path.join(config.dataDir, ORIGIN_SECRET_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    // Unreadable is not absent: a key generated in its place would read every proof written so far as foreign.
    throw new LockauditError(
      'LOCKAUDIT_ERR_ORIGIN_SECRET',
      `${file} cannot be read (${code ?? (err as Error).message}): give the process read access to it (or restore it from your backup)`,
      { cause: err },
    );
  }
  return fromFile(file, text);
}
