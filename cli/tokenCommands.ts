// `lockaudit token create|list|revoke`. With a ClickHouse server, or when no
// lockaudit process runs, the CLI opens the store itself. Embedded ClickHouse
// (chdb) lets one process open its data dir: while the platform runs, the CLI
// reaches the store through that process, which serves it (core/embeddedOwner.ts),
// or goes through its API with an admin token (--admin-token or
// LOCKAUDIT_ADMIN_TOKEN); a holder that serves nothing is named in one line.
import { userInfo } from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  checkScope,
  createApiToken,
  listApiTokens,
  parseExpiresIn,
  parseRoles,
  revokeApiToken,
  type Role,
  type TokenInfo,
  type TokenScope,
} from '../core/apiTokens.js';
import { AuditStore } from '../core/clickhouse.js';
import { embeddedHolder, servedStore } from '../core/embeddedOwner.js';
import { loadConfig, type Config } from '../core/config.js';
import { LockauditError } from '../core/errors.js';
import { migrate } from '../core/migrations.js';

const progress = (message: string): void => void process.stderr.write(`lockaudit: ${message}\n`);

type Via = { kind: 'store'; store: AuditStore } | { kind: 'api'; url: string; adminToken: string };

/** Who ran the command, for the token audit: the OS account (USER is unset under cron, sudo -i, containers). */
function cliActor(): string {
  let name = process.env.USER ?? process.env.LOGNAME;
  if (!name) {
    try {
      name = userInfo().username;
    } catch {
      name = `uid ${process.getuid?.() ?? 'unknown'}`;
    }
  }
  return `cli:${name}`;
}

