// The supported runtime (issue 12.8): the suite runs on the Node.js the
// project pins, and the scripts bring that Node.js in when the system's is
// older than package.json's engines allow.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';
import { tempDir } from '../support/env.js';

const pkg = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { engines: { node: string }; devDependencies: Record<string, string> };
const pinned = readFileSync(path.join(projectRoot, '.node-version'), 'utf8').trim();
const major = (version: string): number => Number(/(\d+)/.exec(version)?.[1]);
const enginesMin = major(pkg.engines.node);

describe('Node.js runtime', () => {
  it('engines asks for a supported line (>= 22), the pinned version and @types/node match it', () => {
    assert.match(pkg.engines.node, /^>=\d+$/);
    assert.ok(enginesMin >= 22, pkg.engines.node);
    assert.ok(major(pinned) >= enginesMin, `.node-version ${pinned}`);
    assert.equal(major(pkg.devDependencies['@types/node'] ?? ''), major(pinned));
  });

  it('the suite itself runs on a Node.js that engines allows', () => {
    assert.ok(major(process.versions.node) >= enginesMin, `running on ${process.version}; engines ${pkg.engines.node}`);
  });

  it('scripts/node.sh puts the pinned Node.js first on PATH when the one found is too old', () => {
    // A project root of its own: its PATH's node is a fake "20", and .tools already holds a (fake) pinned
    // node, so only the choice is tested and nothing is downloaded.
    const root = tempDir('lockaudit-node-');
    try {
      writeFileSync(path.join(root.dir, '.node-version'), `${pinned}\n`);
      const fakeNode = (dir: string, majorLine: string, version: string): void => {
        mkdirSync(dir, { recursive: true });
        writeFileSync(path.join(dir, 'node'), `#!/bin/sh\ncase "$1" in -p) echo ${majorLine} ;; *) echo ${version} ;; esac\n`);
        chmodSync(path.join(dir, 'node'), 0o755);
      };
      const fakeBin = path.join(root.dir, 'fake-bin');
      fakeNode(fakeBin, '20', 'v20.20.2');
      fakeNode(path.join(root.dir, '.tools', `node-v${pinned}`, 'bin'), String(major(pinned)), `v${pinned}`);
      const script = `set -euo pipefail; source ${JSON.stringify(path.join(projectRoot, 'scripts', 'node.sh'))}; use_supported_node; node --version`;
      const out = execFileSync('bash', ['-c', script], { cwd: root.dir, env: { PATH: `${fakeBin}:/usr/bin:/bin`, HOME: root.dir }, encoding: 'utf8' });
      assert.equal(out.trim(), `v${pinned}`);
    } finally {
      root.remove();
    }
  });
});
