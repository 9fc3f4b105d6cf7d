// docs/architecture.md is kept true by the code: its layer table is the one
// enforced here on every relative import (nothing upward, no cycles), every
// folder with code is in it, its sealed folders are imported only by the
// folders it names (no sideways doors), it names every prefix of the
// keyspace, and only core/keyspace.ts spells those prefixes out.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { PREFIX } from '../../core/keyspace.js';
import { projectRoot } from '../../core/paths.js';

const doc = readFileSync(path.join(projectRoot, 'docs/architecture.md'), 'utf8');

/** folder → layer, from the rows `| 2 | \`tailer/\` | … |` of the layer table. */
function layers(): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of doc.matchAll(/^\| (\d+) \| `([a-z]+)\/` \|/gm)) out.set(m[2] as string, Number(m[1]));
  return out;
}

const OUTSIDE = new Set(['node_modules', 'dist', 'test', 'ui', 'sql', 'scripts', 'docs']);

function sourceFiles(dir = projectRoot): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.') || (dir === projectRoot && OUTSIDE.has(name))) continue;
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.[cm]?[tj]s$/.test(name) && !name.endsWith('.d.ts') && dir !== projectRoot) out.push(path.relative(projectRoot, p));
  }
  return out;
}

/**
 * What a file depends on: a TypeScript file's relative imports and the .sql files it names (a path from the
 * project root, as loadSql takes it); a .sql file's `-- @include` lines. SQL is code too: an include or a load
 * that reaches into another folder is an edge the layers and the seals judge like an import.
 */
function imports(file: string): string[] {
  const src = readFileSync(path.join(projectRoot, file), 'utf8');
  if (file.endsWith('.sql')) return [...src.matchAll(/^\s*--\s*@include\s+(\S+)\s*$/gm)].map((m) => path.normalize(m[1] as string));
  const code = [...src.matchAll(/(?:import|export)\s[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) =>
    path.relative(projectRoot, path.resolve(path.dirname(path.join(projectRoot, file)), (m[1] as string).replace(/\.js$/, '.ts'))),
  );
  const sql = [...src.matchAll(/['"`]([a-z]+\/[A-Za-z0-9_./-]+\.sql)['"`]/g)].map((m) => path.normalize(m[1] as string));
  return [...code, ...sql];
}

/** Every file whose edges the layers judge: TypeScript and SQL under the layer folders. */
const codeFiles = (): string[] => [...sourceFiles().filter((f) => f.endsWith('.ts')), ...sqlFiles()];

const top = (rel: string): string => rel.split(path.sep)[0] as string;

/** folder → the folders allowed to import it, from the lines "- `tailer/` is imported only by `tailer/` and `roles/`". */
function sealed(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const m of doc.matchAll(/^- `([a-z]+)\/` is imported only by (.+)$/gm))
    out.set(m[1] as string, new Set([...(m[2] as string).matchAll(/`([a-z]+)\/`/g)].map((n) => n[1] as string)));
  return out;
}

/** Every .sql file under the layer folders (sql/ holds the append-only migrations: history, left as written). */
function sqlFiles(dir = projectRoot): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.') || (dir === projectRoot && OUTSIDE.has(name))) continue;
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sqlFiles(p));
    else if (name.endsWith('.sql')) out.push(path.relative(projectRoot, p));
  }
  return out;
}

