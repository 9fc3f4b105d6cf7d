// The investigator's commands (`lockaudit grants|state|diff|token-of`, the
// compiled dist/) against a running API: the real fastify app with the
// grant-history and state routes, listening on a port, over this file's own
// ClickHouse with known grants and events. Checks exact answers (tokens above
// 2^53 to the digit), paging, one-line errors with the API's code, and that
// the API token travels in the Authorization header only and is never printed.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { buildApp, type App } from '../../api/app.js';
import { grantRoutes } from '../../api/routes/grants.js';
import { stateRoutes } from '../../api/routes/state.js';
import { tokenHashRoutes } from '../../api/routes/tokenHash.js';
import { originSecret } from '../../core/originSecret.js';
import { hashToken, tokenHashKey } from '../../core/tokenHash.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import type { AuditEventRow } from '../../core/events.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { projectRoot } from '../../core/paths.js';
import { makeToken } from '../../core/token.js';
import type { GrantRow } from '../../tailer/types.js';
import { HealthState } from '../../platform/health.js';
import { tempStore, testConfig, uniqueId } from '../support/env.js';
import { grantRows, type GrantSpec } from '../support/grants.js';

const run = promisify(execFile);
const BIN = path.join(projectRoot, 'bin', 'lockaudit.js');
const T0 = Date.parse('2026-03-02T10:00:00Z');
const tokenAt = (rev: number): string => makeToken(40, BigInt(rev)).toString();

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

