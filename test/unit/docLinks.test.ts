// Every relative link in the README and the docs resolves: the file (or
// folder) exists, and an anchor names a heading of that file, slugged as
// GitHub renders it. The README stays a first read: at most 12 000 characters.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';

const documents = [
  'README.md',
  'bench-results/HISTORY.md',
  ...readdirSync(path.join(projectRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text outside fenced code blocks. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** GitHub's anchor of each heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(markdown).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const text = (m[1] as string).replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The targets of the relative links `[text](target)` of a document's prose (inline code left out). */
function relativeLinks(markdown: string): string[] {
  const text = prose(markdown).replace(/`[^`\n]*`/g, (code) => (code.includes('](') ? '' : code));
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string).filter((t) => !/^[a-z]+:/i.test(t));
}

describe('documentation links', () => {
  it('the anchor of a heading is what GitHub makes of it', () => {
    const slugs = anchors('# Configuration\n## S3 / MinIO\n### `LOCKAUDIT_ERR_CONFIG_INVALID`\n## Notes\n## Notes\n```sh\n# not a heading\n```\n');
    assert.deepEqual([...slugs], ['configuration', 's3--minio', 'lockaudit_err_config_invalid', 'notes', 'notes-1']);
  });

  for (const doc of documents) {
    it(`every relative link in ${doc} resolves to a file and heading`, () => {
      const markdown = readFileSync(path.join(projectRoot, doc), 'utf8');
      const links = relativeLinks(markdown);
      const broken: string[] = [];
      for (const link of links) {
        const [file = '', anchor] = link.split('#');
        const target = file === '' ? path.join(projectRoot, doc) : path.resolve(projectRoot, path.dirname(doc), decodeURIComponent(file));
        if (!target.startsWith(projectRoot + path.sep)) broken.push(`${link}: outside the project`);
        else if (!existsSync(target)) broken.push(`${link}: no such file`);
        else if (anchor !== undefined && !(target.endsWith('.md') && anchors(readFileSync(target, 'utf8')).has(anchor)))
          broken.push(`${link}: no such heading`);
      }
      assert.deepEqual(broken, []);
    });
  }

  it('the README links each file of docs/ and stays under 12 000 characters', () => {
    const readme = readFileSync(path.join(projectRoot, 'README.md'), 'utf8');
    for (const doc of documents.filter((d) => d.startsWith('docs/')))
      assert.ok(
        relativeLinks(readme).some((l) => l.split('#')[0] === doc),
        `README links ${doc}`,
      );
    assert.ok(readme.length <= 12_000, `README.md has ${readme.length} characters`);
  });
});
