// The console's aggregated views against a real embedded ClickHouse: the key
// timeline (bars when few, per-bucket cells when many — bounded whatever the
// window — lanes under a prefix, gap spans) and tailer lag over time. Known
// answers are computed here from the fixture, independently of the SQL.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildApp, type App } from '../../api/app.js';
import { HealthState } from '../../platform/health.js';
import { reportRoutes } from '../../api/routes/reports.js';
import { tailerRoutes } from '../../api/routes/tailers.js';
import { ApiTokenVerifier, createApiToken } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import type { Timeline } from '../../reports/timeline/index.js';
import type { TailerLag } from '../../reports/tailerLag/index.js';
import type { GrantRow } from '../../tailer/types.js';
import { classEvent, grantRows, type GrantSpec } from '../support/grants.js';
import { tempStore, testConfig } from '../support/env.js';

const HOUR = 3_600_000;
const T0 = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR; // an hour boundary two hours ago
const iso = (ms: number) => new Date(ms).toISOString();

// busy/k-0: 3 000 grants, one a second from T0, each held 600 ms; holder
// h-<floor(i/30) mod 3> (one holder per aligned 30 s); every 100th expires,
// every 250th is force-released, the last is still held.
const BUSY = 3000;
const busy: GrantSpec[] = Array.from({ length: BUSY }, (_, i) => {
  const at = T0 + i * 1000;
  const kind = i % 250 === 0 ? 'force' : i % 100 === 0 ? 'expiry' : 'release';
  return {
    key: 'busy/k-0',
    class: 'c',
    holder: `h-${Math.floor(i / 30) % 3}`,
    rev: 10_000 + i,
    at,
    ...(i === BUSY - 1 ? {} : { end: { kind, at: at + 600, rev: 20_000 + i } }),
  };
});
// busy/k-n (n = 1..59): n short grants each, in the first minutes.
const others: GrantSpec[] = Array.from({ length: 59 }, (_, j) => j + 1).flatMap((n) =>
  Array.from({ length: n }, (_, i) => ({
    key: `busy/k-${n}`,
    class: 'c',
    holder: 'h-x',
    rev: 100 + i,
    at: T0 + i * 2000,
    end: { kind: 'release' as const, at: T0 + i * 2000 + 100, rev: 200 + i },
  })),
);

// odd/k-0 (issue 11, defect 7): 6 grants, one every 10 s from T0, each held
// 1.5 s; grants 1 and 4 were put straight into etcd (foreign), grants 2 and 4
// were deleted by hand (their leases outlived them).
const odd: GrantSpec[] = Array.from({ length: 6 }, (_, i) => ({
  key: 'odd/k-0',
  class: 'c',
  holder: `h-${i}`,
  rev: 30_000 + i,
  at: T0 + i * 10_000,
  ...(i === 1 || i === 4 ? { origin: 'foreign' as const } : {}),
  end: { kind: i === 2 || i === 4 ? ('deleted' as const) : ('release' as const), at: T0 + i * 10_000 + 1500, rev: 31_000 + i },
}));