describe('investigator CLI against a running API', { timeout: 240_000 }, () => {
  const cluster = uniqueId('c');
  const ns = uniqueId('inv');
  let app: App;
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let url: string;
  let investigator: string;
  let client: string;
  const seen: Array<{ url: string; authorization: string | undefined }> = [];

  const cli = async (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LOCKAUDIT_API_TOKEN' && k !== 'LOCKAUDIT_URL'));
    try {
      const r = await run(process.execPath, [BIN, ...args], {
        cwd: projectRoot,
        env: { ...clean, LOCKAUDIT_URL: url, LOCKAUDIT_API_TOKEN: investigator, ...env },
      });
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  // Grants on one key for paging, and two neighbours of acct-1's token that a JS number cannot tell from it.
  const page = (i: number): GrantSpec => ({
    cluster,
    key: `${ns}/page`,
    class: 'ledger',
    holder: `spiffe://corp/w${i}`,
    rev: 1100 + i,
    at: T0 + 60_000 + i * 1000,
    end: { kind: 'expiry', at: T0 + 60_500 + i * 1000, rev: 1101 + i },
  });
  const specs: GrantSpec[] = [
    { cluster, key: `${ns}/decoy-a`, class: 'ledger', holder: 'spiffe://corp/decoy', rev: 1000, at: T0 - 1000 },
    {
      cluster,
      key: `${ns}/acct-1`,
      class: 'ledger',
      holder: 'spiffe://corp/alice',
      rev: 1001,
      at: T0,
      waitMs: 40,
      end: { kind: 'release', at: T0 + 5000, rev: 1005 },
    },
    { cluster, key: `${ns}/decoy-b`, class: 'ledger', holder: 'spiffe://corp/decoy', rev: 1002, at: T0 + 1000 },
    { cluster, key: `${ns}/acct-2`, class: 'ledger', holder: 'spiffe://corp/bob', rev: 1006, at: T0 + 6000 },
    ...[0, 1, 2, 3, 4].map(page),
  ];

  const holdEvent = (key: string, rev: number, at: number, holder: string, op: 'put' | 'delete'): AuditEventRow => ({
    cluster,
    revision: String(rev),
    key: `/l/${key}`,
    event_type: op === 'put' ? 'grant' : 'release',
    op,
    namespace: ns,
    lock_path: key.slice(ns.length + 1),
    class: 'ledger',
    holder,
    session: '7587862',
    token: op === 'put' ? tokenAt(rev) : '0',
    epoch: 40,
    grant_revision: op === 'put' ? String(rev) : '1001',
    wait_ms: 0,
    wall_time: at,
    time_estimated: 0,
    time_error_ms: 0,
    create_revision: String(rev),
    mod_revision: String(rev),
    version: '1',
    lease: '7587862',
    value: '',
    prev_value: '',
    unprotected: 0,
  });

  before(async () => {
    const base = testConfig();
    const config = { ...base, etcd: { ...base.etcd, clusters: [{ name: cluster, endpoints: base.etcd.clusters[0]?.endpoints ?? [] }] } };
    ({ store, close: closeStore } = await tempStore());
    await store.insert(
      'grants',
      specs.map((s) => grantRows(s).open),
    );
    await store.insert(
      'grants',
      specs.map((s) => grantRows(s).closed).filter((r): r is GrantRow => r !== undefined),
    );
    await store.insert('events', [
      holdEvent(`${ns}/acct-1`, 1001, T0, 'spiffe://corp/alice', 'put'),
      holdEvent(`${ns}/acct-1`, 1005, T0 + 5000, 'spiffe://corp/alice', 'delete'),
      holdEvent(`${ns}/acct-2`, 1006, T0 + 6000, 'spiffe://corp/bob', 'put'),
    ]);
    // One grant revision on two timelines: etcd granted it, a restore rolled it back (marked on timeline 0), and the
    // restored etcd granted it again (timeline 1).
    const restored: GrantSpec = { cluster, key: `${ns}-r/restored`, class: 'ledger', holder: 'spiffe://corp/carol', rev: 1200, at: T0 + 20_000 };
    await store.insert('grants', [
      { ...grantRows(restored).open, timeline: 0, rolled_back_by: 1, row_version: '1' },
      { ...grantRows({ ...restored, holder: 'spiffe://corp/dave', at: T0 + 21_000 }).open, timeline: 1 },
    ]);
    await store.insert('checkpoints', [{ cluster, revision: '1010', leader: 'test' }]);
    investigator = (await createApiToken(store, 'ivy@corp', ['investigator'])).token;
    client = (await createApiToken(store, 'spiffe://corp/app', ['client'])).token;
    app = await buildApp(
      { config, logger: createLogger('silent'), store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: createMetricsRegistry() },
      [grantRoutes, stateRoutes, tokenHashRoutes],
    );
    app.server.on('request', (req: { url?: string; headers: Record<string, string | string[] | undefined> }) => {
      seen.push({ url: req.url ?? '', authorization: typeof req.headers.authorization === 'string' ? req.headers.authorization : undefined });
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });

  after(async () => {
    await app?.close();
    await closeStore?.();
  });

  it('documents each command with --help', async () => {
    const top = await cli(['--help']);
    for (const command of ['grants', 'state', 'diff', 'token-of', 'token-hash']) assert.match(top.stdout, new RegExp(`^  ${command}\\b`, 'm'), command);
    for (const command of ['grants', 'state', 'diff', 'token-of']) {
      const r = await cli([command, '--help']);
      assert.equal(r.code, 0, command);
      assert.match(r.stdout, new RegExp(`^Usage: lockaudit ${command} `, 'm'));
      assert.match(r.stdout, /--api-token <token>/);
      assert.match(r.stdout, /--url <url>/);
    }
  });

  it('token-of finds the one grant that carried a token above 2^53, to the digit', async () => {
    const token = tokenAt(1001);
    assert.ok(BigInt(token) > 2n ** 53n && String(Number(token)) !== token, 'the token must not survive a JS number');
    const r = await cli(['token-of', token]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^token\\s+${token} = epoch 40 × 2\\^48 \\+ revision 1001$`, 'm'));
    assert.match(r.stdout, new RegExp(`^key\\s+${ns}/acct-1$`, 'm'));
    assert.match(r.stdout, /^holder\s+spiffe:\/\/corp\/alice$/m);
    assert.match(r.stdout, /^ended\s+release at 2026-03-02T10:00:05.000Z \(revision 1005, held 5.0s\)$/m);
    assert.ok(!r.stdout.includes('decoy'), r.stdout);
    const json = JSON.parse((await cli(['token-of', token, '--format', 'json'])).stdout) as Array<{ token: unknown; key: string }>;
    assert.deepEqual(
      json.map((g) => [g.token, g.key]),
      [[token, `${ns}/acct-1`]],
    );

    // A token two timelines carried: each grant says which, and the one a restore rolled back says so (before: both
    // printed as ordinary grants; only --format json told them apart).
    const twice = await cli(['token-of', tokenAt(1200)]);
    assert.equal(twice.code, 0, twice.stderr);
    const records = twice.stdout.split('\n\n');
    assert.equal(records.length, 2, twice.stdout);
    assert.match(records.find((r) => r.includes('carol')) ?? '', /^rolled back\s+yes: a later etcd restore rolled this grant back/m);
    assert.doesNotMatch(records.find((r) => r.includes('carol')) ?? '', /^timeline/m);
    assert.match(records.find((r) => r.includes('dave')) ?? '', /^timeline\s+1 \(granted after etcd was restored once\)$/m);
    assert.doesNotMatch(records.find((r) => r.includes('dave')) ?? '', /^rolled back/m);
    const table = await cli(['grants', '--key', `${ns}-r/restored`]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /spiffe:\/\/corp\/carol.*rolled back by an etcd restore/);
    assert.match(table.stdout, /spiffe:\/\/corp\/dave.*timeline 1/);

    const none = await cli(['token-of', tokenAt(1003)]);
    assert.equal(none.code, 1);
    assert.equal(none.stderr, `lockaudit: no captured grant carried token ${tokenAt(1003)}\n`);
  });

  it('token-hash turns a token into the keyed hash alert events carry, over a POST body (never the URL); other roles and bad tokens are refused', async () => {
    const token = tokenAt(1001);
    const before = seen.length;
    const r = await cli(['token-hash', token]);
    assert.equal(r.code, 0, r.stderr);
    const expected = hashToken(tokenHashKey(originSecret(testConfig())), token);
    assert.match(expected, /^hmac-sha256:[0-9a-f]{64}$/);
    assert.equal(r.stdout.trim(), expected);
    assert.deepEqual(
      seen.slice(before).map((s) => s.url),
      ['/v1/token-hash'],
      'the token is in no URL',
    );
    const post = (body: unknown, bearer: string) =>
      fetch(`${url}/v1/token-hash`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    assert.equal((await post({ token }, client)).status, 403, 'a client token may not');
    const bad = await post({ token: '12ab' }, investigator);
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { message: string }).message, /token/);
    assert.deepEqual(await (await post({ token: '0' }, investigator)).json(), { tokenHash: '' });
  });

  it('grants follows nextCursor page by page, up to --limit, in every format', async () => {
    const direct = async (format: string) =>
      (await fetch(`${url}/v1/grants?key=${ns}/page&limit=100&format=${format}`, { headers: { authorization: `Bearer ${investigator}` } })).text();
    const all = JSON.parse(await direct('json')) as { items: Array<{ token: string; grantedAt: string }> };
    assert.equal(all.items.length, 5);
    const before = seen.length;
    const json = await cli(['grants', '--key', `${ns}/page`, '--page-size', '2', '--format', 'json']);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), all.items, 'the pages joined are the one page');
    assert.equal(seen.slice(before).filter((s) => s.url.startsWith('/v1/grants')).length, 3, 'three pages of two');
    assert.equal(json.stderr, '');

    const csv = await cli(['grants', '--key', `${ns}/page`, '--page-size', '2', '--format', 'csv']);
    assert.equal(csv.stdout, await direct('csv'), "the API's own CSV, one header");
    // Newest first unless asked: --order asc pages the same grants oldest first.
    const oldest = await cli(['grants', '--key', `${ns}/page`, '--page-size', '2', '--format', 'json', '--order', 'asc']);
    assert.equal(oldest.code, 0, oldest.stderr);
    assert.deepEqual(JSON.parse(oldest.stdout), [...all.items].reverse());
    assert.ok(
      all.items.every((g, i, a) => i === 0 || g.grantedAt <= (a[i - 1]?.grantedAt ?? '')),
      'the default is newest first',
    );
    const wrong = await cli(['grants', '--key', `${ns}/page`, '--order', 'sideways']);
    assert.equal(wrong.code, 2);

    const limited = await cli(['grants', '--key', `${ns}/page`, '--page-size', '2', '--limit', '3', '--format', 'csv']);
    assert.equal(limited.code, 0);
    assert.equal(limited.stdout.trimEnd().split('\r\n').length, 1 + 3);
    assert.match(limited.stderr, /^lockaudit: stopped at --limit 3: more grants match/);

    const table = await cli(['grants', '--key-prefix', `${ns}/`, '--from', '2026-03-02T09:00:00Z', '--to', '2026-03-02T11:00:00Z']);
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^GRANTED AT\s+KEY\s+HOLDER\s+TOKEN\s+END\s+ENDED AT\s+HELD\s+WAITED\s+CLASS/);
    assert.equal(lines.length, 1 + specs.length);
    const acct1 = lines.find((l) => l.includes(`${ns}/acct-1`)) ?? '';
    assert.match(acct1, new RegExp(`spiffe://corp/alice\\s+${tokenAt(1001)}\\s+release\\s+2026-03-02T10:00:05.000Z\\s+5.0s\\s+40ms\\s+ledger`));
    assert.match(lines.find((l) => l.includes(`${ns}/acct-2`)) ?? '', new RegExp(`${tokenAt(1006)}\\s+held`));

    const empty = await cli(['grants', '--holder', 'spiffe://corp/nobody', '--format', 'json']);
    assert.equal(empty.stdout, '[]\n');

    // --cluster reaches the API (before: "unknown option"); a cluster never captured is the API's 400 naming it.
    const byCluster = await cli(['grants', '--cluster', cluster, '--key', `${ns}/page`, '--format', 'json']);
    assert.equal(byCluster.code, 0, byCluster.stderr);
    assert.deepEqual(JSON.parse(byCluster.stdout), all.items);
    assert.ok(
      seen.some((s) => s.url.startsWith('/v1/grants') && s.url.includes(`cluster=${cluster}`)),
      'the filter was sent',
    );
    const typo = await cli(['grants', '--cluster', 'nope', '--key', `${ns}/page`]);
    assert.notEqual(typo.code, 0);
    assert.match(typo.stderr, /cluster/);
    assert.match(typo.stderr, /nope/);
  });

  it('state and diff answer from the captured log', async () => {
    const at = await cli(['state', '--at', '1003', '--prefix', `${ns}/`]);
    assert.equal(at.code, 0, at.stderr);
    assert.match(at.stdout, new RegExp(`^cluster ${cluster} at revision 1003 \\(asked for 1003; captured through 1010\\)$`, 'm'));
    assert.match(at.stdout, /^HOLDS \(1\)$/m);
    assert.match(at.stdout, new RegExp(`^${ns}/acct-1\\s+spiffe://corp/alice\\s+${tokenAt(1001)}\\s+2026-03-02T10:00:00.000Z\\s+1001\\s+ledger`, 'm'));
    const byTime = JSON.parse((await cli(['state', '--at', '2026-03-02T10:00:07Z', '--prefix', `${ns}/`, '--format', 'json'])).stdout) as {
      at: { revision: string };
      holds: Array<{ key: string; token: string }>;
    };
    assert.equal(byTime.at.revision, '1006');
    assert.deepEqual(
      byTime.holds.map((h) => [h.key, h.token]),
      [[`${ns}/acct-2`, tokenAt(1006)]],
    );

    // --timeline reaches the API (before: "unknown option"): this cluster never had a timeline 3.
    for (const cmd of [
      ['state', '--at', '1003'],
      ['diff', '--from', '1003', '--to', '1006'],
    ]) {
      const asked = await cli([...cmd, '--timeline', '3']);
      assert.equal(asked.code, 2, asked.stderr);
      assert.match(asked.stderr, /--timeline: .* has timelines 0\.\.0/);
    }
    const zero = await cli(['state', '--at', '1003', '--prefix', `${ns}/`, '--timeline', '0']);
    assert.equal(zero.code, 0, zero.stderr);
    assert.match(zero.stdout, /^HOLDS \(1\)$/m);

    const d = await cli(['diff', '--from', '1003', '--to', '2026-03-02T10:00:07Z', '--prefix', `${ns}/`]);
    assert.equal(d.code, 0, d.stderr);
    assert.match(d.stdout, /^APPEARED \(1\)$/m);
    assert.match(d.stdout, new RegExp(`^${ns}/acct-2\\s+spiffe://corp/bob\\s+${tokenAt(1006)}`, 'm'));
    assert.match(d.stdout, /^ENDED \(1\)$/m);
    assert.match(d.stdout, new RegExp(`^${ns}/acct-1\\s+spiffe://corp/alice\\s+${tokenAt(1001)}\\s+release\\s+1005`, 'm'));
  });

  it("says what went wrong in one line: the API's code and message, its fields as flags", async () => {
    const invalid = await cli(['grants', '--key', 'no spaces/allowed here']);
    assert.equal(invalid.code, 2);
    assert.match(invalid.stderr, /^lockaudit: LOCKAUDIT_ERR_VALIDATION \(HTTP 400\): --key: must match pattern/);
    assert.equal(invalid.stderr.split('\n').length, 2, invalid.stderr);

    const uncaptured = await cli(['state', '--at', '99999']);
    assert.equal(uncaptured.code, 2);
    assert.equal(
      uncaptured.stderr,
      `lockaudit: LOCKAUDIT_ERR_VALIDATION (HTTP 400): --at: revision 99999 is after the tailer's checkpoint 1010 for ${cluster}; it is not captured yet\n`,
    );

    const wrong = await cli(['grants', '--key', `${ns}/page`], { LOCKAUDIT_API_TOKEN: 'la_000000000000_notarealtoken' });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /^lockaudit: LOCKAUDIT_ERR_AUTH_REQUIRED \(HTTP 401\): [^\n]+\n$/);
    const forbidden = await cli(['token-of', tokenAt(1001), '--api-token', client], { LOCKAUDIT_API_TOKEN: '' });
    assert.equal(forbidden.code, 1);
    assert.match(forbidden.stderr, /^lockaudit: LOCKAUDIT_ERR_AUTH_FORBIDDEN \(HTTP 403\): this route needs one of the roles: investigator\n$/);
    assert.ok(!`${forbidden.stdout}${forbidden.stderr}`.includes(client));

    const noToken = await cli(['grants'], { LOCKAUDIT_API_TOKEN: '' });
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr, /^lockaudit: no API token: set LOCKAUDIT_API_TOKEN/);

    const badFlag = await cli(['token-of', '9007199254740993.5']);
    assert.equal(badFlag.code, 2);
    assert.match(badFlag.stderr, /<token> must be a fencing token: a decimal integer below 2\^64/);

    const closed = await cli(['grants', '--url', 'http://127.0.0.1:9']);
    assert.equal(closed.code, 1);
    assert.match(closed.stderr, /^lockaudit: the API at http:\/\/127\.0\.0\.1:9 did not answer \([^)]+\); is the platform running there\?/);
  });

  it('finds the platform from LOCKAUDIT_HOST/PORT; the token goes in the header only and is never printed', async () => {
    const port = new URL(url).port;
    const r = await cli(['token-of', tokenAt(1001)], { LOCKAUDIT_URL: '', LOCKAUDIT_HOST: '127.0.0.1', LOCKAUDIT_PORT: port });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(seen.length > 5);
    for (const s of seen) {
      assert.ok(!s.url.includes(investigator) && !s.url.includes(client), `no token in ${s.url}`);
      assert.match(s.authorization ?? '', /^Bearer la_/);
    }
    for (const args of [
      ['grants', '--key', `${ns}/page`],
      ['state', '--at', '1003'],
      ['grants', '--key', 'bad key'],
    ]) {
      const out = await cli(args);
      assert.ok(!`${out.stdout}${out.stderr}`.includes(investigator), args.join(' '));
    }
  });
});
