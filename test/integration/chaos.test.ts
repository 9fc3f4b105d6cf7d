// The short seeded chaos run (test/chaos/): the real stack on a port block of
// its own (28600–28631, API 28700; CHAOS_PORT_BASE moves it), every fault kind
// once in about four minutes, checked against the independent recorder.
// CHAOS_FAULTS (comma-separated kinds, or "all") narrows it while fixes land;
// the checker itself is never relaxed here.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { projectRoot } from '../../core/paths.js';
import { FAULT_KINDS, type FaultKind } from '../chaos/faults.js';
import { runChaos } from '../chaos/run.js';

const portBase = Number(process.env.CHAOS_PORT_BASE ?? 28600);
const chosen = (process.env.CHAOS_FAULTS ?? 'all').split(',').map((s) => s.trim());
const has = (k: string): boolean => chosen.includes('all') || chosen.includes(k);

describe('chaos: a short seeded fault-injection run', { timeout: 900_000 }, () => {
  it('loses, duplicates and misreads nothing under every fault kind', async () => {
    const outcome = await runChaos(
      {
        seed: Number(process.env.CHAOS_SEED ?? 11),
        minutes: 4,
        portBase,
        apiPort: portBase + 100,
        dataDir: path.join(projectRoot, `.lockaudit-chaos-${portBase}`),
        faults: FAULT_KINDS.filter((k: FaultKind) => has(k)),
        foreignWrites: has('foreign-writes'),
        badValues: has('bad-values'),
        insiderWrites: has('insider-writes'),
        sessionLapses: has('session-lapses'),
        workers: 6,
        rate: 6,
        pump: 2, // the realistic profile's pump, lightly: its loops run in every `npm test`
        massExpiryHolds: 5_000,
        serviceDownSeconds: 15,
        electionTtlSeconds: 5,
        keep: false,
      },
      (m) => process.stderr.write(`chaos: ${m}\n`),
    );
    process.stderr.write(`${outcome.report}\n`);
    for (const kind of FAULT_KINDS.filter((k) => has(k)))
      assert.ok(
        outcome.faults.some((f) => f.kind === kind && f.ok),
        `fault ${kind} was injected`,
      );
    assert.deepEqual(outcome.result.invalid, [], outcome.report);
    assert.deepEqual(outcome.result.violations.slice(0, 10), [], outcome.report);
    assert.equal(outcome.result.status, 'clean');
  });
});