function apiUrl(config: Config): string {
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.port}`;
}

async function open(config: Config, adminToken: string | undefined): Promise<Via> {
  const target = config.clickhouse;
  if (target.mode === 'embedded' && adminToken) return { kind: 'api', url: apiUrl(config), adminToken };
  // Asked before opening: chdb would print its own lock error to stderr first. A holder that serves the store
  // (core/embeddedOwner.ts) is gone through instead.
  const pid = target.mode === 'embedded' && !servedStore(target.path) ? embeddedHolder(target.path) : undefined;
  if (target.mode === 'embedded' && pid !== undefined) {
    throw new LockauditError(
      'LOCKAUDIT_ERR_TOKEN_INVALID',
      `the running lockaudit process (pid ${pid}) holds the embedded ClickHouse in ${target.path}: give an admin token (--admin-token or LOCKAUDIT_ADMIN_TOKEN) to go through its API at ${apiUrl(config)}, or stop it first`,
    );
  }
  const store = new AuditStore(target);
  await migrate(store);
  return { kind: 'store', store };
}

async function call<T>(via: Extract<Via, { kind: 'api' }>, method: 'GET' | 'POST' | 'DELETE', route: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`${via.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${via.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (err) {
    throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', `the API at ${via.url} did not answer (${(err as Error).message}); is the platform running there?`);
  }
  const json = (await res.json().catch(() => ({}))) as T & { message?: string };
  if (!res.ok) throw new LockauditError('LOCKAUDIT_ERR_TOKEN_INVALID', `the API at ${via.url} answered ${res.status}: ${json.message ?? ''}`);
  return json;
}

async function withVia<T>(adminToken: string | undefined, fn: (via: Via) => Promise<T>): Promise<T> {
  const via = await open(loadConfig(), adminToken ?? process.env.LOCKAUDIT_ADMIN_TOKEN);
  try {
    return await fn(via);
  } finally {
    if (via.kind === 'store') await via.store.close();
  }
}

function printTokens(items: readonly TokenInfo[]): void {
  const rows = items.map((t) => [
    t.tokenId,
    t.identity,
    t.roles.join(','),
    t.issuedAt,
    t.expiresAt ?? 'never',
    t.revoked ? `revoked ${t.revokedAt ?? ''}`.trim() : 'active',
    t.lastUsedAt ?? 'never',
    scopeCell(t.scope),
  ]);
  const header = ['ID', 'IDENTITY', 'ROLES', 'ISSUED', 'EXPIRES', 'STATE', 'LAST USED', 'SCOPE'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  for (const r of [header, ...rows])
    process.stdout.write(
      `${r
        .map((c, i) => c.padEnd(widths[i] as number))
        .join('  ')
        .trimEnd()}\n`,
    );
}

/** A token's scope in the list: `ns=payments,billing cl=prod` (everything: `all`). */
function scopeCell(scope: TokenScope | null | undefined): string {
  if (!scope) return 'all';
  return [scope.namespaces.length ? `ns=${scope.namespaces.join(',')}` : '', scope.clusters.length ? `cl=${scope.clusters.join(',')}` : '']
    .filter(Boolean)
    .join(' ');
}

const list = (v: string): string[] =>
  v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

const adminTokenOption = () => new Option('--admin-token <token>', "an admin API token: go through the running platform's API (default LOCKAUDIT_ADMIN_TOKEN)");

export function registerTokenCommands(program: Command): void {
  const token = program.command('token').description('API tokens: create, list, revoke');
  token
    .command('create')
    .description('create an API token for an identity with roles; the token is printed once and stored hashed')
    .requiredOption('--identity <name>', 'the caller identity, e.g. spiffe://corp/payments-worker or alice@corp')
    .addOption(
      new Option('--roles <roles>', 'comma-separated: client, investigator, auditor, lock-operator, admin').makeOptionMandatory().argParser((v) => {
        try {
          return parseRoles(v);
        } catch (err) {
          throw new InvalidArgumentError((err as Error).message);
        }
      }),
    )
    .addOption(
      new Option('--expires-in <duration>', 'lifetime: 3600s, 30m, 12h, 90d (default: never expires)').argParser((v) => {
        try {
          return parseExpiresIn(v);
        } catch (err) {
          throw new InvalidArgumentError((err as Error).message);
        }
      }),
    )
    .option('--namespaces <list>', 'scope: the token reads only these namespaces (comma-separated; default every namespace)', list)
    .option('--clusters <list>', 'scope: the token reads only these etcd clusters (comma-separated; default every cluster)', list)
    .addOption(adminTokenOption())
    .action(async (opts: { identity: string; roles: Role[]; expiresIn?: number; adminToken?: string; namespaces?: string[]; clusters?: string[] }) => {
      const scope = checkScope({ namespaces: opts.namespaces, clusters: opts.clusters }, opts.roles, (n) => `--${n}`);
      const created = await withVia(opts.adminToken, (via) =>
        via.kind === 'store'
          ? createApiToken(via.store, opts.identity, opts.roles, { expiresInSeconds: opts.expiresIn, issuedBy: cliActor(), scope })
          : call<{ token: string; tokenId: string; expiresAt: string | null; scope: TokenScope | null }>(via, 'POST', '/v1/tokens', {
              identity: opts.identity,
              roles: opts.roles,
              ...(opts.expiresIn ? { expiresInSeconds: opts.expiresIn } : {}),
              ...(scope ? { namespaces: scope.namespaces, clusters: scope.clusters } : {}),
            }),
      );
      progress(
        `token ${created.tokenId} for ${opts.identity} (${opts.roles.join(', ')}${created.scope ? `; reads only ${scopeCell(created.scope)}` : ''}), ${created.expiresAt ? `expires ${created.expiresAt}` : 'never expires'}; it is shown once:`,
      );
      process.stdout.write(`${created.token}\n`);
    });

  token
    .command('list')
    .description('list API tokens (never the secrets): roles, expiry, revocation, last use')
    .option('--json', 'print JSON')
    .addOption(adminTokenOption())
    .action(async (opts: { json?: boolean; adminToken?: string }) => {
      const items = await withVia(opts.adminToken, async (via) =>
        via.kind === 'store' ? listApiTokens(via.store) : (await call<{ items: TokenInfo[] }>(via, 'GET', '/v1/tokens')).items,
      );
      if (opts.json) process.stdout.write(`${JSON.stringify(items, null, 2)}\n`);
      else printTokens(items);
    });

  token
    .command('revoke')
    .description('revoke an API token by its id (the 12 hex characters after la_); every API process refuses it within 5 s')
    .argument('<id>', 'the token id', (v: string) => {
      if (!/^[a-f0-9]{12}$/.test(v)) throw new InvalidArgumentError('the token id is 12 hex characters (as `token list` shows it)');
      return v;
    })
    .addOption(adminTokenOption())
    .action(async (id: string, opts: { adminToken?: string }) => {
      const revoked = await withVia(opts.adminToken, async (via) =>
        via.kind === 'store'
          ? revokeApiToken(via.store, id, cliActor())
          : call<TokenInfo>(via, 'DELETE', `/v1/tokens/${id}`).catch((err: Error) => (/ 404:/.test(err.message) ? undefined : Promise.reject(err))),
      );
      if (!revoked) throw new LockauditError('LOCKAUDIT_ERR_NOT_FOUND', `no token has the id ${id} (see \`lockaudit token list\`)`);
      progress(`token ${id} of ${revoked.identity} revoked at ${revoked.revokedAt ?? 'now'}`);
    });
}
