// A role that serves HTTP checks its port before anything slow (migrations,
// the embedded ClickHouse, elections), so a second `start` on a busy port
// ends at once with one line instead of a listen stack after the rest started.
import { createServer } from 'node:net';
import { LockauditError } from '../core/errors.js';

export function portInUse(host: string, port: number, cause?: unknown): LockauditError {
  return new LockauditError(
    'LOCKAUDIT_ERR_START_PORT_IN_USE',
    `${host}:${port} is already in use (another lockaudit start?); stop that process or set LOCKAUDIT_PORT`,
    { cause },
  );
}

export function isAddressInUse(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE';
}

/** Any other listen error (a host that does not resolve, an address not on this machine): one line naming the setting. */
function cannotListen(host: string, port: number, err: Error): LockauditError {
  const code = (err as NodeJS.ErrnoException).code ?? err.message;
  return new LockauditError('LOCKAUDIT_ERR_CONFIG_INVALID', `invalid configuration:\n  - LOCKAUDIT_HOST (host): cannot listen on ${host}:${port} (${code})`, {
    cause: err,
    details: [`LOCKAUDIT_HOST (host): cannot listen on ${host}:${port} (${code})`],
  });
}

/** Resolves when host:port can be listened on (it is released again at once). */
export function assertPortFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err) => reject(isAddressInUse(err) ? portInUse(host, port, err) : cannotListen(host, port, err)));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve()));
  });
}
