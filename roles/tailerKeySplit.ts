// The tailer's key split from the origin secret on a deployment from before the split (`lockaudit keys
// split-tailer`, docs/keys.md): the new key made aside, every row the tailer proved under the origin secret
// proved again under it (tailer/recovery/reprove.ts), and only then the key put in place.
import { renameSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../core/config.js';
import { LockauditError } from '../core/errors.js';
import { createSecretFile, TAILER_SECRET_FILE } from '../core/originSecret.js';
import { existingTailerKey } from '../core/tailerSecret.js';
import type { AuditStore } from '../core/clickhouse.js';
import { reproveTailerRows, type ReproveResult } from '../tailer/recovery/reprove.js';

/** Refused before anything is written: a deployment with no origin secret, or with a tailer key of its own. */
export function splitRefusal(config: Config): string | undefined {
  const current = existingTailerKey(config);
  if (!current) return 'this deployment has no origin secret yet: a new deployment makes its own tailer key at its first start';
  if (current.source === 'origin') return undefined;
  return `the tailer already has a key of its own (${current.source === 'configured' ? 'LOCKAUDIT_TAILER_SECRET' : path.join(config.dataDir, TAILER_SECRET_FILE)})`;
}

export async function splitTailerKey(config: Config, store: AuditStore): Promise<{ result: ReproveResult; file: string }> {
  const refusal = splitRefusal(config);
  const current = existingTailerKey(config);
  if (refusal || !current) throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', refusal ?? 'no origin secret');
  // Made first and kept aside until every row is proved again: a split cut off half way is finished by running it again.
  const draft = `${TAILER_SECRET_FILE}.next`;
  const next = createSecretFile(config.dataDir, draft);
  const result = await reproveTailerRows(store, { old: current.key, next });
  const file = path.join(config.dataDir, TAILER_SECRET_FILE);
  renameSync(path.join(config.dataDir, draft), file);
  return { result, file };
}
