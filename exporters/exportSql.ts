// Exporter SQL lives in exporters/sql/*.sql. Each file starts with a header
// whose `-- Parameters:` line names every {name:Type} it binds; loading checks
// header against body, so values are always bound, never concatenated.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../core/paths.js';

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*):([^}]+)\}/g;
const cache = new Map<string, string>();

/** The body of exporters/sql/<name>.sql, checked against its header. */
export function exportSql(name: string): string {
  const cached = cache.get(name);
  if (cached !== undefined) return cached;
  const rel = path.join('exporters', 'sql', `${name}.sql`);
  const lines = readFileSync(path.join(projectRoot, rel), 'utf8').split('\n');
  const headerEnd = lines.findIndex((l) => !l.startsWith('--'));
  const header = lines.slice(0, headerEnd);
  const declaredLine = header.find((l) => /^--\s*Parameters:/.test(l));
  if (!declaredLine) throw new Error(`${rel}: the header has no "-- Parameters:" line`);
  const declared = new Set([...declaredLine.matchAll(PLACEHOLDER)].map((m) => m[1] as string));
  const body = lines.slice(headerEnd).join('\n').trim();
  const used = new Set([...body.matchAll(PLACEHOLDER)].map((m) => m[1] as string));
  const mismatch = [...used].filter((p) => !declared.has(p)).concat([...declared].filter((p) => !used.has(p)));
  if (mismatch.length) throw new Error(`${rel}: header and body disagree on ${mismatch.join(', ')}`);
  cache.set(name, body);
  return body;
}
