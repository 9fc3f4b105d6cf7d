// The tailer's key split from the origin secret on a deployment from before the split (`lockaudit keys
// split-tailer`, docs/keys.md): the new key made aside, every row the tailer proved under the origin secret
// proved again under it (tailer/recovery/reprove.ts), and only then the key put in place.
// - Refused while a tailer or a worker's alert sink campaigns on a configured cluster: a running tailer would go
//   on writing proofs with the origin secret it holds in memory (read as unproven after the split: a replay), and
//   a running worker would go on accepting rows forged with it until restarted.
// - A draft key already in the data dir is never taken as the new key unless the operator says it is the one an
//   earlier, cut-off split made (--resume): whoever could write the data dir could have put it there, knowing it.
import { renameSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../core/config.js';
import type { AuditStore } from '../core/clickhouse.js';
import { createEtcdClient } from '../core/etcd.js';
import { LockauditError } from '../core/errors.js';
import { PREFIX } from '../core/keyspace.js';
import { createSecretFile, secretFromFile, TAILER_SECRET_FILE } from '../core/originSecret.js';
import { existingTailerKey } from '../core/tailerSecret.js';
import { reproveTailerRows, type ReproveResult } from '../tailer/recovery/reprove.js';

const DRAFT_FILE = `${TAILER_SECRET_FILE}.next`;

const refuse = (message: string): never => {
  throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', message);
};

/** Why the split cannot start, from the data dir and settings alone, or undefined. */
export function splitRefusal(config: Config, options: { resume: boolean }): string | undefined {
  const current = existingTailerKey(config);
  if (!current) return 'this deployment has no origin secret yet: a new deployment makes its own tailer key at its first start';
  if (current.source !== 'origin')
    return `the tailer already has a key of its own (${current.source === 'configured' ? 'LOCKAUDIT_TAILER_SECRET' : path.join(config.dataDir, TAILER_SECRET_FILE)})`;
  const draft = path.join(config.dataDir, DRAFT_FILE);
  const made = draftMadeAt(draft);
  if (made && !options.resume)
    return `${draft} already exists (made ${made}): if an earlier split-tailer was cut off, run it again with --resume to finish with that key; if not, someone else put it there — move it away, and run split-tailer again`;
  if (!made && options.resume) return `--resume: there is no ${draft} of an earlier split to finish`;
  return undefined;
}

function draftMadeAt(file: string): string | undefined {
  try {
    return statSync(file).mtime.toISOString();
  } catch {
    return undefined;
  }
}

/** The tailer or alert-sink campaigns alive on the configured clusters' etcd: keys under /sys/election/. */
async function campaigns(config: Config): Promise<string[]> {
  const out: string[] = [];
  for (const cluster of config.etcd.clusters) {
    const client = createEtcdClient(cluster);
    try {
      const keys = await client.getAll().prefix(PREFIX.election).keys();
      out.push(...keys.map((k) => `${cluster.name}: ${k}`));
    } finally {
      client.close();
    }
  }
  return out;
}

export async function splitTailerKey(config: Config, store: AuditStore, options: { resume: boolean }): Promise<{ result: ReproveResult; file: string }> {
  const refusal = splitRefusal(config, options);
  if (refusal) refuse(refusal);
  const current = existingTailerKey(config);
  if (!current) return refuse('no origin secret');
  const alive = await campaigns(config);
  if (alive.length > 0)
    refuse(
      `a tailer or worker still runs (its campaign: ${alive.slice(0, 3).join('; ')}${alive.length > 3 ? ` and ${alive.length - 3} more` : ''}): stop every tailer and worker first (a killed one's campaign lapses within its election TTL)`,
    );
  // Made aside until every row is proved again: cut off half way, the split is finished with --resume.
  const next = options.resume ? secretFromFile(path.join(config.dataDir, DRAFT_FILE)) : createSecretFile(config.dataDir, DRAFT_FILE, { fresh: true });
  if (!next) return refuse(`${path.join(config.dataDir, DRAFT_FILE)} could not be read`);
  const result = await reproveTailerRows(store, { old: current.key, next });
  const file = path.join(config.dataDir, TAILER_SECRET_FILE);
  renameSync(path.join(config.dataDir, DRAFT_FILE), file);
  return { result, file };
}
