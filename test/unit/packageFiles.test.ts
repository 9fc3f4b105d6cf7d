// The package runs: every SQL file the code loads at run time (platform/sql.ts reads them beside the compiled
// code, by their path in the tree) is in what `npm pack` ships. Before: package.json `files` named some folders
// by hand and missed tailer/sql and exporters/alerts, so an installed lockaudit failed when it loaded the tailer.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';

const SKIP = new Set(['node_modules', 'test', 'dist', '.git', '.tools', 'test-artifacts', 'bench-results']);

function sqlFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name) || name.startsWith('.')) continue;
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) sqlFiles(full, out);
    else if (name.endsWith('.sql')) out.push(path.relative(projectRoot, full).split(path.sep).join('/'));
  }
  return out;
}

describe('the npm package', () => {
  it('ships every SQL file the code loads, and no test', () => {
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: projectRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }),
    ) as Array<{ files: Array<{ path: string }> }>;
    const files = new Set(packed[0]?.files.map((f) => f.path));
    const wanted = sqlFiles(projectRoot);
    assert.ok(wanted.length > 100, `found ${wanted.length} SQL files`);
    assert.deepEqual(
      wanted.filter((f) => !files.has(f)),
      [],
      'SQL files the package does not ship',
    );
    assert.deepEqual(
      [...files].filter((f) => f.startsWith('test/')),
      [],
      'tests are not shipped',
    );
  });
});
