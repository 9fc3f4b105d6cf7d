// The investigator's commands, on a running platform's API (cli/apiClient.ts):
// `lockaudit grants` (GET /v1/grants, every page up to --limit), `lockaudit
// state` (GET /v1/state), `lockaudit diff` (GET /v1/diff) and `lockaudit
// token-of` ("which grant carried this fencing token?"). Tokens and revisions
// stay decimal strings from the API's JSON to the output: never JS numbers.
// A failure is one line — the API's error code and message, with its fields
// named as this command's flags — and a non-zero exit (2 for bad input).
import { Command, InvalidArgumentError, Option } from 'commander';
import { INSTANT_RULE, parseInstant } from '../core/instant.js';
import { parseToken, splitToken } from '../core/token.js';
import type { DiffResponse } from '../reports/diff/index.js';
import type { GrantItem, GrantPage } from '../reports/grantHistory/index.js';
import { scopeText } from '../grants/scope.js';
import type { StateResponse } from '../reports/state/index.js';
import { ApiCallError, ApiClient, resolveTarget, type Query } from './apiClient.js';
import { integer } from './flags.js';
import { cellText, duration, renderTable } from './table.js';

const out = (text: string): void => void process.stdout.write(text);
const say = (message: string): void => void process.stderr.write(`lockaudit: ${message}\n`);

interface ApiFlags {
  url?: string;
  apiToken?: string;
}

/** --url and --api-token, on every command that calls the API. */
function withApiOptions(command: Command): Command {
  return command
    .showHelpAfterError(false) // an error is one line
    .addOption(new Option('--url <url>', "the platform's API (default LOCKAUDIT_URL, else http://LOCKAUDIT_HOST:LOCKAUDIT_PORT)"))
    .addOption(
      new Option(
        '--api-token <token>',
        'an API token with the investigator role (default LOCKAUDIT_API_TOKEN; prefer the variable: a flag shows in the process list)',
      ),
    );
}

/**
 * Runs a command body against the API. An ApiCallError becomes one line on
 * stderr (fields renamed to `flags`) and exit 2 for bad input, 1 otherwise.
 */
async function run(flags: ApiFlags, fieldFlags: Readonly<Record<string, string>>, body: (client: ApiClient) => Promise<void>): Promise<void> {
  try {
    await body(new ApiClient(resolveTarget({ url: flags.url, token: flags.apiToken })));
  } catch (err) {
    if (!(err instanceof ApiCallError)) throw err;
    say(err.line.replace(/\bquerystring\.([A-Za-z/]+)/g, (whole, field: string) => fieldFlags[field] ?? whole));
    process.exitCode = err.usage ? 2 : 1;
  }
}

// ---- flag parsers: each error names the flag ----

const instant =
  (flag: string) =>
  (value: string): string => {
    if (parseInstant(value) === undefined) throw new InvalidArgumentError(`${flag} must be ${INSTANT_RULE}, got "${value}"`);
    return value;
  };

const moment =
  (flag: string) =>
  (value: string): string => {
    if (/^(0|[1-9][0-9]{0,19})$/.test(value) || parseInstant(value) !== undefined) return value;
    throw new InvalidArgumentError(`${flag} must be an etcd revision (decimal) or ${INSTANT_RULE}, got "${value}"`);
  };

const fencingToken =
  (flag: string) =>
  (value: string): string => {
    const token = parseToken(value.trim());
    if (token === undefined) throw new InvalidArgumentError(`${flag} must be a fencing token: a decimal integer below 2^64, got "${value}"`);
    return token.toString();
  };

const formatOption = (formats: readonly string[]) => new Option('--format <format>', 'output format').choices(formats).default('table');

// ---- grants ----

interface GrantFlags extends ApiFlags {
  cluster?: string;
  key?: string;
  keyPrefix?: string;
  holder?: string;
  class?: string;
  namespace?: string;
  token?: string;
  endKind?: string;
  origin?: string;
  from?: string;
  to?: string;
  order: 'desc' | 'asc';
  limit: number;
  pageSize: number;
  format: 'table' | 'json' | 'csv';
}

