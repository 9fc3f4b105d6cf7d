// Contention from sealed hours (issue 22 item 1): known-answer tests. The
// report read from seals (reports/contention/hours.sql) must give exactly the
// raw query's answer (contention.sql) — on a hand-made fixture with the cases
// that make it hard (handoffs across hours and across the window's start,
// unprotected grants, grants still held when sealed, late grants, a clock-skewed
// grant, two clusters, a restore), and on generated data — also after an hour
// is sealed again (a replay), which must replace its figures, never add to them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { loadSql } from '../../platform/sql.js';
import { contention, coveredRuns, type ContentionParams } from '../../reports/contention/index.js';
import { sealContentionHours } from '../../reports/contention/seal.js';
import { contentionSealJob, CONTENTION_SEAL_SCHEDULER_ID } from '../../reports/contention/job.js';
import { createLogger } from '../../core/logger.js';
import { reportRows, type ReportDeps } from '../../platform/reportQuery.js';
import type { GrantRow } from '../../tailer/types.js';
import { generateReportData } from '../bench/reportsData.js';
import { classEvent, grantRows, type GrantSpec } from '../support/grants.js';
import { tempStore, testConfig } from '../support/env.js';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const NOW = Math.floor(Date.now() / HOUR) * HOUR + 17 * 60_000 + 123; // 17 minutes into this hour
const H = (h: number, ms = 0) => NOW - (NOW % HOUR) - h * HOUR + ms; // h whole hours before this hour's start, plus ms
const iso = (ms: number) => new Date(ms).toISOString();
const COVERED = loadSql('reports/contention/covered.sql');

