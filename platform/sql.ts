// The one SQL loader. Queries live in .sql files beside the module that runs
// them (reports/<report>/, exporters/sql/). Each file starts with a header
// whose `-- Parameters:` line names every {name:Type} the query binds;
// loading checks the header against the body, so a query never binds a value
// its header does not announce (and values are never concatenated).
//
// A body line `-- @include <file>` (a path from the project root) stands for
// the body of that file: a fragment several queries share (the grant filter,
// grants/filter*.sql). The fragment is checked like any file (its header
// names exactly what its body binds); the including file's header names only
// what its own lines bind, and the query binds both. A name bound by both
// must have one type. Why text inclusion rather than a ClickHouse
// parameterized view: the filter must sit inside each query's PREWHERE
// (applied before FINAL merges a grant's rows, beside each query's own
// cursor or chunk bounds) and read `grants` or `grants_by_holder`; a view
// would be a migration per change, fixed to one table, and its WHERE would
// run after FINAL — the page queries would lose what PREWHERE buys them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../core/paths.js';

export interface SqlFile {
  /** The file's path from the project root, for messages. */
  name: string;
  /** The body, includes expanded. */
  text: string;
  /** Parameter names the query binds (its own and its includes'), `db` included. */
  params: readonly string[];
  /** Each bound parameter's ClickHouse type. */
  types: Readonly<Record<string, string>>;
  /** Every file included, directly or through another include. */
  includes: readonly string[];
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*):([^}]+)\}/g;
const INCLUDE = /^\s*--\s*@include\s+(\S+)\s*$/;

/** name → type of every placeholder in `text`; throws when one name has two types. */
function placeholders(name: string, where: string, text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const m of text.matchAll(PLACEHOLDER)) {
    const [, param, type] = m as unknown as [string, string, string];
    const before = found.get(param);
    if (before !== undefined && before !== type) throw new Error(`${name}: {${param}} is ${before} and ${type} in the ${where}`);
    found.set(param, type);
  }
  return found;
}

/**
 * Parses and checks a query's text; throws naming the file when header and
 * body disagree. `include` loads the files its `-- @include` lines name
 * (default: loadSql; `seen` guards against include cycles).
 */
export function parseSql(
  name: string,
  text: string,
  include: (rel: string, seen: readonly string[]) => SqlFile = loadIncluded,
  seen: readonly string[] = [],
): SqlFile {
  const lines = text.split('\n');
  const header: string[] = [];
  for (const line of lines) {
    if (!line.startsWith('--') || INCLUDE.test(line)) break;
    header.push(line);
  }
  const declaredLine = header.find((l) => /^--\s*Parameters:/.test(l));
  if (!declaredLine) throw new Error(`${name}: the header has no "-- Parameters:" line`);
  const declared = placeholders(name, 'header', declaredLine);
  const bodyLines = lines.slice(header.length);
  const own = placeholders(name, 'body', bodyLines.filter((l) => !INCLUDE.test(l)).join('\n'));
  const undeclared = [...own.keys()].filter((p) => !declared.has(p));
  const unused = [...declared.keys()].filter((p) => !own.has(p));
  if (undeclared.length || unused.length) {
    throw new Error(`${name}: header and body disagree (not in header: ${undeclared.join(', ') || '-'}; not in body: ${unused.join(', ') || '-'})`);
  }
  for (const [p, type] of own) if (declared.get(p) !== type) throw new Error(`${name}: {${p}} is ${declared.get(p)} in the header and ${type} in the body`);
  const types = new Map(own);
  const includes: string[] = [];
  const body = bodyLines.map((line) => {
    const m = INCLUDE.exec(line);
    if (!m) return line;
    const rel = m[1] as string;
    if (rel === name || seen.includes(rel)) throw new Error(`${name}: includes ${rel}, which includes it (a cycle)`);
    const part = include(rel, [...seen, name]);
    for (const [p, type] of Object.entries(part.types)) {
      const before = types.get(p);
      if (before !== undefined && before !== type) throw new Error(`${name}: {${p}} is ${before} here and ${type} in ${rel}`);
      types.set(p, type);
    }
    includes.push(rel, ...part.includes.filter((i) => !includes.includes(i)));
    return part.text;
  });
  return {
    name,
    text: body.join('\n').trim(),
    params: [...types.keys()].sort(),
    types: Object.fromEntries(types),
    includes: [...new Set(includes)],
  };
}

const cache = new Map<string, SqlFile>();

function loadIncluded(rel: string, seen: readonly string[]): SqlFile {
  let sql = cache.get(rel);
  if (!sql) {
    sql = parseSql(rel, readFileSync(path.join(projectRoot, rel), 'utf8'), loadIncluded, seen);
    cache.set(rel, sql);
  }
  return sql;
}

/** Loads and checks <project root>/<rel> once (from the source tree, also when running from dist/), includes expanded. */
export function loadSql(rel: string): SqlFile {
  return loadIncluded(rel, []);
}