const GRANT_FIELDS = {
  key: '--key',
  keyPrefix: '--key-prefix',
  holder: '--holder',
  class: '--class',
  namespace: '--namespace',
  token: '--token',
  endKind: '--end-kind',
  origin: '--origin',
  from: '--from',
  to: '--to',
  'from/to': '--from/--to',
  order: '--order',
  limit: '--page-size',
  cursor: 'the paging cursor',
} as const;

const END_KIND_CHOICES = ['release', 'expiry', 'force', 'session-close', 'epoch-advance', 'deleted', 'unknown', 'held'];

/**
 * Every grant matching `query`, page after page (each page's nextCursor),
 * until `limit` grants or the last page. Returns whether more exist.
 */
async function pageGrants(client: ApiClient, query: Query, limit: number, pageSize: number, onPage: (items: GrantItem[]) => void): Promise<boolean> {
  let cursor: string | undefined;
  let remaining = limit;
  for (;;) {
    const page = await client.getJson<GrantPage>('/v1/grants', { ...query, limit: Math.min(pageSize, remaining), cursor });
    if (!Array.isArray(page.items))
      throw new ApiCallError(undefined, `the API at ${client.url} answered /v1/grants without items; is that a lockaudit API?`, 200);
    if (cursor === undefined && page.narrowedTo) say(`narrowed to this token's scope: ${scopeText(page.narrowedTo)}`);
    onPage(page.items);
    remaining -= page.items.length;
    if (!page.nextCursor) return false;
    if (remaining <= 0) return true;
    cursor = page.nextCursor;
  }
}

/** The same, as the API's own CSV: one header, the pages' rows after it (X-Next-Cursor pages). */
async function pageGrantsCsv(client: ApiClient, query: Query, limit: number, pageSize: number): Promise<boolean> {
  let cursor: string | undefined;
  let remaining = limit;
  for (let first = true; ; first = false) {
    const size = Math.min(pageSize, remaining);
    const answer = await client.get('/v1/grants', { ...query, format: 'csv', limit: size, cursor }, 'text/csv');
    const headerEnd = answer.text.indexOf('\r\n');
    const narrowed = answer.headers.get('x-narrowed-to');
    if (first && narrowed) say(`narrowed to this token's scope: ${narrowed}`);
    out(first || headerEnd < 0 ? answer.text : answer.text.slice(headerEnd + 2));
    const next = answer.headers.get('x-next-cursor');
    if (!next) return false;
    remaining -= size; // a page with a next one is always full
    if (remaining <= 0) return true;
    cursor = next;
  }
}

function grantsTable(items: readonly GrantItem[]): string {
  const clusters = new Set(items.map((g) => g.cluster));
  const header = ['GRANTED AT', ...(clusters.size > 1 ? ['CLUSTER'] : []), 'KEY', 'HOLDER', 'TOKEN', 'END', 'ENDED AT', 'HELD', 'WAITED', 'CLASS', 'NOTE'];
  const rows = items.map((g) => [
    g.grantedAt,
    ...(clusters.size > 1 ? [g.cluster] : []),
    g.key,
    g.holder,
    g.token,
    g.endKind ?? 'held',
    g.endedAt ?? '',
    duration(g.durationMs),
    duration(g.waitMs),
    g.class,
    [
      g.origin === 'foreign' ? 'foreign (not granted by the API)' : '',
      g.unprotected ? 'unprotected (no quorum)' : '',
      g.rolledBack ? 'rolled back by an etcd restore' : '',
      g.timeline > 0 ? `timeline ${g.timeline}` : '',
    ]
      .filter(Boolean)
      .join(', '),
  ]);
  return renderTable(header, rows);
}

function grantQuery(f: GrantFlags): Query {
  return {
    cluster: f.cluster,
    key: f.key,
    keyPrefix: f.keyPrefix,
    holder: f.holder,
    class: f.class,
    namespace: f.namespace,
    token: f.token,
    endKind: f.endKind,
    origin: f.origin,
    from: f.from,
    to: f.to,
    order: f.order,
  };
}

// ---- state and diff ----

