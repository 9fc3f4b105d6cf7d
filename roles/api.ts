// The api role: builds the app and listens on config.host:config.port.
import type { RoleHandle, Runtime } from '../platform/runtime.js';
import { buildApp, type RoutePlugin } from '../api/app.js';

export async function startApiRole(runtime: Runtime, routes: readonly RoutePlugin[]): Promise<RoleHandle & { url: string }> {
  const app = await buildApp(runtime, routes);
  const url = await app.listen({ host: runtime.config.host, port: runtime.config.port });
  runtime.logger.info({ url }, 'api listening');
  return {
    name: 'api',
    url,
    // fastify's close drains in-flight requests (preClose → onClose).
    close: () => app.close(),
  };
}
