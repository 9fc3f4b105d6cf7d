// The API process's view of the other role processes under `lockaudit start` (platform/roleStatus.ts): their
// metrics aggregated with its own in one exposition, their alarms listed with their role, and a role that ended
// taking its alarms with it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Registry } from 'prom-client';
import { HealthState } from '../../platform/health.js';
import { PeerMetrics, type RoleStatus } from '../../platform/roleStatus.js';

function registryWith(value: number): Registry {
  const registry = new Registry();
  new Counter({ name: 'lockaudit_test_events_total', help: 'test', registers: [registry] }).inc(value);
  return registry;
}

describe('peer role statuses in the API process', () => {
  it("sums the roles' metrics with its own and lists their alarms until they are gone", async () => {
    const health = new HealthState();
    const peers = new PeerMetrics(health);
    const own = registryWith(1);
    assert.match(await peers.metrics(own), /^lockaudit_test_events_total 1$/m, 'no peers: its own');
    const tailer: RoleStatus = {
      type: 'lockaudit-role-status',
      role: 'tailer',
      pid: 4242,
      metrics: (await registryWith(2).getMetricsAsJSON()) as RoleStatus['metrics'],
      alarms: [
        { code: 'LOCKAUDIT_ALARM_FOREIGN_WRITE', name: 'foreign-write:local', message: 'a hold not made by the lock API', since: '2026-12-05T00:00:00.000Z' },
      ],
    };
    peers.update([tailer]);
    assert.match(await peers.metrics(own), /^lockaudit_test_events_total 3$/m, 'summed across the processes');
    assert.deepEqual(
      health.allAlarms().map((a) => [a.role, a.code]),
      [['tailer', 'LOCKAUDIT_ALARM_FOREIGN_WRITE']],
    );
    assert.deepEqual(health.alarms(), [], "not this process's own (its alarm gauge does not count them twice)");
    peers.update([]);
    assert.deepEqual(health.allAlarms(), [], 'the role ended: its alarms went with it');
  });
});
