// `lockaudit verify`: the tamper-evident digests (docs/digests.md#tamper-evident-digests) checked
// as an outsider would, one line per period; exit 1 on any failure, 2 on bad
// flags. The keys trusted: --public-key (a PEM file of one key or several: a keyring), else the deployment's own.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { AuditStore } from '../core/clickhouse.js';
import { CLUSTER_NAME_PATTERN, loadConfig } from '../core/config.js';
import { deploymentKeyring, parseKeyring, type DigestKeyring } from '../core/digestKey.js';
import { badFlag as bad, keyed } from './flags.js';
import { parseInstantOrUtc } from '../core/instant.js';
import { existingTailerKey, SHARED_TAILER_KEY_WARNING } from '../core/tailerSecret.js';
import { createS3Client } from '../core/s3.js';
import { formatVerifyResult, verifyDigests } from '../exporters/digests/verify.js';

const CLUSTER_NAME = new RegExp(CLUSTER_NAME_PATTERN);

interface VerifyFlags {
  from: string;
  to?: string;
  cluster?: string;
  publicKey?: string;
  database: boolean;
  json?: boolean;
  maxOpen?: string;
}

export function registerDigestCommands(program: Command): void {
  program
    .command('verify')
    .description(
      "check the signed digests of the record: the chain (none missing, none altered, signatures valid), the Parquet history objects they name, and (with database access) that ClickHouse's events still hash to them; one line per period; exit 0 ok (periods open or history expired by the lifecycle rule included), 1 tampered, 3 sealing stalled",
    )
    .requiredOption('--from <time>', 'first period to check: ISO 8601 date or date-time (UTC unless an offset is given)')
    .option('--to <time>', 'end of the range, excluded (default: the end of the last digest); periods up to it without a digest fail')
    .option('--cluster <name>', 'only this cluster (default: every configured cluster)')
    .option(
      '--public-key <file>',
      "the Ed25519 public key (PEM) to check signatures with, or a keyring: several PEM keys in one file — the chain's first key, and any key a recovery moved to (default: the deployment's keyring, as GET /v1/digests/public-key serves it)",
    )
    .option('--no-database', "do not re-hash ClickHouse's events (check the chain and the objects only)")
    .option(
      '--max-open <seconds>',
      "fail a period still unsealed this long after it ended, by this machine's clock (default: the period plus 3 × digests.settleSeconds, at least 300)",
    )
    .option('--json', 'print JSON')
    .action((flags: VerifyFlags) =>
      keyed(async () => {
        const fromMs = parseInstantOrUtc(flags.from) ?? bad(`--from: "${flags.from}" is not a date or date-time`);
        const toMs = flags.to === undefined ? undefined : (parseInstantOrUtc(flags.to) ?? bad(`--to: "${flags.to}" is not a date or date-time`));
        if (toMs !== undefined && toMs <= fromMs) bad('--to: must be after --from');
        const maxOpen = flags.maxOpen === undefined ? undefined : Number(flags.maxOpen);
        if (maxOpen !== undefined && !(Number.isFinite(maxOpen) && maxOpen >= 0)) bad(`--max-open: "${flags.maxOpen}" is not a number of seconds`);
        if (flags.cluster !== undefined && !CLUSTER_NAME.test(flags.cluster)) bad(`--cluster: "${flags.cluster}" is not a cluster name`);
        const config = loadConfig();
        let keyring: DigestKeyring;
        if (flags.publicKey) {
          let pem = '';
          try {
            pem = readFileSync(flags.publicKey, 'utf8');
          } catch (err) {
            bad(`--public-key: cannot read ${flags.publicKey}: ${(err as Error).message}`);
          }
          keyring = parseKeyring(pem, '--public-key');
        } else keyring = deploymentKeyring(config); // LOCKAUDIT_DIGEST_PUBLIC_KEY, the data dir's keyring and keys
        if (keyring.size === 0) bad('--public-key: this deployment has no digest key yet; pass the public key (GET /v1/digests/public-key)');
        const store = flags.database ? new AuditStore(config.clickhouse) : undefined;
        const tailerKey = store ? existingTailerKey(config) : undefined;
        if (tailerKey?.source === 'origin') process.stderr.write(`lockaudit: warning: ${SHARED_TAILER_KEY_WARNING}\n`);
        try {
          const result = await verifyDigests({
            s3: createS3Client(config.s3),
            bucket: config.s3.archiveBucket,
            keyring,
            deploymentKeyring: !flags.publicKey,
            store,
            fromMs,
            toMs,
            clusters: flags.cluster ? [flags.cluster] : config.etcd.clusters.map((c) => c.name),
            settleMs: config.digests.settleSeconds * 1000,
            periodMs: config.digests.periodSeconds * 1000,
            clockToleranceMs: config.digests.clockToleranceSeconds * 1000,
            ...(tailerKey ? { tailerSecret: tailerKey.key } : {}),
            ...(maxOpen !== undefined ? { maxOpenMs: maxOpen * 1000 } : {}),
          });
          if (flags.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
          else for (const line of formatVerifyResult(result)) process.stdout.write(`${line}\n`);
          process.exitCode = result.exitCode;
        } finally {
          await store?.close();
        }
      }),
    );
}
