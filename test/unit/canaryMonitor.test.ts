// The canary monitor's judgement (roles/canary/monitor.ts) on a clock and a
// follower of the test's own: a stage past its bound alarms, the earliest one
// is named as where the path stops, an alarm whose reason changes is raised
// again with the new one, a read that hangs neither freezes the other stages
// nor piles up, and a stage never passed counts from the start.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '../../core/logger.js';
import { createMetricsRegistry } from '../../core/metrics.js';
import { HealthState } from '../../platform/health.js';
import type { CanaryGrant } from '../../roles/canary/loop.js';
import { canaryMetrics, CanaryMonitor } from '../../roles/canary/monitor.js';
import type { StageTimes } from '../../roles/canary/stages.js';

const BOUNDS = { lock: 10_000, stored: 20_000, sealed: 60_000, 'sink:siem': 20_000 };

function setup() {
  let now = 1_000_000;
  let times: StageTimes = { stored: null, sealed: null, sealedThrough: null, sinks: {}, unread: {} };
  let hang = false;
  let reads = 0;
  const health = new HealthState();
  const monitor = new CanaryMonitor({
    cluster: 'c1',
    follower: {
      read: async () => {
        reads += 1;
        if (hang) return new Promise<StageTimes>(() => undefined);
        return times;
      },
    },
    grants: (): CanaryGrant[] => [],
    bounds: BOUNDS,
    health,
    metrics: canaryMetrics(createMetricsRegistry()),
    logger: createLogger('silent'),
    now: () => now,
    readTimeoutMs: 50,
  });
  const message = (stage: string) => health.alarms().find((a) => a.name === `canary:c1:${stage}`)?.message;
  return {
    monitor,
    health,
    message,
    at: (ms: number) => (now = ms),
    now: () => now,
    set: (t: Partial<StageTimes>) => (times = { ...times, ...t }),
    hang: (h: boolean) => (hang = h),
    reads: () => reads,
  };
}

describe('the canary monitor', () => {
  it('names the earliest stage behind as where the path stops, and the later ones as behind it', async () => {
    const t = setup();
    t.set({ stored: 1_000_000, sealed: 1_000_000, sinks: { siem: 1_000_000 } });
    await t.monitor.observe({ at: 1_000_000, ok: true });
    assert.deepEqual(t.health.alarms(), []);
    // The tailer stops: the lock keeps passing, nothing more is stored.
    t.at(1_030_000);
    await t.monitor.observe({ at: 1_030_000, ok: true });
    assert.match(t.message('stored') ?? '', /stage stored 30 s ago \(bound 20 s\); the stages before it keep up: the audit path stops here/);
    assert.match(t.message('sink:siem') ?? '', /stage stored is behind too/);
    assert.equal(t.message('lock'), undefined);
    assert.equal(t.message('sealed'), undefined, 'within its own bound');
  });

  it('raises an alarm again when its reason changes (the lock back, the tailer still stuck)', async () => {
    const t = setup();
    t.set({ stored: 1_000_000, sealed: 1_000_000, sinks: { siem: 1_000_000 } });
    await t.monitor.observe({ at: 1_000_000, ok: true });
    t.at(1_030_000);
    await t.monitor.observe({ at: 1_030_000, ok: false, error: 'etcd unavailable' });
    t.at(1_045_000);
    await t.monitor.observe({ at: 1_045_000, ok: false, error: 'etcd unavailable' });
    assert.match(t.message('lock') ?? '', /the last cycle failed: etcd unavailable/);
    assert.match(t.message('stored') ?? '', /stage lock is behind too/);
    t.at(1_050_000);
    await t.monitor.observe({ at: 1_050_000, ok: true });
    assert.equal(t.message('lock'), undefined, 'the lock stage cleared');
    assert.match(t.message('stored') ?? '', /stage stored 50 s ago .*the stages before it keep up: the audit path stops here/, 'said again, now true');
  });

  it('a read that hangs is given up on: the stages age on, said as unread, and no second read piles up', async () => {
    const t = setup();
    t.set({ stored: 1_000_000, sealed: 1_000_000, sinks: { siem: 1_000_000 } });
    await t.monitor.observe({ at: 1_000_000, ok: true });
    t.hang(true);
    t.at(1_030_000);
    await t.monitor.observe({ at: 1_030_000, ok: true });
    t.at(1_040_000);
    await t.monitor.observe({ at: 1_040_000, ok: true });
    assert.equal(t.reads(), 2, 'the hung read is not started again while it runs');
    assert.match(t.message('stored') ?? '', /stage stored \d+ s ago \(bound 20 s\); its progress could not be read \(no answer within 50 ms\)/);
    assert.equal(t.message('lock'), undefined, 'the lock stage is judged on');
  });

  it("what could not be read is said of its own stage only: the bucket unread is not the tailer's stop", async () => {
    const t = setup();
    t.set({ stored: 1_000_000, sealed: 1_000_000, sinks: { siem: 1_000_000 } });
    await t.monitor.observe({ at: 1_000_000, ok: true });
    t.set({ unread: { sealed: 'the archive bucket: connection reset' } });
    t.at(1_070_000);
    await t.monitor.observe({ at: 1_070_000, ok: true });
    assert.match(t.message('stored') ?? '', /the stages before it keep up: the audit path stops here/);
    assert.match(t.message('sink:siem') ?? '', /stage stored is behind too/);
    t.set({ stored: 1_070_000, sinks: { siem: 1_070_000 } });
    t.at(1_075_000);
    await t.monitor.observe({ at: 1_075_000, ok: true });
    assert.equal(t.message('stored'), undefined);
    assert.match(t.message('sealed') ?? '', /its progress could not be read \(the archive bucket: connection reset\)/);
  });

  it('a stage never passed counts from the start, and alarms once its bound has passed', async () => {
    const t = setup();
    await t.monitor.observe({ at: 1_000_000, ok: true });
    assert.deepEqual(t.health.alarms(), []);
    t.at(1_025_000);
    await t.monitor.observe({ at: 1_025_000, ok: true });
    assert.match(t.message('stored') ?? '', /stage stored 25 s ago/);
    assert.equal(t.health.canary()?.find((s) => s.stage === 'stored')?.passedAt, null);
  });
});
