// The roles a lockaudit process can run, and what each one is made of.
// Route modules and job queues are listed here, once.
import type { RoutePlugin } from '../api/app.js';
import { startApiRole } from '../api/server.js';
import { startWorkerRole, type JobQueue } from '../exporters/worker.js';
import type { RoleHandle, Runtime } from './runtime.js';

export const apiRoutes: RoutePlugin[] = [];
export const jobQueues: JobQueue[] = [];

export type RoleName = 'api' | 'worker' | 'tailer';

export const roleSet: Record<RoleName, (runtime: Runtime) => Promise<RoleHandle>> = {
  api: (runtime) => startApiRole(runtime, apiRoutes),
  worker: (runtime) => startWorkerRole(runtime, jobQueues),
  tailer: async () => {
    throw new Error('the tailer role is not built yet');
  },
};
