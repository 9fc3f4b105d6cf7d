// The roles a lockaudit process can run, and what each one is made of.
// Route modules and job queues are listed here, once.
import type { RoutePlugin } from '../api/app.js';
import { startApiRole } from './api.js';
import { startWorkerRole, type JobQueue } from '../platform/jobs.js';
import { lockApi } from '../api/routes/lockApi.js';
import { tailerRoutes } from '../api/routes/tailers.js';
import { startTailerRole } from './tailer.js';
import type { LockService } from '../lock/service.js';
import { grantRoutes } from '../api/routes/grants.js';
import { quarantineRoutes } from '../api/routes/quarantine.js';
import { twoPersonLogRoutes } from '../api/routes/twoPersonLog.js';
import { reportRoutes } from '../api/routes/reports.js';
import { tokenHashRoutes } from '../api/routes/tokenHash.js';
import { stateRoutes } from '../api/routes/state.js';
import { riskRegisterJob } from '../reports/riskRegister/job.js';
import { contentionSealJob } from '../reports/contention/job.js';
import { exportRoutes } from '../api/routes/exports.js';
import { uiRoutes } from '../api/routes/ui.js';
import { digestRoutes } from '../api/routes/digests.js';
import { exportJobQueues, forceArchiveService } from '../exporters/exportJobs.js';
import { alertService } from '../exporters/alerts/service.js';
import { digestService } from '../exporters/digests/service.js';
import { digestMetrics } from '../exporters/digests/metrics.js';
import type { RoleHandle, Runtime } from '../platform/runtime.js';
import { exportMetrics } from '../exporters/exportMetrics.js';
import { alertMetrics } from '../exporters/alerts/alertMetrics.js';

/** The api role's routes around the lock engine it serves. */
export const apiRoutes = (lock: LockService): RoutePlugin[] => [
  tailerRoutes,
  lockApi(lock),
  grantRoutes,
  tokenHashRoutes,
  quarantineRoutes,
  twoPersonLogRoutes,
  reportRoutes,
  stateRoutes,
  exportRoutes(),
  digestRoutes,
  uiRoutes,
];
export const jobQueues: JobQueue[] = [riskRegisterJob, contentionSealJob, ...exportJobQueues];
/** Loops the worker role runs beside its job workers. */
export const workerServices = [forceArchiveService(), alertService(), digestService()];

export type RoleName = 'api' | 'worker' | 'tailer';

export const roleSet: Record<RoleName, (runtime: Runtime) => Promise<RoleHandle>> = {
  api: (runtime) => startApiRole(runtime, apiRoutes),
  // Each queue's schedulers are upserted at every worker start (idempotent, deterministic ids).
  // The worker's metric sets exist from its start (before any job or sink has run), so /metrics names
  // every metric deploy/prometheus and deploy/grafana use (test/integration/monitoring.test.ts).
  worker: (runtime) => {
    exportMetrics(runtime.metrics);
    alertMetrics(runtime.metrics);
    digestMetrics(runtime.metrics);
    return startWorkerRole(runtime, jobQueues, workerServices);
  },
  tailer: (runtime) => startTailerRole(runtime),
};
