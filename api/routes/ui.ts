// GET /ui/* — the web console (ui/, built by `npm run build:ui` into dist/ui).
// The assets are public: the shell holds no data; every page reads the public
// API with the API token the user signs in with (sent as Bearer).
import { existsSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import { LockauditError } from '../../core/errors.js';
import { projectRoot } from '../../core/paths.js';
import type { App, RouteOptions } from '../types.js';

export const uiDir = path.join(projectRoot, 'dist', 'ui');

export async function uiRoutes(app: App, _options: RouteOptions): Promise<void> {
  if (!existsSync(path.join(uiDir, 'index.html'))) {
    // A source checkout that skipped the UI build still serves the API; say why /ui is missing.
    const missing = async () => {
      throw new LockauditError('LOCKAUDIT_ERR_NOT_FOUND', 'the web console is not built; run `npm run build:ui`');
    };
    app.get('/ui', { schema: { hide: true } }, missing);
    app.get('/ui/*', { schema: { hide: true } }, missing);
    return;
  }
  // decorateReply: false — @fastify/swagger-ui registers @fastify/static too; two sendFile decorators would clash.
  await app.register(fastifyStatic, { root: uiDir, prefix: '/ui/', decorateReply: false, index: 'index.html', schemaHide: true });
  // Relative asset URLs resolve against /ui/, so the bare prefix redirects there.
  app.get('/ui', { schema: { hide: true } }, (_request, reply) => reply.redirect('/ui/'));
}