// Revisions grow with grant time on each key (as the lock API makes them), except where said.
const FIXTURE: GrantSpec[] = [
  // pay/acct-1: a handoff inside an hour, one across an hour boundary, one across the 4-day window's start
  { key: 'pay/acct-1', class: 'ledger', holder: 'h-a', rev: 100, at: H(100), waitMs: 5, end: { kind: 'release', at: H(100, 500), rev: 101 } },
  { key: 'pay/acct-1', class: 'ledger', holder: 'h-b', rev: 110, at: H(30, 10_000), waitMs: 30, end: { kind: 'release', at: H(30, 20_000), rev: 111 } },
  { key: 'pay/acct-1', class: 'ledger', holder: 'h-c', rev: 112, at: H(30, 25_000), waitMs: 70, end: { kind: 'release', at: H(30, HOUR - 1000), rev: 113 } },
  { key: 'pay/acct-1', class: 'ledger', holder: 'h-a', rev: 114, at: H(29, 2000), waitMs: 9, end: { kind: 'expiry', at: H(29, 9000), rev: 115 } },
  { key: 'pay/acct-1', class: 'ledger', holder: 'h-b', rev: 116, at: H(29, 60_000), waitMs: 1, end: { kind: 'force', at: H(28, 5000), rev: 117 } },
  { key: 'pay/acct-1', class: 'ledger', holder: 'h-c', rev: 118, at: H(28, 6000), waitMs: 3, end: { kind: 'release', at: H(28, 7000), rev: 119 } },
  // pay/acct-2: held when sealed (ends later, or never); a handoff into this (unsealed) hour
  { key: 'pay/acct-2', class: 'ledger', holder: 'h-d', rev: 120, at: H(20, 100), waitMs: 11, end: { kind: 'release', at: H(5), rev: 300 } },
  { key: 'pay/acct-2', class: 'ledger', holder: 'h-e', rev: 301, at: H(0, 60_000), waitMs: 12 },
  { key: 'pay/acct-3', class: 'ledger', holder: 'h-d', rev: 121, at: H(20, 200), waitMs: 13 },
  // cat/sku-1: unprotected grants between protected ones, one of them held
  { key: 'cat/sku-1', class: 'cache', holder: 'h-f', rev: 130, at: H(10, 0), waitMs: 0, end: { kind: 'release', at: H(10, 1000), rev: 131 } },
  { key: 'cat/sku-1', class: 'cache', holder: 'h-g', rev: 0, spool: 'n1:000001', at: H(10, 1500), end: { kind: 'release', at: H(10, 1800), rev: 0 } },
  { key: 'cat/sku-1', class: 'cache', holder: 'h-f', rev: 132, at: H(10, 2000), waitMs: 4, end: { kind: 'session-close', at: H(9, 100), rev: 133 } },
  { key: 'cat/sku-1', class: 'cache', holder: 'h-g', rev: 0, spool: 'n1:000002', at: H(9, 500) },
  { key: 'cat/sku-1', class: 'cache', holder: 'h-h', rev: 134, at: H(9, 600), waitMs: 8, end: { kind: 'release', at: H(9, 700), rev: 135 } },
  // cat/sku-2: a clock-skewed grant (granted before the grant before it): its hour is read raw
  { key: 'cat/sku-2', class: 'cache', holder: 'h-i', rev: 140, at: H(8, 50_000), waitMs: 2, end: { kind: 'release', at: H(8, 51_000), rev: 141 } },
  { key: 'cat/sku-2', class: 'cache', holder: 'h-j', rev: 142, at: H(8, 40_000), waitMs: 6, end: { kind: 'release', at: H(8, 52_000), rev: 143 } },
  { key: 'cat/sku-2', class: 'cache', holder: 'h-i', rev: 144, at: H(7, 1000), waitMs: 7, end: { kind: 'release', at: H(7, 2000), rev: 145 } },
  // inv/item-1: a clock-skewed raw grant (hour 11) whose grant before, by revision, is in a sealed hour after it (hour 6),
  // with another sealed hour of the key before it (hour 12): the handoff into it is from hour 6's release (the grant
  // before it in hour 12 expired: no handoff)
  { key: 'inv/item-1', class: 'stock', holder: 'h-m', rev: 160, at: H(12, 0), waitMs: 2, end: { kind: 'expiry', at: H(12, 500), rev: 161 } },
  { key: 'inv/item-1', class: 'stock', holder: 'h-n', rev: 162, at: H(6, 1000), waitMs: 3, end: { kind: 'release', at: H(6, 2000), rev: 163 } },
  { key: 'inv/item-1', class: 'stock', holder: 'h-m', rev: 164, at: H(11, 5000), waitMs: 4, end: { kind: 'release', at: H(11, 6000), rev: 165 } },
  // another cluster, same key names
  {
    cluster: 'c2',
    key: 'pay/acct-1',
    class: 'ledger',
    holder: 'h-z',
    rev: 50,
    at: H(30, 30_000),
    waitMs: 40,
    end: { kind: 'release', at: H(30, 31_000), rev: 51 },
  },
  {
    cluster: 'c2',
    key: 'pay/acct-1',
    class: 'ledger',
    holder: 'h-y',
    rev: 52,
    at: H(30, 32_000),
    waitMs: 41,
    end: { kind: 'expiry', at: H(30, 40_000), rev: 53 },
  },
  // a window's start edge: the grant before it ended in the hour the window starts in
  { key: 'ops/job', class: 'cron', holder: 'h-k', rev: 150, at: H(50, 10_000), waitMs: 1, end: { kind: 'release', at: H(50, 11_000), rev: 151 } },
  { key: 'ops/job', class: 'cron', holder: 'h-l', rev: 152, at: H(50, 20_000), waitMs: 2, end: { kind: 'release', at: H(50, 21_000), rev: 153 } },
  { key: 'ops/job', class: 'cron', holder: 'h-k', rev: 154, at: H(49, 30_000), waitMs: 3, end: { kind: 'release', at: H(49, 31_000), rev: 155 } },
];
const CHECKPOINT = 200; // revisions above it are not captured yet when the fixture is first sealed

/** The rows written up to `checkpoint`: a grant's closed row only once its end revision is captured. */
async function insertGrants(store: AuditStore, specs: GrantSpec[], checkpoint = Infinity): Promise<void> {
  const visible = specs.filter((s) => s.rev <= checkpoint);
  await store.insert(
    'grants',
    visible.map((s) => grantRows(s).open),
  );
  const closed = visible
    .filter((s) => s.end && s.end.rev <= checkpoint)
    .map((s) => grantRows(s).closed)
    .filter((r): r is GrantRow => r !== undefined);
  await store.insert('grants', closed);
}

