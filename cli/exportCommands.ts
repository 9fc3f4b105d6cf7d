// `lockaudit export history|grants` and `lockaudit archive verify`.
// Flags are validated before anything opens; bad input exits 2 naming the
// flag, a failed run or a damaged archive exits 1.
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import { deploymentKeyring, digestPublicKey, digestSigner, existingDigestPublicKeyPem } from '../core/digestKey.js';
import type { AuditStore } from '../core/clickhouse.js';
import { CLUSTER_NAME_PATTERN, loadConfig, type Config } from '../core/config.js';
import { isLockauditError, LockauditError } from '../core/errors.js';
import { createLogger } from '../core/logger.js';
import { createS3Client } from '../core/s3.js';
import { expectedFromAuditLog, gapsFromAuditLog, verifyArchive } from '../exporters/archive/archiveVerify.js';
import { existingOriginSecret } from '../core/originSecret.js';
import { existingTailerSecret } from '../core/tailerSecret.js';
import { withStore as withStoreOf } from './store.js';
import { archiveLockProblem, ensureHistoryBucket } from '../platform/buckets.js';
import { EXPORT_FORMATS, ExportRecords, parseExportInput, writeGrantsExport } from '../exporters/compliance/complianceExport.js';
import type { ExportFormat } from '../exporters/compliance/chunkedExport.js';
import {
  captureBegan,
  daysBetween,
  dayStartMs,
  exportHistoryFile,
  HISTORY_DATASETS,
  historyDayBeforeCapture,
  historyDayNotOver,
  type HistoryDataset,
} from '../exporters/history/parquetHistory.js';
import type { GrantFilters } from '../exporters/compliance/exportPlans.js';
import { pickCluster } from '../grants/clusters.js';

const CLUSTER_NAME = new RegExp(CLUSTER_NAME_PATTERN);

const say = (message: string): void => {
  process.stderr.write(`lockaudit: ${message}\n`);
};

function badInput(message: string): never {
  throw new LockauditError('LOCKAUDIT_ERR_EXPORT_INVALID', message);
}

/** Runs a command body; bad input → exit 2, other LockauditErrors → exit 1. */
async function run(body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (err) {
    if (isLockauditError(err, 'LOCKAUDIT_ERR_EXPORT_INVALID')) {
      say(err.message);
      process.exitCode = 2;
      return;
    }
    throw err;
  }
}

function bar(label: string): SingleBar {
  return new SingleBar(
    { format: `${label} [{bar}] {percentage}% | {value}/{total} {unit} | {detail}`, hideCursor: true, stream: process.stderr },
    Presets.shades_classic,
  );
}

const withStore = <T>(config: Config, fn: (store: AuditStore) => Promise<T>): Promise<T> => withStoreOf(config, fn, { migrate: true });

interface HistoryFlags {
  from: string;
  to: string;
  cluster?: string[];
  dataset: string;
}

interface GrantsFlags extends GrantFilters {
  from: string;
  to: string;
  out: string;
  format: string;
}

