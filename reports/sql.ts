// Report SQL lives in .sql files beside each report module. Each file starts
// with a header whose `-- Parameters:` line names every {name:Type} the query
// binds; loading checks the header against the body, so a query never binds a
// value its header does not announce (and values are never concatenated).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../core/paths.js';

export interface SqlFile {
  /** reports/<module>/<file>, for messages. */
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

/** Loads reports/<module>/<file>.sql (from the source tree, also when running from dist/). */
export function loadSql(module: string, file: string): SqlFile {
  const rel = path.join('reports', module, file);
  return parseSql(rel, readFileSync(path.join(projectRoot, rel), 'utf8'));
}