interface StateFlags extends ApiFlags {
  at: string;
  prefix?: string;
  cluster?: string;
  timeline?: number;
  limit?: number;
  format: 'table' | 'json';
}

interface DiffFlags extends ApiFlags {
  from: string;
  to: string;
  prefix?: string;
  cluster?: string;
  timeline?: number;
  limit?: number;
  format: 'table' | 'json';
}

const STATE_FIELDS = { at: '--at', prefix: '--prefix', cluster: '--cluster', timeline: '--timeline', limit: '--limit' } as const;
const DIFF_FIELDS = { from: '--from', to: '--to', prefix: '--prefix', cluster: '--cluster', timeline: '--timeline', limit: '--limit' } as const;

type Gap = StateResponse['gaps'][number];
const gapText = (g: Gap): string => `${g.fromRevision}–${g.toRevision} (${cellText(g.reason)})`;

/** Revisions of a later timeline are not the same holds as the same revisions before a restore: the header says which. */
function timelineNote(timeline: number): string {
  return `timeline ${timeline}: etcd was restored ${timeline === 1 ? 'once' : `${timeline} times`} since capture began; --timeline ${timeline - 1} answers for the history the last restore rolled back`;
}

function stateText(s: StateResponse): string {
  const lines: string[] = [];
  lines.push(`cluster ${cellText(s.cluster)} at revision ${s.at.revision} (asked for ${cellText(s.at.requested)}; captured through ${s.at.capturedThrough})`);
  // After an etcd restore the same revisions may mean other holds on another timeline: say which one this is.
  if (s.at.timeline > 0) lines.push(timelineNote(s.at.timeline));
  if (!s.complete) lines.push(`INCOMPLETE: this revision lies inside a recorded gap; holds granted and ended inside it are not in the log`);
  if (s.truncated) lines.push(`TRUNCATED: more holds or queue entries than --limit; narrow --prefix or raise --limit`);
  lines.push(s.epoch ? `epoch ${s.epoch.epoch} (since revision ${s.epoch.revision})` : 'epoch: none recorded');
  lines.push('', `HOLDS (${s.holds.length})`);
  if (s.holds.length)
    lines.push(
      renderTable(
        ['KEY', 'HOLDER', 'TOKEN', 'SINCE', 'GRANT REV', 'CLASS', 'SESSION'],
        s.holds.map((h) => [h.key, h.holder, h.token, h.startKnown ? h.since : `${h.since} (start not captured)`, h.grantRevision, h.class, h.session]),
      ).trimEnd(),
    );
  if (s.queue.length)
    lines.push(
      '',
      `QUEUE (${s.queue.length})`,
      renderTable(
        ['KEY', 'HOLDER', 'LEASE', 'SINCE', 'CLASS'],
        s.queue.map((q) => [q.key, q.holder, q.leaseId, q.since, q.class]),
      ).trimEnd(),
    );
  if (s.classes.length) lines.push('', `CLASSES (${s.classes.length}): ${s.classes.map((c) => cellText(c.name)).join(', ')}`);
  if (s.unknown.length)
    lines.push(
      '',
      `UNKNOWN (${s.unknown.length}): state the log cannot tell`,
      renderTable(
        ['KEY', 'KIND', 'REASON', 'GAP', 'LAST KNOWN HOLDER'],
        s.unknown.map((u) => [u.key, u.kind, u.reason, u.gap ? gapText(u.gap) : '', u.lastKnownHolder]),
      ).trimEnd(),
    );
  if (s.gaps.length) lines.push('', `GAPS at or before this revision: ${s.gaps.map(gapText).join(', ')}`);
  return `${lines.join('\n')}\n`;
}

