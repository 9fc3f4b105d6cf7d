// Where the project's own files are, whether running from source (tsx) or dist/.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(start: string): string {
  let dir = start;
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'lockaudit') return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`lockaudit: cannot find the project root above ${start}`);
    dir = parent;
  }
}

export const projectRoot = findRoot(path.dirname(fileURLToPath(import.meta.url)));
export const sqlDir = path.join(projectRoot, 'sql');
export const toolsDir = path.join(projectRoot, '.tools');
