// `lockaudit spool`: lists the fail-open spool of each configured cluster —
// the grants issued without quorum (token 0) that the tailer ships as
// unprotected grants.
import type { Command } from 'commander';
import { loadConfig, type Config } from '../core/config.js';
import { readSpool, spoolPath, type SpoolRecord } from '../core/spool.js';

export interface SpoolListing {
  cluster: string;
  file: string;
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

/** One line per record, for people. */
export function listSpool(config: Config, cluster?: string): string[] {
  const lines: string[] = [];
  for (const l of spoolListings(config, cluster)) {
    lines.push(`# cluster ${l.cluster}: ${l.records.length} unprotected grant(s) in ${l.file}${l.badLines.length ? ` (${l.badLines.length} undecodable line(s): ${l.badLines.join(', ')})` : ''}`);
    for (const r of l.records) {
      lines.push(`${new Date(r.at).toISOString()}  ${r.key}  class=${r.class}  holder=${r.holder}  session=${r.session}  wait=${r.waitMs}ms  token=0  id=${r.id}`);
    }
  }
  return lines;
}

export function registerSpool(program: Command): void {
  program
    .command('spool')
    .description('list the fail-open spool: grants issued without quorum (token 0), one line each, per cluster')
    .option('--cluster <name>', 'only this configured etcd cluster')
    .option('--json', 'print the records as JSON')
    .action((opts: { cluster?: string; json?: boolean }) => {
      const config = loadConfig();
      if (opts.cluster !== undefined && !config.etcd.clusters.some((c) => c.name === opts.cluster)) {
        process.stderr.write(`lockaudit: --cluster: no configured cluster "${opts.cluster}" (configured: ${config.etcd.clusters.map((c) => c.name).join(', ')})\n`);
        process.exitCode = 2;
        return;
      }
      if (opts.json) process.stdout.write(`${JSON.stringify(spoolListings(config, opts.cluster), null, 2)}\n`);
      else process.stdout.write(`${listSpool(config, opts.cluster).join('\n')}\n`);
    });
}
