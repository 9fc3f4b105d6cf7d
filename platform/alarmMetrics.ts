// Raised alarms as a metric: an alarm is an alert, not a readiness verdict
// (api/routes/health.ts), so Prometheus must see it. One series per catalog
// code (0 when none is raised, so a rule can tell "none" from "not scraped"),
// valued the number of raised instances (one per cluster); read from the
// process's HealthState at each scrape.
import { Gauge, type Registry } from 'prom-client';
import { alarmCatalog, type AlarmCode } from './alarms.js';
import type { HealthState } from './health.js';

export function registerAlarmMetrics(registry: Registry, health: Pick<HealthState, 'alarms'>): void {
  new Gauge({
    name: 'lockaudit_alarms_raised',
    help: 'Raised alarm instances of this process, by alarm code (docs/runbook.md, Alarms); 0 when none.',
    labelNames: ['code'],
    registers: [registry],
    collect() {
      const counts = new Map<AlarmCode, number>(Object.keys(alarmCatalog).map((c) => [c as AlarmCode, 0]));
      for (const a of health.alarms()) counts.set(a.code, (counts.get(a.code) ?? 0) + 1);
      for (const [code, n] of counts) this.set({ code }, n);
    },
  });
}
