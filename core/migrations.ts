// Numbered, append-only migrations from sql/, recorded in a ledger table.
// Running twice changes nothing; an edited applied migration is an error.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { AuditStore } from './clickhouse.js';
import { LockauditError } from './errors.js';
import { sqlDir } from './paths.js';

export interface Migration {
  version: number;
  name: string;
  checksum: string;
  statements: string[];
}

const FILE_PATTERN = /^(\d{3})_([a-z0-9_]+)\.sql$/;

/** Splits a migration file into statements: each ends with `;` at the end of a line. */
export function splitStatements(sql: string): string[] {
  const withoutComments = sql
    .split('\n')
    .map((line) => (line.trimStart().startsWith('--') ? '' : line))
    .join('\n');
  return withoutComments
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * Rewrites a single-node statement for a ClickHouse cluster: ON CLUSTER after
 * the object name (after the last pair of a RENAME) and Replicated* engines (their ZooKeeper path comes from the
 * server's default_replica_path). `cluster` is validated by the config schema.
 */
export function forCluster(statement: string, cluster: string): string {
  return statement
    .replace(/^(CREATE\s+(?:DATABASE|TABLE|VIEW|MATERIALIZED\s+VIEW)\s+IF\s+NOT\s+EXISTS\s+\S+)/i, `$1 ON CLUSTER ${cluster}`)
    .replace(/^(ALTER\s+TABLE\s+\S+)/i, `$1 ON CLUSTER ${cluster}`)
    .replace(/^(RENAME\s+TABLE\s[\s\S]*)$/i, `$1 ON CLUSTER ${cluster}`)
    .replace(
      /ENGINE\s*=\s*(Replacing|Summing|Aggregating|Collapsing)?MergeTree/g,
      (_m, kind: string | undefined) => `ENGINE = Replicated${kind ?? ''}MergeTree`,
    );
}

export function loadMigrations(dir = sqlDir): Migration[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = FILE_PATTERN.exec(file);
    if (!match) throw new LockauditError('LOCKAUDIT_ERR_MIGRATION_FAILED', `sql/${file}: migration files are named NNN_name.sql`);
    const text = readFileSync(path.join(dir, file), 'utf8');
    const version = Number(match[1]);
    if (migrations.some((m) => m.version === version))
      throw new LockauditError('LOCKAUDIT_ERR_MIGRATION_FAILED', `sql/${file}: version ${version} is used twice`);
    migrations.push({ version, name: match[2] as string, checksum: createHash('sha256').update(text).digest('hex'), statements: splitStatements(text) });
  }
  return migrations;
}

/**
 * Applied migrations whose comments alone were reworded after they were applied (they cited a design file outside
 * the project): the ledger's checksum of the file as it was is accepted while its statements (comments stripped)
 * are exactly these. Any change to a statement still fails as LOCKAUDIT_ERR_MIGRATION_CHANGED.
 */
const COMMENTS_REWORDED: Record<number, { before: string; statements: string }> = {
  51: {
    before: 'b57f873f51ffc768f8869476aba26b53f17094fec5f63f7d8839b6757f7f2d95',
    statements: 'ad1d22b40f5df98e5613f910ffe654f102795894c84942feb6dec3976c79eb1b',
  },
  65: {
    before: '390a912c4241f2b2902e34323a7f91c11422685f50092e40e06e9b1622ee980e',
    statements: 'd39e73897af99c5d18cb8bf21468b89f0da9bafa1859e11072e8af07de31551e',
  },
};

const LEDGER_DDL = `CREATE TABLE IF NOT EXISTS {db:Identifier}.schema_migrations
(version UInt32, name String, checksum String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3))
ENGINE = ReplacingMergeTree(applied_at) ORDER BY version`;

export interface MigrateResult {
  applied: Migration[];
  alreadyApplied: number;
}

const DATABASE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * `{db:Name}`: the database spelled into the statement, for the few places
 * where ClickHouse binds no query parameter (`CREATE TABLE … AS <table>`,
 * `ATTACH PARTITION … FROM <table>`). Everywhere else migrations bind
 * `{db:Identifier}`. Only a name the config schema's pattern allows is spelled.
 */
export function inlineDatabase(statement: string, database: string): string {
  if (!statement.includes('{db:Name}')) return statement;
  if (!DATABASE_NAME.test(database))
    throw new LockauditError('LOCKAUDIT_ERR_MIGRATION_FAILED', `database name ${JSON.stringify(database)} cannot be spelled into a statement`);
  return statement.replaceAll('{db:Name}', `\`${database}\``);
}

export async function migrate(store: AuditStore, options: { dir?: string; onApply?: (m: Migration) => void } = {}): Promise<MigrateResult> {
  const cluster = store.target.mode === 'server' ? store.target.cluster : undefined;
  const prepare = (sql: string): string => inlineDatabase(cluster ? forCluster(sql, cluster) : sql, store.database);
  await store.command(prepare('CREATE DATABASE IF NOT EXISTS {db:Identifier}'));
  await store.command(prepare(LEDGER_DDL));
  const done = await store.rows<{ version: number; checksum: string }>(
    'SELECT version, checksum FROM {db:Identifier}.schema_migrations FINAL ORDER BY version',
  );
  const applied = new Map(done.map((r) => [Number(r.version), r.checksum]));
  const statementsHash = (m: Migration): string => createHash('sha256').update(JSON.stringify(m.statements)).digest('hex');
  const result: MigrateResult = { applied: [], alreadyApplied: 0 };
  for (const m of loadMigrations(options.dir)) {
    const previous = applied.get(m.version);
    if (previous !== undefined) {
      const reworded = COMMENTS_REWORDED[m.version];
      const sameStatements = reworded !== undefined && previous === reworded.before && statementsHash(m) === reworded.statements;
      if (previous !== m.checksum && !sameStatements) {
        throw new LockauditError(
          'LOCKAUDIT_ERR_MIGRATION_CHANGED',
          `migration ${m.version}_${m.name} was changed after it was applied; add a new migration instead`,
        );
      }
      result.alreadyApplied += 1;
      continue;
    }
    for (const statement of m.statements) {
      try {
        await store.command(prepare(statement));
      } catch (err) {
        throw new LockauditError('LOCKAUDIT_ERR_MIGRATION_FAILED', `migration ${m.version}_${m.name} failed: ${(err as Error).message}`, { cause: err });
      }
    }
    await store.insert('schema_migrations', [{ version: m.version, name: m.name, checksum: m.checksum }]);
    options.onApply?.(m);
    result.applied.push(m);
  }
  return result;
}
