// The key of the tailer's own proofs (core/proof.ts): its /sys/clock writes, checkpoints, catch-up segments,
// restore gaps and quarantined rows. Apart from the origin secret so that the lock API, which never needs it,
// cannot mint them: an API process that is taken over can forge holds (it writes them anyway), not the tailer's
// resume position, its /sys/clock writes in etcd, its restore gaps or quarantine entries. The tailer writes with
// it; the worker and `verify` check.
// Configured (LOCKAUDIT_TAILER_SECRET) or <dataDir>/tailer-secret, created with a new deployment (before its
// origin secret). A deployment from before the split has an origin secret and no tailer key: it goes on with
// the origin secret, so every proof it wrote still holds, and says so (docs/keys.md has the split).
import path from 'node:path';
import type { Config } from './config.js';
import { createSecretFile, existingOriginSecret, secretFromFile, TAILER_SECRET_FILE } from './originSecret.js';

type Settings = Pick<Config, 'dataDir' | 'originSecret' | 'tailerSecret'>;

/** Where this deployment's tailer key comes from: 'origin' is the shared key of a deployment from before the split. */
export type TailerKeySource = 'configured' | 'file' | 'origin';

/** The tailer key if this deployment has one, with its source; never creates one. */
export function existingTailerKey(config: Settings): { key: Buffer; source: TailerKeySource } | undefined {
  if (config.tailerSecret) return { key: Buffer.from(config.tailerSecret, 'utf8'), source: 'configured' };
  // The origin secret first: a new deployment writes its tailer key before it (core/originSecret.ts), so a tailer
  // key file read after an origin secret was seen is there if it is ever going to be — read the other way round,
  // a deployment made between the two reads would pass for one from before the split.
  const origin = existingOriginSecret(config);
  const file = secretFromFile(path.join(config.dataDir, TAILER_SECRET_FILE));
  if (file) return { key: file, source: 'file' };
  return origin ? { key: origin, source: 'origin' } : undefined;
}

/** The tailer key, created for a new deployment; with its source (a shared 'origin' key is for the role to say). */
export function tailerKey(config: Settings): { key: Buffer; source: TailerKeySource } {
  return existingTailerKey(config) ?? { key: createSecretFile(config.dataDir, TAILER_SECRET_FILE), source: 'file' };
}

/** The tailer key if this deployment has one; never creates one — for checkers. */
export function existingTailerSecret(config: Settings): Buffer | undefined {
  return existingTailerKey(config)?.key;
}

/** Said once by a role that runs with an 'origin' tailer key. */
export const SHARED_TAILER_KEY_WARNING =
  "the tailer's proofs use the lock API's origin secret (a deployment from before the two were split): a process holding it can forge the tailer's checkpoints and clock. Set LOCKAUDIT_TAILER_SECRET on the tailer and worker processes (docs/keys.md, \"The tailer's key\")";