describe('timeline and tailer lag', () => {
  let store: AuditStore;
  let closeStore: () => Promise<void>;
  let app: App;
  const tokens: Record<'investigator' | 'auditor', string> = { investigator: '', auditor: '' };
  const get = async <T>(url: string, who: keyof typeof tokens = 'investigator'): Promise<{ status: number; body: T }> => {
    const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${tokens[who]}` } });
    return { status: res.statusCode, body: res.json() as T };
  };

  before(async () => {
    ({ store, close: closeStore } = await tempStore());
    const specs = [...busy, ...others, ...odd];
    await store.insert(
      'grants',
      specs.map((s) => grantRows(s).open),
    );
    await store.insert(
      'grants',
      specs.map((s) => grantRows(s).closed).filter((r): r is GrantRow => r !== undefined),
    );
    // Gap 1: revisions 5000–5100, last event before it at T0 + 500 s, first after at T0 + 520 s.
    // Gap 2: long before the window (its events are days old) — not in the window.
    const clock = (rev: number, at: number) => ({ ...classEvent('x', null, rev, at), key: '/sys/clock', event_type: 'clock', op: 'put' as const });
    await store.insert('events', [
      clock(4999, T0 + 500_000),
      clock(5101, T0 + 520_000),
      clock(99, T0 - 9 * 86_400_000),
      clock(151, T0 - 9 * 86_400_000 + 1000),
    ]);
    await store.insert('gaps', [
      { cluster: 'c1', from_revision: '5000', to_revision: '5100', detected_at: T0 + 530_000, reason: 'compacted before capture' },
      { cluster: 'c1', from_revision: '100', to_revision: '150', detected_at: T0 + 60_000, reason: 'compacted before capture' },
    ]);
    // Tailer status every 10 s for the first hour: lag_seconds = minute of the hour, lag_revisions = 10 × that.
    await store.insert(
      'tailer_status',
      Array.from({ length: 360 }, (_, i) => {
        const minute = Math.floor(i / 6);
        return {
          cluster: 'c1',
          cluster_id: 'cafe',
          leader: 'r-a',
          checkpoint: String(1000 + i),
          head_revision: String(1000 + i + minute * 10),
          compact_revision: '0',
          lag_revisions: String(minute * 10),
          lag_seconds: minute,
          updated_at: T0 + i * 10_000,
        };
      }),
    );

    const config = testConfig({ LOCKAUDIT_RATE_LIMIT_PER_MINUTE: '100000' });
    app = await buildApp(
      { config, logger: createLogger('silent'), store, verifier: new ApiTokenVerifier(store), health: new HealthState(), metrics: createMetricsRegistry() },
      [tailerRoutes, reportRoutes],
    );
    tokens.investigator = (await createApiToken(store, 'inv@corp', ['investigator'])).token;
    tokens.auditor = (await createApiToken(store, 'aud@corp', ['auditor'])).token;
  });

  after(async () => {
    await app?.close();
    await closeStore?.();
  });

  it('aggregates a busy key into bounded cells that add up to the grants', async () => {
    const to = T0 + BUSY * 1000;
    const { status, body } = await get<Timeline>(`/v1/reports/timeline?key=busy/k-0&from=${iso(T0)}&to=${iso(to)}`);
    assert.equal(status, 200, JSON.stringify(body));
    assert.equal(body.mode, 'buckets');
    assert.deepEqual(body.lanes, ['busy/k-0']);
    assert.equal(body.totalGrants, BUSY);
    assert.equal(body.grants.length, 0);
    assert.equal(body.bucketSeconds, 30); // 50 minutes in at most 240 buckets
    assert.equal(body.cells.length, BUSY / 30);
    assert.equal(
      body.cells.reduce((s, c) => s + c.grants, 0),
      BUSY,
    );
    // Every closed hold is 600 ms; the open one runs to `to` (1 s).
    assert.equal(
      body.cells.reduce((s, c) => s + c.heldMs, 0),
      (BUSY - 1) * 600 + 1000,
    );
    assert.equal(
      body.cells.reduce((s, c) => s + c.expiries, 0),
      busy.filter((g) => g.end?.kind === 'expiry').length,
    );
    assert.equal(
      body.cells.reduce((s, c) => s + c.forceReleases, 0),
      busy.filter((g) => g.end?.kind === 'force').length,
    );
    for (const [j, c] of body.cells.entries()) {
      assert.equal(c.at, iso(T0 + j * 30_000));
      assert.equal(c.topHolder, `h-${j % 3}`);
      assert.equal(c.holders, 1);
      assert.ok(c.heldMs <= 30_000);
    }
    // Cell 0 holds grants 0..29 (grant 0 force-released); cell 3 grants 90..119 (grant 100 expired).
    assert.equal(body.cells[0]?.forceReleases, 1);
    assert.equal(body.cells[0]?.expiries, 0);
    assert.equal(body.cells[3]?.expiries, 1); // grant 100, ended at 100.6 s
  });

  it('keeps a 30-day window of the busy key just as bounded', async () => {
    const { body } = await get<Timeline>(`/v1/reports/timeline?key=busy/k-0&from=${iso(T0 - 29 * 86_400_000)}&to=${iso(T0 + HOUR)}`);
    assert.equal(body.mode, 'buckets');
    assert.equal(body.bucketSeconds, 10_800);
    assert.ok(body.cells.length <= 241, `${body.cells.length} cells`);
    assert.equal(
      body.cells.reduce((s, c) => s + c.grants, 0),
      BUSY,
    );
  });

  it('draws few grants as bars, and more than maxBars as cells', async () => {
    const win = `from=${iso(T0 + 100_000)}&to=${iso(T0 + 200_000)}`;
    const bars = await get<Timeline>(`/v1/reports/timeline?key=busy/k-0&${win}`);
    assert.equal(bars.body.mode, 'grants');
    assert.equal(bars.body.bucketSeconds, null);
    // Holds overlapping [100 s, 200 s]: grants 100..200 (grant 99 ended at 99.6 s).
    assert.deepEqual(
      bars.body.grants.map((g) => g.grantRevision),
      Array.from({ length: 101 }, (_, i) => String(10_100 + i)),
    );
    assert.equal(bars.body.grants[0]?.endKind, 'expiry');
    const cells = await get<Timeline>(`/v1/reports/timeline?key=busy/k-0&${win}&maxBars=50`);
    assert.equal(cells.body.mode, 'buckets');
    assert.equal(
      cells.body.cells.reduce((s, c) => s + c.grants, 0),
      101,
    );
  });

  it('marks foreign grants and holds deleted by hand, in bars and in cells (known answer)', async () => {
    const win = `from=${iso(T0)}&to=${iso(T0 + 60_000)}`;
    const bars = await get<Timeline>(`/v1/reports/timeline?key=odd/k-0&${win}`);
    assert.equal(bars.body.mode, 'grants');
    assert.deepEqual(
      bars.body.grants.map((g) => [g.grantRevision, g.origin, g.endKind]),
      [
        ['30000', 'api', 'release'],
        ['30001', 'foreign', 'release'],
        ['30002', 'api', 'deleted'],
        ['30003', 'api', 'release'],
        ['30004', 'foreign', 'deleted'],
        ['30005', 'api', 'release'],
      ],
    );
    // The same grants as 1 s cells (60 s in at most 240 buckets): each hold covers two cells, [at, at + 1 s) and [at + 1 s, at + 2 s).
    const cells = await get<Timeline>(`/v1/reports/timeline?key=odd/k-0&${win}&maxBars=1`);
    assert.equal(cells.body.mode, 'buckets');
    assert.equal(cells.body.bucketSeconds, 1);
    assert.equal(cells.body.cells.length, 12);
    const marked = (pick: (c: Timeline['cells'][number]) => number) => cells.body.cells.filter((c) => pick(c) > 0).map((c) => [c.at, pick(c)]);
    assert.deepEqual(
      marked((c) => c.foreign),
      [
        [iso(T0 + 10_000), 1],
        [iso(T0 + 40_000), 1],
      ],
      'a foreign grant counts in the cell it started in',
    );
    assert.deepEqual(
      marked((c) => c.deleted),
      [
        [iso(T0 + 21_000), 1],
        [iso(T0 + 41_000), 1],
      ],
      'a deleted end counts in the cell it ended in',
    );
    assert.equal(
      cells.body.cells.reduce((s, c) => s + c.expiries + c.forceReleases, 0),
      0,
      'a delete by hand is no expiry',
    );
  });

  it('draws the 50 busiest keys under a prefix and says how many there are', async () => {
    const { body } = await get<Timeline>(`/v1/reports/timeline?keyPrefix=busy/&from=${iso(T0)}&to=${iso(T0 + HOUR)}`);
    assert.equal(body.totalLanes, 60);
    assert.deepEqual(body.lanes, ['busy/k-0', ...Array.from({ length: 49 }, (_, i) => `busy/k-${59 - i}`)]);
    assert.equal(body.totalGrants, BUSY + Array.from({ length: 49 }, (_, i) => 59 - i).reduce((a, b) => a + b, 0));
    assert.equal(body.mode, 'buckets');
    assert.deepEqual([...new Set(body.cells.map((c) => c.key))].sort(), [...body.lanes].sort());
    const small = await get<Timeline>(`/v1/reports/timeline?key=busy/k-5&from=${iso(T0)}&to=${iso(T0 + HOUR)}`);
    assert.equal(small.body.mode, 'grants');
    assert.equal(small.body.grants.length, 5);
  });

  it('without a key or prefix draws the busiest keys of every prefix, over the last hour unless a window is given', async () => {
    const opened = await get<Timeline>('/v1/reports/timeline');
    assert.equal(opened.status, 200, JSON.stringify(opened.body));
    assert.equal(Date.parse(opened.body.to) - Date.parse(opened.body.from), HOUR, 'the last hour');
    const { body } = await get<Timeline>(`/v1/reports/timeline?from=${iso(T0)}&to=${iso(T0 + HOUR)}`);
    const under = await get<Timeline>(`/v1/reports/timeline?keyPrefix=busy/&from=${iso(T0)}&to=${iso(T0 + HOUR)}`);
    assert.ok(body.totalLanes > under.body.totalLanes, `every key (${body.totalLanes}) is more than one prefix's (${under.body.totalLanes})`);
    assert.equal(body.lanes.length, 50);
    assert.equal(body.lanes[0], 'busy/k-0', 'the busiest first');
  });

  it('marks the gaps of the window with their wall-clock span', async () => {
    const { body } = await get<Timeline>(`/v1/reports/timeline?key=busy/k-0&from=${iso(T0)}&to=${iso(T0 + HOUR)}`);
    assert.deepEqual(body.gaps, [
      {
        cluster: 'c1',
        fromRevision: '5000',
        toRevision: '5100',
        reason: 'compacted before capture',
        detectedAt: iso(T0 + 530_000),
        fromTime: iso(T0 + 500_000),
        toTime: iso(T0 + 520_000),
      },
    ]);
  });

  it('records a timeline read like a grant history read', async () => {
    await get<Timeline>(`/v1/reports/timeline?key=busy/k-7&from=${iso(T0)}`);
    const reads = await store.rows<{ identity: string; format: string; filters: string }>(
      "SELECT identity, format, filters FROM {db:Identifier}.grant_history_reads WHERE format = 'timeline' AND position(filters, 'busy/k-7') > 0",
    );
    assert.equal(reads.length, 1);
    assert.equal(reads[0]?.identity, 'inv@corp');
    assert.deepEqual(JSON.parse(reads[0]?.filters ?? '{}'), { key: 'busy/k-7', from: iso(T0) });
  });

  it('rejects bad timeline input with a 400 naming the field, and other roles with a 403', async () => {
    const cases: [string, RegExp][] = [
      ['key=busy/k-0&keyPrefix=busy/', /key: give at most one of key and keyPrefix/],
      ['key=busy/k-0&maxBars=0', /maxBars/],
      ['key=busy/k-0&maxBars=abc', /maxBars/],
      ['key=busy/k-0&from=yesterday', /from/],
      [`key=busy/k-0&from=${iso(T0 + HOUR)}&to=${iso(T0)}`, /from: is after querystring.to/],
      [`key=busy/k-0&from=${iso(T0 - 400 * 86_400_000)}&to=${iso(T0)}`, /LOCKAUDIT_MAX_WINDOW_DAYS/],
      ["key=busy/k-0'%20OR%201=1", /key/],
      ['keyPrefix=busy/&cluster=NOT%20A%20CLUSTER', /cluster/],
      ['key=busy/k-0&colour=red', /colour/],
    ];
    for (const [query, message] of cases) {
      const { status, body } = await get<{ error: string; message: string }>(`/v1/reports/timeline?${query}`);
      assert.equal(status, 400, `${query}: ${JSON.stringify(body)}`);
      assert.match(body.message, message, query);
    }
    assert.equal((await get(`/v1/reports/timeline?key=busy/k-0`, 'auditor')).status, 403);
  });

  it('serves tailer lag per bucket: the worst lag, the newest checkpoint, nulls where no tailer ran', async () => {
    const { status, body } = await get<TailerLag>(`/v1/tailers/lag?cluster=c1&from=${iso(T0)}&to=${iso(T0 + 2 * HOUR)}`);
    assert.equal(status, 200, JSON.stringify(body));
    assert.equal(body.bucketSeconds, 30); // 2 h in at most 240 buckets of at least 10 s
    assert.equal(body.clusters.length, 1);
    const series = body.clusters[0]?.series ?? [];
    assert.equal(series.length, 241); // every bucket from T0 to T0 + 2 h, both ends included
    // Bucket b holds samples 3b..3b+2, all of minute floor(b/2).
    for (let b = 0; b < 120; b++) {
      const minute = Math.floor(b / 2);
      assert.deepEqual(series[b], {
        at: iso(T0 + b * 30_000),
        lagSecondsMax: minute,
        lagRevisionsMax: String(minute * 10),
        checkpoint: String(1000 + 3 * b + 2),
        samples: 3,
      });
    }
    assert.deepEqual(series[120], { at: iso(T0 + HOUR), lagSecondsMax: null, lagRevisionsMax: null, checkpoint: null, samples: 0 });
    // A cluster no tailer sampled, configured or captured (a typo) is a 400 naming it, as on /v1/state (before: 200 and no series).
    const none = await get<{ message: string }>(`/v1/tailers/lag?cluster=other&from=${iso(T0)}&to=${iso(T0 + HOUR)}`);
    assert.equal(none.status, 400);
    assert.match(none.body.message, /querystring\.cluster: no etcd cluster named "other"/);
  });

  it('rejects bad tailer lag input with a 400 naming the field', async () => {
    for (const [query, message] of [
      ['from=soon', /from/],
      ['cluster=A%20B', /cluster/],
      [`from=${iso(T0)}&to=${iso(T0 - HOUR)}`, /from: is after/],
      ['x=1', /x/],
    ] as const) {
      const { status, body } = await get<{ message: string }>(`/v1/tailers/lag?${query}`);
      assert.equal(status, 400, `${query}: ${JSON.stringify(body)}`);
      assert.match(body.message, message, query);
    }
    // Without a token, bad input is not even looked at.
    assert.equal((await app.inject({ method: 'GET', url: '/v1/tailers/lag?from=soon' })).statusCode, 401);
  });
});
