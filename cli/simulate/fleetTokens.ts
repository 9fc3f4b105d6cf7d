// API tokens for a simulated fleet: an admin (registers classes), two
// lock-operators (force-releases need two people) and one client per worker.
import { createApiToken, type Role } from '../../core/apiTokens.js';
import type { AuditStore } from '../../core/clickhouse.js';
import { workerIdentity, type SimTokens } from './run.js';

export async function createFleetTokens(store: AuditStore, workers: number): Promise<SimTokens> {
  const make = async (identity: string, roles: Role[]): Promise<string> => (await createApiToken(store, identity, roles)).token;
  return {
    admin: await make('sim-admin@corp.example', ['admin']),
    operators: [
      { identity: 'sim-alice@corp.example', token: await make('sim-alice@corp.example', ['lock-operator']) },
      { identity: 'sim-bob@corp.example', token: await make('sim-bob@corp.example', ['lock-operator']) },
    ],
    clients: await Promise.all(
      Array.from({ length: workers }, async (_, i) => ({ identity: workerIdentity(i), token: await make(workerIdentity(i), ['client']) })),
    ),
  };
}