async function setCheckpoint(store: AuditStore, cluster: string, revision: number, wallTime: number): Promise<void> {
  await store.insert('checkpoints', [{ cluster, revision: String(revision), leader: 'test' }]);
  await store.insert('events', [{ ...classEvent('x', null, revision, wallTime, cluster), key: '/sys/clock', event_type: 'clock', op: 'put', class: '' }]);
}

const CASES: Array<{ name: string; p: ContentionParams }> = [
  { name: '4 days by namespace', p: { from: iso(H(96, 1234)), to: iso(NOW), by: 'namespace', top: 10 } },
  { name: '4 days by class, top 2', p: { from: iso(H(96)), to: iso(NOW), by: 'class', top: 2 } },
  { name: '4 days by key', p: { from: iso(H(96, 5)), to: iso(NOW), by: 'key', top: 3 } },
  { name: 'one namespace', p: { from: iso(H(96, 5)), to: iso(NOW), namespace: 'pay', top: 1 } },
  { name: 'one class', p: { from: iso(H(96, 5)), to: iso(NOW), class: 'cache', by: 'key' } },
  { name: 'from inside a handoff (window starts between release and grant)', p: { from: iso(H(50, 15_000)), to: iso(H(0, -1)), by: 'namespace' } },
  { name: 'from just after the hour before a cross-hour handoff', p: { from: iso(H(29, 1)), to: iso(NOW - 5), by: 'class' } },
  { name: '10 days, hour-aligned', p: { from: iso(H(240)), to: iso(H(0)), by: 'namespace', top: 5 } },
];

