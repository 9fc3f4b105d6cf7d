// Every query file (reports/**/*.sql, exporters/sql/*.sql) and every file the
// code loads through loadSql names exactly its parameters in its header, binds
// its tables through {db:Identifier} and is loaded by some code.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';
import { loadSql, parseSql } from '../../platform/sql.js';

const QUERY_DIRS = ['reports', 'exporters/sql'];
const SOURCE_DIRS = ['core', 'platform', 'lock', 'tailer', 'reports', 'exporters', 'api', 'roles', 'cli'];

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

describe('SQL files', () => {
  it('every query file and every file the code loads names exactly its parameters in its header', () => {
    const files = new Set([...QUERY_DIRS.flatMap((d) => filesUnder(d, '.sql')), ...loadedByCode()]);
    assert.ok(files.size >= 20, [...files].join(', '));
    assert.ok([...files].some((f) => f.startsWith('exporters/sql/')), 'exporters/sql is checked');
    for (const f of files) {
      const sql = loadSql(f);
      assert.ok(sql.params.includes('db'), `${f} names its tables through {db:Identifier}`);
      assert.ok(!/\$\{/.test(sql.text), `${f}: no template interpolation`);
    }
  });

  it('every query file is loaded by some code', () => {
    const loaded = loadedByCode();
    assert.deepEqual(QUERY_DIRS.flatMap((d) => filesUnder(d, '.sql')).filter((f) => !loaded.has(f)), []);
  });

  it('rejects a header that does not match the body', () => {
    assert.throws(() => parseSql('x.sql', 'SELECT {a:String}'), /no "-- Parameters:"/);
    assert.throws(() => parseSql('x.sql', '-- Parameters: {a:String}\nSELECT {b:String}'), /not in header: b; not in body: a/);
    assert.deepEqual(parseSql('x.sql', '-- q\n-- Parameters: {a:String} {db:Identifier}\nSELECT {a:String} FROM {db:Identifier}.t').params, ['a', 'db']);
  });
});
