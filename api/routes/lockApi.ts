// The embedded lock API as one route plugin: it registers the lock routes of
// a LockService built and closed by the roles (roles/lockEngine.ts), which
// also chose the cluster it serves. Only routes here.
import { asPlugin, type RoutePlugin } from '../types.js';
import type { LockService } from '../../lock/service.js';
import { classRoutes } from './classes.js';
import { epochRoutes } from './epoch.js';
import { forceReleaseRoutes } from './forceReleases.js';
import { lockRoutes } from './locks.js';
import { sessionRoutes } from './sessions.js';

export function lockApi(lock: LockService): RoutePlugin {
  return async function lockApi(app, { ctx }) {
    for (const routes of [sessionRoutes, lockRoutes, classRoutes, forceReleaseRoutes, epochRoutes]) await app.register(asPlugin(routes(lock)), { ctx });
  };
}
