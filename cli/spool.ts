// `lockaudit spool`: lists the fail-open spool of each configured cluster —
// the grants issued without quorum (token 0) that the tailer ships as
// unprotected grants, each with how it ended (released, or lapsed at its TTL)
// once the lock API spooled that end.
import type { Command } from 'commander';
import { loadConfig, type Config } from '../core/config.js';
import { pairSpool, readSpool, spoolPath, type SpoolEndRecord, type SpoolRecord } from '../core/spool.js';

export interface SpoolListing {
  cluster: string;
  file: string;
  /** Every record in file order: grants and ends (core/spool.ts). */
  records: SpoolRecord[];
  badLines: number[];
}

export function spoolListings(config: Config, cluster?: string): SpoolListing[] {
  return config.etcd.clusters
    .filter((c) => cluster === undefined || c.name === cluster)
    .map((c) => {
      const file = spoolPath(config.dataDir, c.name);
      return { cluster: c.name, file, ...readSpool(file) };
    });
}

const iso = (ms: number): string => new Date(ms).toISOString();

function ended(end: SpoolEndRecord | undefined): string {
  if (!end) return 'open';
  return `ended=${end.how} at ${iso(end.at)} (${end.at - end.grant.at} ms)`;
}

/** One line per grant (with its end, or `open`), then any end whose grant is not in the file; for people. */
export function listSpool(config: Config, cluster?: string): string[] {
  const lines: string[] = [];
  for (const l of spoolListings(config, cluster)) {
    const { holds, orphanEnds } = pairSpool(l.records);
    const open = holds.filter((h) => !h.end).length;
    const extra = [
      orphanEnds.length ? `${orphanEnds.length} end(s) of grants not in this file` : '',
      l.badLines.length ? `${l.badLines.length} undecodable line(s): ${l.badLines.join(', ')}` : '',
    ].filter(Boolean);
    lines.push(
      `# cluster ${l.cluster}: ${holds.length} unprotected grant(s), ${open} without an end, in ${l.file}${extra.length ? ` (${extra.join('; ')})` : ''}`,
    );
    for (const { grant: r, end } of holds) {
      lines.push(`${iso(r.at)}  ${r.key}  class=${r.class}  holder=${r.holder}  session=${r.session}  wait=${r.waitMs}ms  token=0  id=${r.id}  ${ended(end)}`);
    }
    for (const end of orphanEnds) {
      const r = end.grant;
      lines.push(
        `${iso(r.at)}  ${r.key}  class=${r.class}  holder=${r.holder}  session=${r.session}  wait=${r.waitMs}ms  token=0  id=${r.id}  ${ended(end)}  (grant line not in this file)`,
      );
    }
  }
  return lines;
}

export function registerSpool(program: Command): void {
  program
    .command('spool')
    .description('list the fail-open spool: grants issued without quorum (token 0), one line each with how it ended, per cluster')
    .option('--cluster <name>', 'only this configured etcd cluster')
    .option('--json', 'print the records as JSON (grant and end records, in file order)')
    .action((opts: { cluster?: string; json?: boolean }) => {
      const config = loadConfig();
      if (opts.cluster !== undefined && !config.etcd.clusters.some((c) => c.name === opts.cluster)) {
        process.stderr.write(
          `lockaudit: --cluster: no configured cluster "${opts.cluster}" (configured: ${config.etcd.clusters.map((c) => c.name).join(', ')})\n`,
        );
        process.exitCode = 2;
        return;
      }
      if (opts.json) process.stdout.write(`${JSON.stringify(spoolListings(config, opts.cluster), null, 2)}\n`);
      else process.stdout.write(`${listSpool(config, opts.cluster).join('\n')}\n`);
    });
}