function diffText(d: DiffResponse): string {
  const lines: string[] = [];
  lines.push(
    `cluster ${cellText(d.cluster)} from revision ${d.from.revision} (asked for ${cellText(d.from.requested)}) to revision ${d.to.revision} (asked for ${cellText(d.to.requested)})`,
  );
  if (d.to.timeline > 0) lines.push(timelineNote(d.to.timeline));
  if (!d.complete) lines.push(`INCOMPLETE: a recorded gap lies inside or across the window (${d.gaps.map(gapText).join(', ')}); history there is missing`);
  if (d.truncated) lines.push('TRUNCATED: more holds or events than --limit; narrow --prefix or raise --limit');
  const { appeared, ended, changedHolder } = d.holds;
  lines.push('', `APPEARED (${appeared.length})`);
  if (appeared.length)
    lines.push(
      renderTable(
        ['KEY', 'HOLDER', 'TOKEN', 'SINCE', 'GRANT REV', 'CLASS'],
        appeared.map((h) => [h.key, h.holder, h.token, h.since, h.grantRevision, h.class]),
      ).trimEnd(),
    );
  lines.push('', `ENDED (${ended.length})`);
  if (ended.length)
    lines.push(
      renderTable(
        ['KEY', 'HOLDER', 'TOKEN', 'END', 'END REV', 'ENDED AT', 'BY'],
        ended.map((h) => [h.key, h.holder, h.token, h.endKind, h.endRevision, h.endedAt, h.endedBy]),
      ).trimEnd(),
    );
  if (changedHolder.length)
    lines.push(
      '',
      `CHANGED HOLDER (${changedHolder.length})`,
      renderTable(
        ['KEY', 'BEFORE', 'TOKEN BEFORE', 'AFTER', 'TOKEN AFTER'],
        changedHolder.map((c) => [c.key, c.before.holder, c.before.token, c.after.holder, c.after.token]),
      ).trimEnd(),
    );
  const { created, changed, deleted } = d.classes;
  if (created.length + changed.length + deleted.length) {
    lines.push('', 'CLASSES');
    for (const c of created) lines.push(`  created ${cellText(c.name)} at revision ${c.revision}`);
    for (const c of changed)
      lines.push(
        `  changed ${cellText(c.name)} at revision ${c.revision}: ${c.fields.map((f) => `${cellText(f.field)} ${cellText(JSON.stringify(f.before))} → ${cellText(JSON.stringify(f.after))}`).join('; ')}`,
      );
    for (const c of deleted) lines.push(`  deleted ${cellText(c.name)}`);
  }
  if (d.epochAdvances.length)
    lines.push(
      '',
      'EPOCH ADVANCES',
      ...d.epochAdvances.map((e) => `  epoch ${e.epoch} at revision ${e.revision}${e.by ? ` approved by ${cellText(e.by)}` : ''}`),
    );
  if (d.forceReleases.length) {
    lines.push(
      '',
      `FORCE-RELEASES (${d.forceReleases.length})`,
      renderTable(
        ['REV', 'KEY', 'HOLDER', 'TOKEN', 'ENFORCEMENT', 'REQUESTER', 'APPROVER', 'REASON'],
        d.forceReleases.map((f) => [f.revision, f.key, f.holder, f.token, f.enforcement, f.requester, f.approver, f.reason]),
      ).trimEnd(),
    );
  }
  return `${lines.join('\n')}\n`;
}

// ---- token-of ----

function grantRecord(g: GrantItem): string {
  const rows: Array<[string, string]> = [
    ['cluster', g.cluster],
    ['key', g.key],
    ['holder', g.holder],
    ['class', g.class],
    ['granted at', `${g.grantedAt} (revision ${g.grantRevision}${g.waitMs ? `, after waiting ${duration(g.waitMs)}` : ''})`],
    [
      'ended',
      g.endKind === null
        ? 'still held'
        : `${g.endKind} at ${g.endedAt ?? 'an unknown time'} (revision ${g.endRevision ?? '?'}, held ${duration(g.durationMs)})`,
    ],
    ['origin', g.origin === 'foreign' ? 'foreign: written straight into etcd, not granted by the lock API' : 'the lock API'],
  ];
  if (g.unprotected) rows.push(['unprotected', 'granted without quorum (fail-open, token 0)']);
  if (g.timeline > 0) rows.push(['timeline', `${g.timeline} (granted after etcd was restored ${g.timeline === 1 ? 'once' : `${g.timeline} times`})`]);
  if (g.rolledBack) rows.push(['rolled back', 'yes: a later etcd restore rolled this grant back (it was a real hold, but the restored cluster never had it)']);
  return rows.map(([k, v]) => `${k.padEnd(12)}${cellText(v)}\n`).join('');
}

