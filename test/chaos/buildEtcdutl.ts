// Builds etcdutl (snapshot status/restore), which .tools/bin lacks, the way
// services/install.ts builds etcd: from the Go module proxy at the pinned
// etcd version, through a throw-away copy of services/etcd-build. The binary
// goes to .chaos-tools/etcdutl (or $CHAOS_ETCDUTL), outside the shared .tools.
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../core/paths.js';
import { PINNED } from '../../services/install.js';
import { etcdutlPath } from './stack.js';

const run = promisify(execFile);

export async function ensureEtcdutl(log: (m: string) => void = () => {}): Promise<string> {
  const target = etcdutlPath();
  if (existsSync(target)) return target;
  const dir = mkdtempSync(path.join(tmpdir(), 'etcdutl-build-'));
  try {
    const source = path.join(projectRoot, 'services', 'etcd-build');
    for (const f of readdirSync(source)) copyFileSync(path.join(source, f), path.join(dir, f));
    const env = { ...process.env, GOFLAGS: '-mod=mod', CGO_ENABLED: '0' };
    log(`building etcdutl ${PINNED.etcd} (first time only)…`);
    // Pin it: without the `go get`, Go would resolve the newest etcdutl, whose restore a 3.6 server may not read.
    await run('go', ['get', `go.etcd.io/etcd/etcdutl/v3@${PINNED.etcd}`], { cwd: dir, env, maxBuffer: 64 * 1024 * 1024 });
    await run('go', ['build', '-trimpath', '-o', target, 'go.etcd.io/etcd/etcdutl/v3'], { cwd: dir, env, maxBuffer: 64 * 1024 * 1024 });
    return target;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await ensureEtcdutl((m) => console.error(m)));
}
