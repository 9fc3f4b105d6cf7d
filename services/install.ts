// Installs the local servers into .tools/bin: etcd 3.6 and MinIO built from the
// Go module proxy (pinned), redis-server from Debian; and promtool (Prometheus'
// rule checker, for the rules and dashboard under deploy/), built the same way. A second run builds
// nothing: each binary is stamped with the version it was built from.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { LockauditError } from '../core/errors.js';
import { projectRoot, toolsDir } from '../core/paths.js';

const run = promisify(execFile);

/** Pinned versions. etcd: the 3.6 line the seeds specify; MinIO: source-only, pinned by pseudo-version. */
export const PINNED = {
  etcd: 'v3.6.16',
  minio: 'v0.0.0-20260212201848-7aac2a2c5b7c',
  /** Prometheus 3.16.0: its Go module is tagged v0.316.0 (v3 tags are not Go-module versions). */
  promtool: 'v0.316.0',
} as const;

export const binDir = path.join(toolsDir, 'bin');
export const binaries = {
  etcd: path.join(binDir, 'etcd'),
  etcdctl: path.join(binDir, 'etcdctl'),
  /** Offline snapshot restore (the restore tests, and operators' drills). */
  etcdutl: path.join(binDir, 'etcdutl'),
  minio: path.join(binDir, 'minio'),
  /** `promtool check rules` / `test rules` for deploy/prometheus and deploy/grafana (npm test). */
  promtool: path.join(binDir, 'promtool'),
} as const;

export type Progress = (message: string) => void;

function stampPath(name: string): string {
  return path.join(binDir, `.${name}.version`);
}

function isCurrent(name: keyof typeof PINNED, files: string[]): boolean {
  const stamp = stampPath(name);
  return files.every((f) => existsSync(f)) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === PINNED[name];
}

async function goBuild(args: string[], cwd: string, what: string): Promise<void> {
  try {
    await run('go', args, { cwd, env: { ...process.env, GOBIN: binDir, GOFLAGS: '-mod=mod', CGO_ENABLED: '0' }, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const e = err as Error & { stderr?: string; code?: string };
    const hint = e.code === 'ENOENT' ? 'the go command is not on PATH (install Go 1.24+)' : (e.stderr ?? e.message).trim().split('\n').slice(-5).join('\n');
    throw new LockauditError('LOCKAUDIT_ERR_SERVICES_BUILD', `building ${what} failed: ${hint}`, { cause: err });
  }
}

export async function ensureEtcd(progress: Progress = () => {}): Promise<void> {
  // etcd's main modules carry replace directives, so `go install pkg@v` refuses
  // them; a throw-away module that requires them (services/etcd-build) builds them.
  const moduleDir = path.join(projectRoot, 'services', 'etcd-build');
  if (isCurrent('etcd', [binaries.etcd, binaries.etcdctl])) {
    // etcdutl came later: build it alone rather than rebuild a current etcd.
    if (!existsSync(binaries.etcdutl)) await goBuild(['build', '-trimpath', '-o', binaries.etcdutl, 'go.etcd.io/etcd/etcdutl/v3'], moduleDir, 'etcdutl');
    return;
  }
  mkdirSync(binDir, { recursive: true });
  const started = Date.now();
  progress(`building etcd ${PINNED.etcd} from the Go module proxy (first time only, ~2 min)…`);
  await goBuild(['build', '-trimpath', '-o', binaries.etcd, 'go.etcd.io/etcd/server/v3'], moduleDir, 'etcd');
  await goBuild(['build', '-trimpath', '-o', binaries.etcdctl, 'go.etcd.io/etcd/etcdctl/v3'], moduleDir, 'etcdctl');
  await goBuild(['build', '-trimpath', '-o', binaries.etcdutl, 'go.etcd.io/etcd/etcdutl/v3'], moduleDir, 'etcdutl');
  writeFileSync(stampPath('etcd'), PINNED.etcd);
  progress(`etcd built in ${Math.round((Date.now() - started) / 1000)} s`);
}

export async function ensureMinio(progress: Progress = () => {}): Promise<void> {
  if (isCurrent('minio', [binaries.minio])) return;
  mkdirSync(binDir, { recursive: true });
  const started = Date.now();
  progress(`building MinIO ${PINNED.minio} with go install (first time only, ~3-5 min)…`);
  await goBuild(['install', '-trimpath', `github.com/minio/minio@${PINNED.minio}`], projectRoot, 'MinIO');
  writeFileSync(stampPath('minio'), PINNED.minio);
  progress(`MinIO built in ${Math.round((Date.now() - started) / 1000)} s`);
}

/** promtool: no replace or exclude directives in Prometheus' go.mod, so plain `go install` builds it. */
export async function ensurePromtool(progress: Progress = () => {}): Promise<string> {
  if (isCurrent('promtool', [binaries.promtool])) return binaries.promtool;
  mkdirSync(binDir, { recursive: true });
  const started = Date.now();
  progress(`building promtool (Prometheus ${PINNED.promtool}) with go install (first time only: 5 min on a quiet machine, 38 on a busy 2-core one)…`);
  await goBuild(['install', '-trimpath', `github.com/prometheus/prometheus/cmd/promtool@${PINNED.promtool}`], projectRoot, 'promtool');
  writeFileSync(stampPath('promtool'), PINNED.promtool);
  progress(`promtool built in ${Math.round((Date.now() - started) / 1000)} s`);
  return binaries.promtool;
}

export async function findRedisServer(): Promise<string | undefined> {
  for (const candidate of ['/usr/bin/redis-server', '/usr/local/bin/redis-server']) if (existsSync(candidate)) return candidate;
  try {
    const { stdout } = await run('sh', ['-c', 'command -v redis-server']);
    return stdout.trim() || undefined;
  } catch {
    return undefined;
  }
}

export async function ensureRedis(progress: Progress = () => {}): Promise<string> {
  const found = await findRedisServer();
  if (found) return found;
  if (process.getuid?.() !== 0) {
    throw new LockauditError('LOCKAUDIT_ERR_SERVICES_BUILD', 'redis-server is not installed; run: sudo apt-get update && sudo apt-get install -y redis-server');
  }
  progress('installing redis-server from Debian packages…');
  try {
    await run('apt-get', ['update'], { maxBuffer: 64 * 1024 * 1024 });
    await run('apt-get', ['install', '-y', '--no-install-recommends', 'redis-server'], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    throw new LockauditError('LOCKAUDIT_ERR_SERVICES_BUILD', `apt-get install redis-server failed: ${(err as Error).message}`, { cause: err });
  }
  const installed = await findRedisServer();
  if (!installed) throw new LockauditError('LOCKAUDIT_ERR_SERVICES_BUILD', 'redis-server is still missing after apt-get install');
  // Debian's package starts its own redis on 6379; we run ours on our own port and leave it alone.
  return installed;
}

export async function ensureAll(progress: Progress = () => {}): Promise<{ redis: string }> {
  // Sequential: two Go builds at once on 2 cores are no faster and use twice the memory.
  await ensureEtcd(progress);
  await ensureMinio(progress);
  await ensurePromtool(progress);
  const redis = await ensureRedis(progress);
  return { redis };
}
