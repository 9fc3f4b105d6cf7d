// The one SQL loader. Queries live in .sql files beside the module that runs
// them (reports/<report>/, exporters/sql/). Each file starts with a header
// whose `-- Parameters:` line names every {name:Type} the query binds;
// loading checks the header against the body, so a query never binds a value
// its header does not announce (and values are never concatenated).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../core/paths.js';

export interface SqlFile {
  /** The file's path from the project root, for messages. */
  name: string;
  text: string;
  /** Parameter names the query binds, `db` included. */
  params: readonly string[];
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*):([^}]+)\}/g;

/** Parses and checks a report query's text; throws naming the file when header and body disagree. */
export function parseSql(name: string, text: string): SqlFile {
  const lines = text.split('\n');
  const header: string[] = [];
  for (const line of lines) {
    if (!line.startsWith('--')) break;
    header.push(line);
  }
  const declaredLine = header.find((l) => /^--\s*Parameters:/.test(l));
  if (!declaredLine) throw new Error(`${name}: the header has no "-- Parameters:" line`);
  const declared = new Set([...declaredLine.matchAll(PLACEHOLDER)].map((m) => m[1] as string));
  const body = lines.slice(header.length).join('\n');
  const used = new Set([...body.matchAll(PLACEHOLDER)].map((m) => m[1] as string));
  const undeclared = [...used].filter((p) => !declared.has(p));
  const unused = [...declared].filter((p) => !used.has(p));
  if (undeclared.length || unused.length) {
    throw new Error(`${name}: header and body disagree (not in header: ${undeclared.join(', ') || '-'}; not in body: ${unused.join(', ') || '-'})`);
  }
  return { name, text: body.trim(), params: [...used].sort() };
}

const cache = new Map<string, SqlFile>();

/** Loads and checks <project root>/<rel> once (from the source tree, also when running from dist/). */
export function loadSql(rel: string): SqlFile {
  let sql = cache.get(rel);
  if (!sql) {
    sql = parseSql(rel, readFileSync(path.join(projectRoot, rel), 'utf8'));
    cache.set(rel, sql);
  }
  return sql;
}
