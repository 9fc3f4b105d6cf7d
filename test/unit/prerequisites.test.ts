// A newcomer's first hour (issue 12.6): the README's commands install what they
// need, as .ci/run does: scripts/prerequisites.sh, on a fake machine (PATH of
// stand-ins: a node new enough, an apt-get that records what it was asked, an
// `id` that says who runs it) so nothing is really installed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';
import { tempDir } from '../support/env.js';

interface Machine {
  uid: number;
  redis: boolean;
  chromium: boolean;
}

function run(machine: Machine, args: string): { status: number | null; stderr: string; aptCalls: string[] } {
  const root = tempDir('lockaudit-prereq-');
  try {
    const bin = path.join(root.dir, 'bin');
    mkdirSync(bin);
    mkdirSync(path.join(root.dir, 'node_modules'));
    writeFileSync(path.join(root.dir, '.node-version'), readFileSync(path.join(projectRoot, '.node-version')));
    const aptLog = path.join(root.dir, 'apt.log');
    const script = (name: string, body: string): void => {
      writeFileSync(path.join(bin, name), `#!/bin/sh\n${body}\n`);
      chmodSync(path.join(bin, name), 0o755);
    };
    script('node', 'case "$1" in -p) echo 24 ;; *) echo v24.0.0 ;; esac');
    script('id', `echo ${machine.uid}`);
    script('apt-get', `echo "$*" >> ${JSON.stringify(aptLog)}`);
    if (machine.redis) script('redis-server', 'exit 0');
    const chromium = path.join(bin, 'chromium');
    if (machine.chromium) script('chromium', 'exit 0');
    for (const tool of ['tr', 'env']) symlinkSync(`/usr/bin/${tool}`, path.join(bin, tool));
    // Sourced from the project root (its `source` lines are relative), run in the fake machine's root.
    const body = `set -euo pipefail; cd ${JSON.stringify(projectRoot)}; source scripts/prerequisites.sh; cd ${JSON.stringify(root.dir)}; install_prerequisites ${args}`;
    const res = spawnSync('/bin/bash', ['-c', body], {
      env: { PATH: bin, HOME: root.dir, PREREQ_CHROMIUM: chromium },
      encoding: 'utf8',
    });
    const aptCalls = existsSync(aptLog) ? readFileSync(aptLog, 'utf8').trim().split('\n') : [];
    return { status: res.status, stderr: res.stderr, aptCalls };
  } finally {
    root.remove();
  }
}

describe('scripts/prerequisites.sh', () => {
  it('as root, installs redis-server and chromium from Debian when both are missing', () => {
    const r = run({ uid: 0, redis: false, chromium: false }, '--browser');
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(r.aptCalls, ['update -qq', 'install -y -qq --no-install-recommends redis-server chromium']);
  });

  it('installs nothing that is already there, and chromium only for the browser tests', () => {
    assert.deepEqual(run({ uid: 0, redis: true, chromium: true }, '--browser').aptCalls, []);
    assert.deepEqual(run({ uid: 0, redis: true, chromium: false }, '').aptCalls, []);
  });

  it('not root and no sudo: fails with one line naming what is missing and the command to run', () => {
    const r = run({ uid: 1000, redis: true, chromium: false }, '--browser');
    assert.equal(r.status, 1);
    assert.deepEqual(r.aptCalls, []);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0] ?? '', /chromium missing .*sudo apt-get install -y --no-install-recommends chromium$/);
  });
});
