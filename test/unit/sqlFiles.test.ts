// Every query file (reports/**/*.sql, exporters/sql/*.sql) and every file the
// code loads through loadSql names exactly its parameters in its header, binds
// its tables through {db:Identifier} and is loaded by some code; a fragment
// (a file other files `-- @include`) is checked the same way and included by
// a loaded query. Every query over grants that filters them includes the one
// grant filter (grants/filter*.sql), and no other file restates it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';
import { loadSql, parseSql, type SqlFile } from '../../platform/sql.js';
import { GRANT_FILTER_SQL } from '../../grants/filter.js';

const QUERY_DIRS = ['grants', 'reports', 'exporters/sql'];
const SOURCE_DIRS = ['core', 'platform', 'grants', 'lock', 'tailer', 'reports', 'exporters', 'api', 'roles', 'cli'];

const filesUnder = (dir: string, ext: string): string[] =>
  readdirSync(path.join(projectRoot, dir), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(ext))
    .map((f) => path.posix.join(dir, f.split(path.sep).join('/')));

/** The paths the code passes to loadSql as string literals. */
function loadedByCode(): Set<string> {
  const loaded = new Set<string>();
  for (const file of SOURCE_DIRS.flatMap((d) => filesUnder(d, '.ts'))) {
    for (const m of readFileSync(path.join(projectRoot, file), 'utf8').matchAll(/loadSql\('([^']+)'\)/g)) loaded.add(m[1] as string);
  }
  return loaded;
}

/** Files some loaded query includes, directly or not. */
function includedByLoaded(): Set<string> {
  return new Set([...loadedByCode()].flatMap((f) => loadSql(f).includes));
}

describe('SQL files', () => {
  it('every query file and every file the code loads names exactly its parameters in its header', () => {
    const files = new Set([...QUERY_DIRS.flatMap((d) => filesUnder(d, '.sql')), ...loadedByCode()]);
    const fragments = includedByLoaded();
    assert.ok(files.size >= 20, [...files].join(', '));
    assert.ok(
      [...files].some((f) => f.startsWith('exporters/sql/')),
      'exporters/sql is checked',
    );
    for (const f of files) {
      const sql = loadSql(f);
      if (!fragments.has(f)) assert.ok(sql.params.includes('db'), `${f} names its tables through {db:Identifier}`);
      assert.ok(!/\$\{/.test(sql.text), `${f}: no template interpolation`);
      assert.ok(!/@include/.test(sql.text), `${f}: every include is expanded`);
    }
  });

  it('every query file is loaded by some code, or included by a query that is', () => {
    const loaded = new Set([...loadedByCode(), ...includedByLoaded()]);
    assert.deepEqual(
      QUERY_DIRS.flatMap((d) => filesUnder(d, '.sql')).filter((f) => !loaded.has(f)),
      [],
    );
  });

  it('every query that filters grants includes the one grant filter, and no other file restates it', () => {
    const grantFilter = new Set<string>(GRANT_FILTER_SQL);
    // A query reads grants (or grants_by_holder, or a {source} chosen between them) and binds a filter of grant history.
    const readsGrants = (sql: SqlFile) => /FROM \{db:Identifier\}\.(grants|grants_by_holder|\{source:Identifier\})\s/.test(sql.text);
    const filtersGrants = (sql: SqlFile) => ['keyPrefix', 'holder', 'endKind', 'origin', 'hasToken'].some((p) => sql.params.includes(p));
    const queries = [...loadedByCode()].filter((f) => !grantFilter.has(f)).map(loadSql);
    const grantQueries = queries
      .filter((q) => readsGrants(q) && filtersGrants(q))
      .map((q) => q.name)
      .sort();
    // The views of grant history: the API's pages (JSON/CSV, Arrow and its page end), the timeline's lanes, the exports and their plans.
    for (const f of [
      'reports/grantHistory/history.sql',
      'reports/grantHistory/pageEnd.sql',
      'reports/grantHistory/historyArrow.sql',
      'reports/timeline/lanes.sql',
      'exporters/sql/grants_export.sql',
      'exporters/sql/grants_chunks.sql',
    ]) {
      assert.ok(grantQueries.includes(f), `${f} is a grant query (found: ${grantQueries.join(', ')})`);
    }
    for (const f of grantQueries)
      assert.deepEqual(
        loadSql(f)
          .includes.filter((i) => grantFilter.has(i))
          .sort(),
        [...grantFilter].sort(),
        `${f} includes ${[...grantFilter].join(' and ')}`,
      );
    // The filter's conditions stand in the fragments only: a query that restates one (in its own lines) has drifted.
    const conditions = [
      /startsWith\(key, \{keyPrefix:String\}\)/,
      /holder = \{holder:String\}/,
      /origin = \{origin:String\}/,
      /end_kind = if\(\{endKind:String\}/,
    ];
    // (grants/filterEvents.sql is the same filter as events read it: a fragment of the filter's own.)
    for (const f of [...QUERY_DIRS.flatMap((d) => filesUnder(d, '.sql'))].filter((x) => !x.startsWith('grants/filter'))) {
      const own = readFileSync(path.join(projectRoot, f), 'utf8');
      for (const c of conditions) assert.ok(!c.test(own), `${f} restates the grant filter (${c.source}); include grants/filter*.sql instead`);
    }
  });

  it("expands -- @include with the included file's parameters, checked like any header", () => {
    const files: Record<string, string> = {
      'f.sql': '-- a fragment\n-- Parameters: {a:String} {n:Int64}\nx = {a:String} AND y < {n:Int64}',
      'bad.sql': '-- Parameters: {a:String}\nx = {b:String}',
      'typed.sql': '-- Parameters: {n:UInt64}\nz = {n:UInt64}',
      'loop.sql': '-- Parameters: {a:String}\nx = {a:String}\n-- @include loop2.sql',
      'loop2.sql': '-- Parameters: {a:String}\ny = {a:String}\n-- @include loop.sql',
    };
    const include = (rel: string, seen: readonly string[]): SqlFile => parseSql(rel, files[rel] as string, include, seen);
    const q = parseSql(
      'q.sql',
      '-- q\n-- Parameters: {db:Identifier} {n:Int64}\nSELECT 1 FROM {db:Identifier}.t\nWHERE\n-- @include f.sql\n    AND z > {n:Int64}',
      include,
    );
    assert.deepEqual(q.params, ['a', 'db', 'n']);
    assert.deepEqual(q.includes, ['f.sql']);
    assert.equal(q.text, 'SELECT 1 FROM {db:Identifier}.t\nWHERE\nx = {a:String} AND y < {n:Int64}\n    AND z > {n:Int64}');
    // The includer's header names what its own lines bind, not the fragment's.
    assert.throws(
      () => parseSql('q.sql', '-- Parameters: {db:Identifier} {a:String}\nSELECT {db:Identifier}\n-- @include f.sql', include),
      /q\.sql: header and body disagree \(not in header: -; not in body: a\)/,
    );
    assert.throws(
      () => parseSql('q.sql', '-- Parameters: {db:Identifier}\nSELECT {db:Identifier}\n-- @include bad.sql', include),
      /bad\.sql: header and body disagree/,
    );
    assert.throws(
      () => parseSql('q.sql', '-- Parameters: {n:Int64}\nSELECT {n:Int64}\n-- @include typed.sql', include),
      /\{n\} is Int64 here and UInt64 in typed\.sql/,
    );
    assert.throws(() => parseSql('loop.sql', files['loop.sql'] as string, include), /a cycle/);
    assert.throws(() => parseSql('x.sql', '-- Parameters: {n:Int64}\nSELECT {n:UInt64}'), /\{n\} is Int64 in the header and UInt64 in the body/);
  });

  it('rejects a header that does not match the body', () => {
    assert.throws(() => parseSql('x.sql', 'SELECT {a:String}'), /no "-- Parameters:"/);
    assert.throws(() => parseSql('x.sql', '-- Parameters: {a:String}\nSELECT {b:String}'), /not in header: b; not in body: a/);
    assert.deepEqual(parseSql('x.sql', '-- q\n-- Parameters: {a:String} {db:Identifier}\nSELECT {a:String} FROM {db:Identifier}.t').params, ['a', 'db']);
  });
});