/** The grant seals a local export may rely on (exporters/checks/grantSeals.ts): the deployment's digest key's, when it has one. */
function grantSeals(config: Config): { seals?: { publicKey: ReturnType<typeof digestPublicKey>; periodMs: number } } {
  const pem = existingDigestPublicKeyPem(config);
  return pem ? { seals: { publicKey: digestPublicKey(pem), periodMs: config.digests.periodSeconds * 1000 } } : {};
}
export function registerExportCommands(program: Command): void {
  const exp = program.command('export').description('export grant history and raw events (Parquet, CSV)');

  exp
    .command('history')
    .description(
      "backfill the Parquet history (grants and raw events per cluster and UTC day) into the history bucket; complete days are skipped, so re-running is safe; a day whose end its cluster's tailer has not captured yet is refused (it would stay short)",
    )
    .requiredOption('--from <date>', 'first day, YYYY-MM-DD (UTC)')
    .requiredOption('--to <date>', 'last day, YYYY-MM-DD (UTC), included')
    .option('--cluster <name...>', 'only these clusters (default: every configured cluster)')
    .option('--dataset <name>', `grants, events or all`, 'all')
    .action((flags: HistoryFlags) =>
      run(async () => {
        if (dayStartMs(flags.from) === undefined) badInput(`--from: "${flags.from}" is not a date (YYYY-MM-DD)`);
        if (dayStartMs(flags.to) === undefined) badInput(`--to: "${flags.to}" is not a date (YYYY-MM-DD)`);
        const days = daysBetween(flags.from, flags.to);
        if (days.length === 0) badInput('--to: must not be before --from');
        if (days.length > 3660) badInput('--to: at most ten years at a time');
        if (flags.dataset !== 'all' && !(HISTORY_DATASETS as readonly string[]).includes(flags.dataset)) badInput(`--dataset: must be grants, events or all`);
        const datasets: HistoryDataset[] = flags.dataset === 'all' ? [...HISTORY_DATASETS] : [flags.dataset as HistoryDataset];
        const config = loadConfig();
        const clusters = flags.cluster ?? config.etcd.clusters.map((c) => c.name);
        for (const c of clusters) if (!CLUSTER_NAME.test(c)) badInput(`--cluster: "${c}" is not a cluster name`);
        await withStore(config, async (store) => {
          // A typo refused once, before the bucket or any day is touched (before: every day failed on its own line).
          const configured = config.etcd.clusters.map((c) => c.name);
          for (const c of clusters)
            await pickCluster({ store, limits: config.reports, clusters: configured }, c, '--cluster').catch((err: Error) => badInput(err.message));
          const s3 = createS3Client(config.s3);
          await ensureHistoryBucket(s3, config.s3);
          const deps = {
            store,
            s3,
            bucket: config.s3.historyBucket,
            logger: createLogger('warn'),
            signer: digestSigner(config),
            keyring: deploymentKeyring(config),
            tailerSecret: existingTailerSecret(config),
            grantSealPeriodMs: config.digests.periodSeconds * 1000,
          };
          const progress = bar('history');
          const total = days.length * clusters.length * datasets.length;
          progress.start(total, 0, { unit: 'files', detail: '' });
          let rows = 0n;
          const failed: string[] = [];
          let skipped = 0;
          const began = new Map<string, number | undefined>();
          for (const c of clusters) began.set(c, await captureBegan(store, c));
          const beforeCapture: string[] = [];
          for (const date of days) {
            for (const cluster of clusters) {
              // Asked once per cluster and day, not per dataset: both files wait for the same capture.
              const notOver = await historyDayNotOver(store, cluster, date);
              for (const dataset of datasets) {
                progress.update({ detail: `${dataset} ${cluster} ${date}` });
                if (notOver !== undefined) {
                  failed.push(`${dataset} ${cluster} ${date}: ${notOver}`);
                  progress.increment();
                  continue;
                }
                if (historyDayBeforeCapture(cluster, date, began.get(cluster)) !== undefined) {
                  beforeCapture.push(`${dataset} ${cluster} ${date}`);
                  progress.increment();
                  continue;
                }
                try {
                  const r = await exportHistoryFile(deps, { dataset, cluster, date });
                  if (r.status === 'complete') skipped++;
                  rows += BigInt(r.manifest?.rows ?? '0');
                } catch (err) {
                  failed.push(`${dataset} ${cluster} ${date}: ${(err as Error).message}`);
                }
                progress.increment();
              }
            }
          }
          progress.stop();
          say(
            `history: ${total - failed.length - skipped - beforeCapture.length} file(s) written (${rows} rows), ${skipped} already complete, ${beforeCapture.length} before capture began (not written), ${failed.length} failed`,
          );
          for (const c of clusters) {
            const first = beforeCapture.filter((b) => b.split(' ')[1] === c);
            const at = began.get(c);
            if (first.length > 0 && at !== undefined)
              say(
                `  ${c}: capture began ${new Date(at).toISOString()}; the ${first.length} file(s) of days before it are not written (nothing of them was captured)`,
              );
          }
          for (const f of failed) say(`  failed: ${f}`);
          if (failed.length) process.exitCode = 1;
        });
      }),
    );

  exp
    .command('grants')
    .description(
      'export grants granted in [--from, --to) with filters into one local Parquet, Arrow IPC or CSV file (the same export as POST /v1/exports); recorded in the export audit',
    )
    .requiredOption('--from <time>', 'start, ISO 8601 date or date-time (UTC unless an offset is given), included')
    .requiredOption('--to <time>', 'end, ISO 8601 date or date-time, excluded')
    .requiredOption('--out <file>', 'the file to write (appears only once complete)')
    .option('--format <format>', 'parquet, csv or arrow (an Arrow IPC stream)', 'parquet')
    .option('--cluster <name>', 'only this cluster')
    .option('--key <lock>', 'only this lock name')
    .option('--key-prefix <prefix>', 'only lock names starting with this')
    .option('--holder <identity>', 'only this holder')
    .option('--class <name>', 'only this lock class')
    .option('--namespace <ns>', 'only this namespace')
    .option('--token <token>', 'only the grant with this fencing token (decimal)')
    .action((flags: GrantsFlags) =>
      run(async () => {
        if (!(EXPORT_FORMATS as readonly string[]).includes(flags.format)) badInput(`--format: must be ${EXPORT_FORMATS.join(', ')}`);
        const parsed = parseExportInput(
          {
            from: flags.from,
            to: flags.to,
            filters: {
              cluster: flags.cluster,
              key: flags.key,
              keyPrefix: flags.keyPrefix,
              holder: flags.holder,
              class: flags.class,
              namespace: flags.namespace,
              token: flags.token,
            },
          },
          { from: '--from', to: '--to', filter: (n) => `--${n.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}` },
        );
        const out = path.resolve(flags.out);
        // Asked before anything is read: the file is written beside itself first, and a missing directory was an ENOENT stack at the end.
        const dir = path.dirname(out);
        if (!existsSync(dir) || !statSync(dir).isDirectory()) badInput(`--out: the directory ${dir} does not exist`);
        if (existsSync(out) && statSync(out).isDirectory()) badInput(`--out: ${out} is a directory; name the file to write`);
        try {
          accessSync(dir, constants.W_OK);
        } catch {
          badInput(`--out: the directory ${dir} is not writable`);
        }
        const config = loadConfig();
        await withStore(config, async (store) => {
          // A cluster no tailer captured (a typo): refused, not written as a file of 0 rows.
          if (parsed.filters.cluster !== undefined) {
            await pickCluster({ store, limits: config.reports, clusters: config.etcd.clusters.map((c) => c.name) }, parsed.filters.cluster, '--cluster').catch(
              (err: Error) => badInput(err.message),
            );
          }
          const records = new ExportRecords(store);
          const actor = `cli:${userInfo().username}`;
          const exportId = `cli_${Date.now()}`;
          const request = { format: flags.format as ExportFormat, ...parsed };
          await records.audit(exportId, 'local-export', actor, {
            phase: 'request',
            format: request.format,
            from: flags.from,
            to: flags.to,
            filters: parsed.filters,
            out,
          });
          const progress = bar('export');
          progress.start(100, 0, { unit: '%', detail: '' });
          const file = await writeGrantsExport(store, request, out, {
            durable: true,
            tailerSecret: existingTailerSecret(config),
            ...grantSeals(config),
            onProgress: (p) => {
              progress.update(Math.floor(p.percent), { detail: `${p.rows} of ${p.total} rows` });
            },
          });
          progress.update(100, { detail: `${file.rows} rows` });
          progress.stop();
          await records.audit(exportId, 'local-export', actor, { phase: 'complete', rows: file.rows.toString(), bytes: file.bytes, sha256: file.sha256, out });
          say(`wrote ${file.rows} rows (${file.bytes} bytes) to ${out}, sha256 ${file.sha256}`);
        });
      }),
    );

  const archive = program.command('archive').description('the object-locked force-release archive');
  archive
    .command('verify')
    .description(
      "walk each cluster's hash chain in the archive bucket and report every missing, altered or unproven record, and (with the audit log) every proven force record not archived and every archived one the audit log does not hold; exits 1 when any is found",
    )
    .option('--cluster <name>', 'only this cluster')
    .option('--no-audit-log', 'do not cross-check against the force records in the audit log (ClickHouse)')
    .option('--json', 'print JSON')
    .action((flags: { cluster?: string; auditLog: boolean; json?: boolean }) =>
      run(async () => {
        if (flags.cluster !== undefined && !CLUSTER_NAME.test(flags.cluster)) badInput(`--cluster: "${flags.cluster}" is not a cluster name`);
        const config = loadConfig();
        const s3 = createS3Client(config.s3);
        const lockProblem = await archiveLockProblem(s3, config.s3.archiveBucket);
        if (lockProblem && !(await s3.bucketExists(config.s3.archiveBucket))) {
          say(lockProblem);
          process.exitCode = 1;
          return;
        }
        // An unlocked archive is still verified (that is how a damaged one is found), but it is named.
        if (lockProblem) say(`warning: ${lockProblem}`);
        const fromLog = flags.auditLog
          ? await withStore(config, async (store) => ({
              expected: await expectedFromAuditLog(store, { cluster: flags.cluster }),
              gaps: await gapsFromAuditLog(store, { cluster: flags.cluster }),
            }))
          : undefined;
        // Each record's own proof, with the deployment's key where this machine has it (never a new one).
        const secret = existingOriginSecret(config);
        if (!secret) say("warning: no origin secret here (LOCKAUDIT_ORIGIN_SECRET or <dataDir>/origin-secret): the records' proofs are not checked");
        const result = await verifyArchive(s3, config.s3.archiveBucket, {
          cluster: flags.cluster,
          expected: fromLog?.expected,
          gaps: fromLog?.gaps,
          originSecret: secret,
        });
        if (flags.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
        else {
          if (result.clusters.length === 0) process.stdout.write(`no archived force records in ${config.s3.archiveBucket}\n`);
          for (const c of result.clusters) {
            const gapped = c.inGaps ? `, ${c.inGaps} put inside a recorded gap (not in the audit log)` : '';
            process.stdout.write(
              `${c.problems.length ? 'FAIL' : 'ok  '}  ${c.cluster}: ${c.records} record(s), chain to seq ${c.lastSeq}${gapped}${c.problems.length ? `, ${c.problems.length} problem(s)` : ''}\n`,
            );
            for (const p of c.problems) process.stdout.write(`      ${p.kind.padEnd(12)} ${p.detail}\n`);
          }
        }
        if (!result.ok) process.exitCode = 1;
      }),
    );
}
