// The key of the lock API's proof of origin (core/proof.ts). Configured
// (LOCKAUDIT_ORIGIN_SECRET) or generated once into <dataDir>/origin-secret,
// so the API and the tailer of one deployment share it without setup; never
// logged (maskedConfig hides a configured one).
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';

export const ORIGIN_SECRET_FILE = 'origin-secret';

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
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'utf8');
}

/** The origin secret if this deployment has one (configured, or its file exists); never creates one — for checkers. */
export function existingOriginSecret(config: Pick<Config, 'dataDir' | 'originSecret'>): Buffer | undefined {
  if (config.originSecret) return Buffer.from(config.originSecret, 'utf8');
  try {
    return Buffer.from(readFileSync(path.join(config.dataDir, ORIGIN_SECRET_FILE), 'utf8').trim(), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