describe("contention from sealed hours: the raw query's answer", () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  let deps: ReportDeps;
  const both = async (p: ContentionParams) => {
    const raw = await contention(deps, p, NOW, { preaggregated: false });
    const hours = await contention(deps, p, NOW, { preaggregated: true });
    return { raw, hours };
  };
  const coveredHours = async (p: ContentionParams) =>
    (
      await reportRows<{ cluster: string; hour_s: number }>(deps, COVERED, {
        fromMs: Date.parse(p.from as string),
        toMs: Date.parse(p.to as string),
        lookbackDays: deps.limits.maxWindowDays,
      })
    ).length;
  const assertSame = async (when: string) => {
    for (const c of CASES) {
      const { raw, hours } = await both(c.p);
      assert.deepEqual(hours, raw, `${when}: ${c.name}`);
    }
  };

  before(async () => {
    ({ store, close } = await tempStore());
    deps = { store, limits: { maxWindowDays: 31, queryTimeoutMs: 60_000 } as ReportDeps['limits'] };
    await insertGrants(store, FIXTURE, CHECKPOINT);
    await store.insert('grants', [grantRows(FIXTURE[1] as GrantSpec).closed as GrantRow]); // a tailer replay: once under FINAL
    await setCheckpoint(store, 'c1', CHECKPOINT, H(0, 1000));
    await setCheckpoint(store, 'c2', 60, H(0, 1000));
  });
  after(async () => close?.());

  it('has answers worth comparing: handoffs, expiries, force-releases, held grants', async () => {
    const { raw } = await both(CASES[0]!.p);
    const pay = raw.groups.find((g) => g.group === 'pay');
    assert.ok(pay && pay.handoffs >= 3 && pay.expiries >= 2 && pay.forceReleases === 1, JSON.stringify(pay));
    assert.ok(
      raw.groups.some((g) => g.group === 'cat' && g.grants === 8 && g.handoffs === 3),
      JSON.stringify(raw.groups),
    );
    // the clock-skewed raw grant's handoff: from hour 6's release, 5 hours after its own (skewed) grant time
    const inv = raw.groups.find((g) => g.group === 'inv');
    assert.ok(inv && inv.handoffs === 1 && (inv.handoffGapMs.p50 ?? 0) < 0, JSON.stringify(inv));
    assert.equal(raw.bucketSeconds, 3600);
  });

  it('seals the hours the checkpoint has passed, and the report reads them from their seals with the raw answer', async () => {
    const sealed = await sealContentionHours(deps);
    const c1 = sealed.find((r) => r.cluster === 'c1');
    assert.ok(c1 && c1.hours >= 8, JSON.stringify(sealed));
    assert.equal(
      c1.irregularHours,
      3,
      "cat/sku-2's clock-skewed grant's hour, and the next one (its previous grant is before one earlier still); inv/item-1's",
    );
    assert.ok((await coveredHours(CASES[0]!.p)) >= 9, 'hours are read from seals');
    await assertSame('sealed');
    // A scoped reader (issue 44): the same answer from seals as raw, only its scope's grants, and by namespace the
    // very figures the unscoped report gives those namespaces.
    const scopes = [
      { namespaces: ['pay'], clusters: [] },
      { namespaces: ['cat', 'inv'], clusters: ['c1'] },
      { namespaces: ['pay'], clusters: ['c1'] },
    ];
    for (const scope of scopes) {
      for (const c of CASES) {
        if (c.p.namespace && !scope.namespaces.includes(c.p.namespace)) continue;
        const raw = await contention(deps, c.p, NOW, { preaggregated: false }, scope);
        const hours = await contention(deps, c.p, NOW, { preaggregated: true }, scope);
        assert.deepEqual(hours, raw, `scoped to ${JSON.stringify(scope)}: ${c.name}`);
        const everything = await contention(deps, c.p, NOW, { preaggregated: false });
        if ((c.p.by ?? 'namespace') === 'namespace') {
          assert.ok(raw.groups.length > 0, c.name);
          assert.ok(
            raw.groups.every((g) => scope.namespaces.includes(g.group)),
            JSON.stringify(raw.groups.map((g) => g.group)),
          );
        }
        if ((c.p.by ?? 'namespace') === 'namespace' && scope.clusters.length === 0) {
          assert.deepEqual(
            raw.groups,
            everything.groups.filter((g) => scope.namespaces.includes(g.group)),
            `scoped to ${JSON.stringify(scope)}: ${c.name}`,
          );
        }
        assert.ok(
          raw.hottestKeys.every((k) => scope.namespaces.includes(k.key.split('/')[0] as string)),
          JSON.stringify(raw.hottestKeys),
        );
      }
    }
    // c2's pay grants are outside a scope of c1 alone, from seals as raw.
    const payGrants = async (scope: { namespaces: string[]; clusters: string[] } | null) =>
      (await contention(deps, CASES[0]!.p, NOW, { preaggregated: true }, scope)).groups.find((g) => g.group === 'pay')?.grants ?? 0;
    const [payAll, payC1] = [await payGrants(null), await payGrants({ namespaces: ['pay'], clusters: ['c1'] })];
    assert.ok(payC1 > 0 && payC1 < payAll, `pay grants: ${payC1} in c1, ${payAll} in all`);
    // Sealing again finds nothing to do.
    assert.deepEqual(
      (await sealContentionHours(deps)).map((r) => r.hours),
      [0, 0],
    );
  });

  it("reads the end of a grant held when sealed, and a late grant's hour raw until it is sealed again", async () => {
    // The tailer catches up: pay/acct-2's first grant ends (revision 300), a grant after it (301) in this hour.
    await insertGrants(
      store,
      FIXTURE.filter((s) => s.end?.rev === 300 || s.rev === 301),
    );
    // A late grant into a sealed hour (an API replica's clock behind, committed after the checkpoint passed).
    const late: GrantSpec = {
      key: 'pay/acct-9',
      class: 'ledger',
      holder: 'h-late',
      rev: 302,
      at: H(12, 1000),
      waitMs: 999,
      end: { kind: 'expiry', at: H(12, 2000), rev: 303 },
    };
    await insertGrants(store, [late]);
    await setCheckpoint(store, 'c1', 400, H(0, 2000));
    const before = await coveredHours(CASES[0]!.p);
    await assertSame('late grant, held grant ended');
    assert.ok((await sealContentionHours(deps, { cluster: 'c1' }))[0]!.hours >= 1, "the late grant's hour is sealed again");
    assert.equal(await coveredHours(CASES[0]!.p), before + 1);
    await assertSame('re-sealed');
  });

  it("a replayed seal replaces the hour's figures, never adds to them", async () => {
    const seals = await store.rows<{ hour_s: number }>(
      `SELECT toUInt32(hour) AS hour_s FROM {db:Identifier}.contention_seals FINAL WHERE cluster = 'c1' ORDER BY hour_s`,
    );
    const hours = seals.map((s) => Number(s.hour_s));
    for (let i = 0; i < 2; i++) assert.equal((await sealContentionHours(deps, { cluster: 'c1', hours }))[0]!.hours, hours.length);
    const rows = await store.rows<{ n: string }>(`SELECT toString(count()) AS n FROM {db:Identifier}.contention_hours WHERE cluster = 'c1'`);
    assert.ok(Number(rows[0]!.n) > 3 * hours.length - 3, 'three seals of each hour are stored');
    await assertSame('sealed three times');
  });

  it('two attempts that take one seal id (two workers sealing in one millisecond) count each hour once', async () => {
    const seals = await store.rows<{ hour_s: number }>(
      `SELECT toUInt32(hour) AS hour_s FROM {db:Identifier}.contention_seals FINAL WHERE cluster = 'c1' ORDER BY hour_s`,
    );
    const hours = seals.map((s) => Number(s.hour_s));
    await new Promise((r) => setTimeout(r, 5));
    // The clock's id now: above every seal so far (earlier milliseconds), below those of the tests after this one.
    const id = BigInt(Date.now()) * 1000n;
    for (let i = 0; i < 2; i++) assert.equal((await sealContentionHours(deps, { cluster: 'c1', hours, sealIds: () => id }))[0]!.hours, hours.length);
    const attempts = await store.rows<{ n: string; newest: string }>(
      `SELECT toString(uniqExact(attempt)) AS n, toString((SELECT max(seal_id) FROM {db:Identifier}.contention_seals FINAL WHERE cluster = 'c1')) AS newest
       FROM {db:Identifier}.contention_hours WHERE cluster = 'c1' AND seal_id = {id:UInt64}`,
      { id: id.toString() },
    );
    assert.deepEqual(attempts, [{ n: '2', newest: id.toString() }], 'both attempts stored their rows under the one id, which is the newest seal');
    await assertSame('two attempts with one seal id');
  });

  it('a restore makes every seal of the cluster stale until sealed again', async () => {
    await store.insert('etcd_timelines', [
      {
        cluster: 'c1',
        generation: 1,
        cluster_id: 'new',
        previous_cluster_id: 'old',
        previous_checkpoint: '400',
        restored_head: '120',
        diverged_after: '120',
        resume_revision: '121',
        reason: 'restore',
      },
    ]);
    // The restore marks pay/acct-2's end rolled back and the grant carried into timeline 1 as held.
    const carried = grantRows(FIXTURE[6] as GrantSpec);
    await store.insert('grants', [
      { ...carried.closed!, rolled_back_by: 1, superseded_by: 1 },
      { ...carried.open, timeline: 1 },
    ]);
    const c1Hours = async () => {
      const rows = await reportRows<{ cluster: string }>(deps, COVERED, { fromMs: Date.parse(CASES[0]!.p.from as string), toMs: NOW, lookbackDays: 31 });
      return rows.filter((r) => r.cluster === 'c1').length;
    };
    assert.equal(await c1Hours(), 0);
    await assertSame('restored, not sealed again');
    // Sealing waits for the new timeline's checkpoint in effect (its resume revision, 121, until its tailer writes one),
    // never the rolled-back timeline's 400.
    const [early] = await sealContentionHours(deps, { cluster: 'c1' });
    assert.equal(early?.checkpoint, '121');
    assert.equal(await c1Hours(), 0);
    await store.insert('checkpoints', [{ cluster: 'c1', revision: '400', leader: 'test' }]);
    await sealContentionHours(deps, { cluster: 'c1' });
    assert.ok((await c1Hours()) > 0);
    await assertSame('restored, sealed again');
  });

  it('covered hours travel as runs of consecutive hours per cluster', () => {
    assert.deepEqual(
      coveredRuns([
        { cluster: 'a', hour_s: 3600 },
        { cluster: 'a', hour_s: 7200 },
        { cluster: 'a', hour_s: 14400 },
        { cluster: 'b', hour_s: 18000 },
      ]),
      { clusters: ['a', 'a', 'b'], runFrom: [3600, 14400, 18000], runTo: [10800, 18000, 21600] },
    );
  });
});

