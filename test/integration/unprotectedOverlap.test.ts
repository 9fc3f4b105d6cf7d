// Unprotected-grant reconciliation (issue 11, defect 5): two API replicas
// granting one key from memory during one quorum loss are double holders
// too — each unprotected grant lists the other, not only protected ones.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { unprotectedReport } from '../../reports/unprotected/index.js';
import { grantRows, type GrantSpec } from '../support/grants.js';
import { tempStore, testConfig } from '../support/env.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
let store: AuditStore;
let closeStore: () => Promise<void>;

const specs: Record<string, GrantSpec> = {
  // Replica n1 and replica n2 both granted cat/sku-1 from memory; their holds overlap.
  a: { key: 'cat/sku-1', class: 'cache', holder: 'h-a', rev: 0, at: T0, spool: 'n1:000001', end: { kind: 'release', at: T0 + 3_000, rev: 0 } },
  b: { key: 'cat/sku-1', class: 'cache', holder: 'h-b', rev: 0, at: T0 + 1_000, spool: 'n2:000001', end: { kind: 'release', at: T0 + 4_000, rev: 0 } },
  // Later on the same key, after both ended: no overlap.
  c: { key: 'cat/sku-1', class: 'cache', holder: 'h-c', rev: 0, at: T0 + 5_000, spool: 'n2:000002', end: { kind: 'release', at: T0 + 6_000, rev: 0 } },
  // A hold put straight into etcd on cat/sku-3 while a replica granted it from memory: foreign, and shown so.
  e: { key: 'cat/sku-3', class: 'cache', holder: 'h-e', rev: 0, at: T0, spool: 'n1:000003', end: { kind: 'release', at: T0 + 3_000, rev: 0 } },
  f: { key: 'cat/sku-3', class: 'cache', holder: 'h-mallory', rev: 901, at: T0 + 500, origin: 'foreign', end: { kind: 'deleted', at: T0 + 2_500, rev: 905 } },
  // Another key at the same time: no overlap.
  d: { key: 'cat/sku-2', class: 'cache', holder: 'h-d', rev: 0, at: T0 + 1_000, spool: 'n1:000002', end: { kind: 'release', at: T0 + 2_000, rev: 0 } },
};

before(async () => {
  ({ store, close: closeStore } = await tempStore());
  await store.insert(
    'grants',
    Object.values(specs).map((s) => grantRows(s).open),
  );
  await store.insert(
    'grants',
    Object.values(specs).flatMap((s) => grantRows(s).closed ?? []),
  );
});
after(async () => {
  await closeStore();
});

describe('unprotected grants overlapping each other', () => {
  it('are listed as possible double holders of each other, and nothing else is', async () => {
    const report = await unprotectedReport(
      { store, limits: testConfig().reports },
      { from: new Date(T0 - 60_000).toISOString(), to: new Date(T0 + 60_000).toISOString() },
      T0 + 120_000,
    );
    const by = new Map(report.items.map((i) => [i.spoolId, i.overlapping.map((o) => o.holder)]));
    assert.deepEqual(by.get('n1:000001'), ['h-b'], "the other replica's grant overlapped it");
    assert.deepEqual(by.get('n2:000001'), ['h-a'], 'and the other way round');
    assert.deepEqual(by.get('n2:000002'), [], 'after both ended: none');
    assert.deepEqual(by.get('n1:000002'), [], 'another key: none (a grant never overlaps itself)');
    assert.ok(
      report.items.filter((i) => i.key !== 'cat/sku-3').every((i) => i.overlapping.every((o) => o.unprotected)),
      'each marked unprotected',
    );
    // The overlapping grant as it was recorded: foreign, its start known, its end's error bound (before: origin always api).
    const mallory = report.items.find((i) => i.spoolId === 'n1:000003')?.overlapping;
    assert.deepEqual(
      mallory?.map((o) => [o.holder, o.origin, o.startKnown, o.endedAtErrorMs]),
      [['h-mallory', 'foreign', true, 0]],
    );
  });
});
