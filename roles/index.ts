// The roles a lockaudit process can run, and what each one is made of.
// Route modules and job queues are listed here, once.
import type { RoutePlugin } from '../api/app.js';
import { startApiRole } from './api.js';
import { startWorkerRole, type JobQueue } from '../platform/jobs.js';
import { lockApi } from '../api/routes/lockApi.js';
import { tailerRoutes } from '../api/routes/tailers.js';
import { startTailerRole } from './tailer.js';
import { grantRoutes } from '../api/routes/grants.js';
import { quarantineRoutes } from '../api/routes/quarantine.js';
import { reportRoutes } from '../api/routes/reports.js';
import { riskRegisterJob, scheduleRiskRegister } from '../reports/riskRegister/job.js';
import { exportRoutes } from '../api/routes/exports.js';
import { uiRoutes } from '../api/routes/ui.js';
import { exportJobQueues, forceArchiveService } from '../exporters/exportJobs.js';
import type { RoleHandle, Runtime } from '../platform/runtime.js';

export const apiRoutes: RoutePlugin[] = [tailerRoutes, lockApi(), grantRoutes, quarantineRoutes, reportRoutes, exportRoutes(), uiRoutes];
export const jobQueues: JobQueue[] = [riskRegisterJob, ...exportJobQueues];
/** Loops the worker role runs beside its job workers. */
export const workerServices = [forceArchiveService()];

export type RoleName = 'api' | 'worker' | 'tailer';

export const roleSet: Record<RoleName, (runtime: Runtime) => Promise<RoleHandle>> = {
  api: (runtime) => startApiRole(runtime, apiRoutes),
  worker: async (runtime) => {
    const handle = await startWorkerRole(runtime, jobQueues, workerServices);
    // Schedulers are upserted at every worker start (idempotent, deterministic ids).
    try {
      await scheduleRiskRegister(runtime);
    } catch (err) {
      await handle.close();
      throw err;
    }
    return handle;
  },
  tailer: (runtime) => startTailerRole(runtime),
};