describe("contention from sealed hours on generated data: the raw query's answer", () => {
  let store: AuditStore;
  let close: () => Promise<void>;
  let deps: ReportDeps;
  const endMs = Math.floor(Date.now() / HOUR) * HOUR - 7 * 60_000 + 321;
  before(async () => {
    ({ store, close } = await tempStore());
    deps = { store, limits: { maxWindowDays: 31, queryTimeoutMs: 120_000 } as ReportDeps['limits'] };
    await generateReportData(store, 300_000, endMs, 30); // 60 000 grants over 30 days: hot, warm and cold keys, unprotected grants
  });
  after(async () => close?.());

  it('gives the same answers from seals, also after an hour is sealed again', async () => {
    const sealed = await sealContentionHours(deps, { cluster: 'bench', checkpoint: 10n ** 15n, sealBeforeMs: endMs - 2 * HOUR });
    assert.ok(sealed[0]!.hours > 700, JSON.stringify(sealed));
    const cases: ContentionParams[] = [
      { from: iso(endMs - 30 * DAY + 1), to: iso(endMs), by: 'namespace', top: 10 },
      { from: iso(endMs - 30 * DAY + 1), to: iso(endMs), by: 'key', top: 10 },
      { from: iso(endMs - 9 * DAY - 777), to: iso(endMs - 2 * DAY + 555), by: 'class', top: 5 },
      { from: iso(endMs - 20 * DAY), to: iso(endMs), namespace: 'ns7', top: 3 },
    ];
    for (const p of cases)
      assert.deepEqual(
        await contention(deps, p, endMs, { preaggregated: true }),
        await contention(deps, p, endMs, { preaggregated: false }),
        JSON.stringify(p),
      );
    const hour = Math.floor((endMs - 5 * DAY) / HOUR) * 3600;
    await sealContentionHours(deps, { cluster: 'bench', checkpoint: 10n ** 15n, hours: [hour, hour + 3600], sealBeforeMs: endMs });
    for (const p of cases)
      assert.deepEqual(
        await contention(deps, p, endMs, { preaggregated: true }),
        await contention(deps, p, endMs, { preaggregated: false }),
        `re-sealed: ${JSON.stringify(p)}`,
      );
  });
});

describe('the contention-seal job', () => {
  it('is scheduled every 5 minutes and seals the hours the stored checkpoint has passed', async () => {
    const { store, close } = await tempStore();
    try {
      const config = testConfig({});
      const [scheduler] = contentionSealJob.schedulers?.(config) ?? [];
      assert.equal(scheduler?.id, CONTENTION_SEAL_SCHEDULER_ID);
      assert.equal(scheduler?.pattern, '*/5 * * * *');
      await insertGrants(store, FIXTURE.slice(0, 6));
      await setCheckpoint(store, 'c1', 120, H(0, 1000));
      const run = contentionSealJob.processor({ store, config, logger: createLogger('silent') } as unknown as Parameters<
        typeof contentionSealJob.processor
      >[0]);
      const results = (await (run as unknown as () => Promise<Array<{ cluster: string; hours: number }>>)()) ?? [];
      assert.deepEqual(
        results.map((r) => [r.cluster, r.hours]),
        [['c1', 4]],
      );
      const seals = await store.rows<{ n: string }>('SELECT toString(count()) AS n FROM {db:Identifier}.contention_seals FINAL');
      assert.equal(seals[0]?.n, '4');
    } finally {
      await close();
    }
  });
});