// ---- registration ----

export function registerInvestigateCommands(program: Command): void {
  withApiOptions(
    program
      .command('grants')
      .description(
        'grant history from the running platform (GET /v1/grants): grants whose hold overlaps [--from, --to], newest first (--order asc: oldest first), every page up to --limit',
      )
      .option('--cluster <name>', 'only this etcd cluster (default every cluster)')
      .option('--key <lock>', 'only this lock, <namespace>/<path>')
      .option('--key-prefix <prefix>', 'only lock names starting with this')
      .option('--holder <identity>', 'only this holder')
      .option('--class <name>', 'only this lock class')
      .option('--namespace <ns>', 'only this namespace')
      .option('--token <token>', 'only the grant with this fencing token (decimal; see also `lockaudit token-of`)', fencingToken('--token'))
      .addOption(new Option('--end-kind <kind>', 'only grants that ended this way (held: still held)').choices(END_KIND_CHOICES))
      .addOption(new Option('--origin <origin>', 'api: granted by the lock API; foreign: written straight into etcd').choices(['api', 'foreign']))
      .option(
        '--from <time>',
        'window start, RFC 3339 with a zone (default: the widest window the API allows, or all time with --key or --token)',
        instant('--from'),
      )
      .option('--to <time>', 'window end, RFC 3339 with a zone (default now)', instant('--to'))
      .addOption(new Option('--order <order>', 'desc: newest grant first; asc: oldest first').choices(['desc', 'asc']).default('desc'))
      .addOption(
        new Option('--limit <n>', 'print at most this many grants; says on stderr when more exist').default(1000).argParser(integer('--limit', 1, 10_000_000)),
      )
      .addOption(
        new Option('--page-size <n>', "grants per API request (at most the API's LOCKAUDIT_MAX_PAGE_SIZE)")
          .default(500)
          .argParser(integer('--page-size', 1, 100_000)),
      )
      .addOption(formatOption(['table', 'json', 'csv'])),
  ).action((flags: GrantFlags) =>
    run(flags, GRANT_FIELDS, async (client) => {
      const query = grantQuery(flags);
      let more: boolean;
      let count = 0;
      if (flags.format === 'csv') {
        more = await pageGrantsCsv(client, query, flags.limit, flags.pageSize);
      } else if (flags.format === 'json') {
        // One JSON array, a grant a line, written as the pages arrive.
        more = await pageGrants(client, query, flags.limit, flags.pageSize, (items) => {
          for (const g of items) out(`${count++ === 0 ? '[\n' : ',\n'}${JSON.stringify(g)}`);
        });
        out(count === 0 ? '[]\n' : '\n]\n');
      } else {
        const all: GrantItem[] = [];
        more = await pageGrants(client, query, flags.limit, flags.pageSize, (items) => void all.push(...items));
        count = all.length;
        if (all.length) out(grantsTable(all));
        else say('no grant matches');
      }
      if (more) say(`stopped at --limit ${flags.limit}: more grants match (raise --limit, or narrow the filters)`);
    }),
  );

  withApiOptions(
    program
      .command('state')
      .description('the keyspace at a moment (GET /v1/state): every hold, queue entry and class in force, from the captured log')
      .requiredOption('--at <time|revision>', 'an etcd revision, or an RFC 3339 time (the newest captured revision at or before it)', moment('--at'))
      .option('--prefix <prefix>', 'only lock names starting with this, e.g. payments/')
      .option('--cluster <name>', "the etcd cluster (default the platform's first)")
      .addOption(
        new Option('--timeline <n>', 'the etcd timeline (0 the first; each restore the tailer recorded starts the next; default the current one)').argParser(
          integer('--timeline', 0, 4_294_967_295),
        ),
      )
      .addOption(new Option('--limit <n>', 'at most this many holds and queue entries').argParser(integer('--limit', 1, 100_000)))
      .addOption(formatOption(['table', 'json'])),
  ).action((flags: StateFlags) =>
    run(flags, STATE_FIELDS, async (client) => {
      const state = await client.getJson<StateResponse>('/v1/state', {
        at: flags.at,
        prefix: flags.prefix,
        cluster: flags.cluster,
        timeline: flags.timeline,
        limit: flags.limit,
      });
      out(flags.format === 'json' ? `${JSON.stringify(state, null, 2)}\n` : stateText(state));
    }),
  );

  withApiOptions(
    program
      .command('diff')
      .description(
        'what changed between two moments (GET /v1/diff): holds that appeared, ended (how, by whom) or changed holder; classes; epoch advances; force-releases',
      )
      .requiredOption('--from <time|revision>', 'the earlier moment: an etcd revision or an RFC 3339 time', moment('--from'))
      .requiredOption('--to <time|revision>', 'the later moment: an etcd revision or an RFC 3339 time', moment('--to'))
      .option('--prefix <prefix>', 'only lock names starting with this, e.g. payments/')
      .option('--cluster <name>', "the etcd cluster (default the platform's first)")
      .addOption(
        new Option('--timeline <n>', 'the etcd timeline (0 the first; each restore the tailer recorded starts the next; default the current one)').argParser(
          integer('--timeline', 0, 4_294_967_295),
        ),
      )
      .addOption(new Option('--limit <n>', 'at most this many holds per moment and events in the window').argParser(integer('--limit', 1, 100_000)))
      .addOption(formatOption(['table', 'json'])),
  ).action((flags: DiffFlags) =>
    run(flags, DIFF_FIELDS, async (client) => {
      const changes = await client.getJson<DiffResponse>('/v1/diff', {
        from: flags.from,
        to: flags.to,
        prefix: flags.prefix,
        cluster: flags.cluster,
        timeline: flags.timeline,
        limit: flags.limit,
      });
      out(flags.format === 'json' ? `${JSON.stringify(changes, null, 2)}\n` : diffText(changes));
    }),
  );

  withApiOptions(
    program
      .command('token-hash')
      .description('the keyed hash of a fencing token (POST /v1/token-hash), as alert events carry it: what to search a SIEM for')
      .argument('<token>', 'the fencing token, a decimal integer (tokens exceed 2^53: give it as printed)', fencingToken('<token>')),
  ).action((token: string, flags: ApiFlags) =>
    run(flags, { token: '<token>' }, async (client) => {
      const { tokenHash } = await client.postJson<{ tokenHash: string }>('/v1/token-hash', { token });
      out(`${tokenHash || '(token 0 fences nothing: unprotected grants carry no token hash)'}\n`);
    }),
  );

  withApiOptions(
    program
      .command('token-of')
      .description('which grant carried this fencing token? (GET /v1/grants?token=, all time); exits 1 when no captured grant did')
      .argument('<token>', 'the fencing token, a decimal integer (tokens exceed 2^53: give it as printed)', fencingToken('<token>'))
      .addOption(
        new Option('--limit <n>', "at most this many grants (token 0 is every unprotected grant's)").default(20).argParser(integer('--limit', 1, 100_000)),
      )
      .addOption(formatOption(['table', 'json'])),
  ).action((token: string, flags: ApiFlags & { limit: number; format: 'table' | 'json' }) =>
    run(flags, { token: '<token>', limit: '--limit' }, async (client) => {
      const grants: GrantItem[] = [];
      const more = await pageGrants(client, { token }, flags.limit, Math.min(flags.limit, 500), (items) => void grants.push(...items));
      if (flags.format === 'json') out(`${JSON.stringify(grants, null, 2)}\n`);
      else {
        const { epoch, revision } = splitToken(BigInt(token));
        out(`token       ${token} = epoch ${epoch} × 2^48 + revision ${revision}\n`);
        out(grants.map(grantRecord).join('\n'));
      }
      if (more) say(`stopped at --limit ${flags.limit}: more grants carried token ${token}`);
      if (grants.length === 0) {
        say(`no captured grant carried token ${token}`);
        process.exitCode = 1;
      } else if (grants.length > 1 && token !== '0') say(`${grants.length} grants carried token ${token} (one per cluster that granted it)`);
    }),
  );
}