/** The code of a file without its comments (a comment may name a key; code may not spell one). */
function codeOf(file: string): string {
  const src = readFileSync(path.join(projectRoot, file), 'utf8');
  if (file.endsWith('.sql')) return src.replace(/--.*$/gm, '');
  return src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/**
 * A string literal that is a key (or the start of one) under a prefix of the keyspace, or the end of a
 * prefix's range ('/l0', '/sys0'). Keys hold no blanks: a message naming a key in prose ("/sys/epoch deleted") is not one.
 */
const KEY_LITERAL = /(['"`])\/(?:l|q|sys)[/0][^'"`\s]*\1/;

describe('docs/architecture.md', () => {
  it('lists every folder that holds code in its layer table', () => {
    const table = layers();
    assert.ok(table.size >= 8, [...table.keys()].join(', '));
    const folders = [...new Set(sourceFiles().map(top))].sort();
    assert.deepEqual(
      folders.filter((f) => !table.has(f)),
      [],
    );
  });

  it('its layers hold: no import runs upward, and there is no cycle', () => {
    const table = layers();
    const files = codeFiles();
    const edges = new Map(files.map((f) => [f, imports(f)]));
    const sqlEdges = [...edges].filter(([f, targets]) => f.endsWith('.sql') && targets.length > 0);
    assert.ok(sqlEdges.length > 5, `follows -- @include edges (${sqlEdges.length} files include another)`);
    const upward = [...edges].flatMap(([f, targets]) =>
      targets.filter((t) => (table.get(top(t)) ?? -1) > (table.get(top(f)) ?? Infinity)).map((t) => `${f} -> ${t}`),
    );
    assert.deepEqual(upward, []);
    const state = new Map<string, 1 | 2>();
    const cycles: string[] = [];
    const stack: string[] = [];
    const visit = (n: string): void => {
      state.set(n, 1);
      stack.push(n);
      for (const m of edges.get(n) ?? []) {
        if (!edges.has(m)) continue;
        if (state.get(m) === 1) cycles.push([...stack.slice(stack.indexOf(m)), m].join(' -> '));
        else if (!state.has(m)) visit(m);
      }
      stack.pop();
      state.set(n, 2);
    };
    for (const n of edges.keys()) if (!state.has(n)) visit(n);
    assert.deepEqual(cycles, []);
  });

  it('its sealed folders are imported only by the folders it names', () => {
    const rules = sealed();
    assert.ok(rules.get('tailer')?.has('roles'), 'the doc seals tailer/ (imported only by tailer/ and roles/)');
    const doors = codeFiles().flatMap((f) =>
      imports(f)
        .filter((t) => rules.has(top(t)) && top(t) !== top(f) && !rules.get(top(t))?.has(top(f)))
        .map((t) => `${f} -> ${t}`),
    );
    assert.deepEqual(doors, []);
  });

  it('the API reaches the lock engine through lock/service.ts only', () => {
    const door = path.join('lock', 'service.ts');
    const reached = sourceFiles()
      .filter((f) => top(f) === 'api' && f.endsWith('.ts'))
      .flatMap((f) => imports(f).map((t) => [f, t] as const));
    assert.ok(
      reached.some(([, t]) => t === door),
      'the routes import the lock service',
    );
    assert.deepEqual(
      reached.filter(([, t]) => top(t) === 'lock' && t !== door).map(([f, t]) => `${f} -> ${t}`),
      [],
    );
  });

  it('spells the keyspace prefixes in core/keyspace.ts only', () => {
    assert.ok(
      KEY_LITERAL.test(`x = '/sys/epoch'`) &&
        KEY_LITERAL.test('end: "/l0"') &&
        KEY_LITERAL.test('`/q/${lock}`') &&
        KEY_LITERAL.test(`startsWith(key, '/sys/class/')`),
    );
    assert.ok(!KEY_LITERAL.test(`PREFIX.hold + '/x'`) && !KEY_LITERAL.test(`'/sys/epoch deleted'`));
    const files = [...sourceFiles().filter((f) => f.endsWith('.ts')), ...sqlFiles()].filter((f) => f !== path.join('core', 'keyspace.ts'));
    assert.ok(files.some((f) => f.endsWith('.sql')) && files.length > 100, `scanned ${files.length} files`);
    const spelled = files.flatMap((f) =>
      codeOf(f)
        .split('\n')
        .filter((line) => KEY_LITERAL.test(line))
        .map((line) => `${f}: ${line.trim()}`),
    );
    assert.deepEqual(spelled, []);
  });

  it('names every prefix of the keyspace and links the catalogs', () => {
    for (const prefix of Object.values(PREFIX)) assert.ok(doc.includes(`\`${prefix}`), `the keyspace table names ${prefix}`);
    for (const file of ['core/errors.ts', 'platform/alarms.ts', 'core/config.ts', 'core/keyspace.ts']) assert.ok(doc.includes(`\`${file}\``), `names ${file}`);
  });

  it("cites nothing outside the repository: the design the code relies on is in docs/, in the project's own words", () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: projectRoot, encoding: 'utf8' })
      .split('\n')
      .filter((f) => /\.(ts|mjs|js|sql|md|json|ya?ml|sh|html|css)$/.test(f));
    assert.ok(tracked.length > 300, `scanned ${tracked.length} files`);
    // Spelled apart so this file does not cite them itself.
    const outside = [
      ['DESIGN', '.md'],
      ['STYLE', '.md'],
      ['../', 'shared/'],
      ['shared/', 'seeds'],
    ].map((parts) => parts.join(''));
    const cites = tracked.flatMap((f) => {
      const text = readFileSync(path.join(projectRoot, f), 'utf8');
      return outside.filter((o) => text.includes(o)).map((o) => `${f}: ${o}`);
    });
    assert.deepEqual(cites, []);
  });

  it('is what the README links to', () => {
    const readme = readFileSync(path.join(projectRoot, 'README.md'), 'utf8');
    assert.ok(readme.includes('](docs/architecture.md)'));
    assert.ok(!readme.includes(['..', 'shared', ''].join('/')), 'the README links nothing outside the project');
  });
});
