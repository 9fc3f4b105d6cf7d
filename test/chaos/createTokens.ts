// Creates a chaos run's API tokens in the platform's store before the
// platform starts (embedded ClickHouse is one process's at a time):
// `node --import tsx test/chaos/createTokens.ts OUT.json WORKERS`.
// The file is in the shape `lockaudit simulate --tokens` reads, plus the
// tokens the chaos run itself uses.
import { writeFileSync } from 'node:fs';
import { createApiToken } from '../../core/apiTokens.js';
import { AuditStore } from '../../core/clickhouse.js';
import { loadConfig } from '../../core/config.js';
import { migrate } from '../../core/migrations.js';
import { createFleetTokens } from '../../cli/simulate/fleetTokens.js';
import { PUMP_CLIENTS } from './pump.js';

const [file, workers] = process.argv.slice(2);
if (!file || !workers) throw new Error('usage: createTokens.ts OUT.json WORKERS');
const config = loadConfig();
const store = new AuditStore(config.clickhouse);
try {
  await migrate(store);
  const fleet = await createFleetTokens(store, Number(workers));
  const investigator = await createApiToken(store, 'chaos-investigator@corp.example', ['investigator', 'auditor']);
  // One identity per force-release test: a session is one lease per (identity, TTL), and a revoked one must not be reused.
  const chaosClients: string[] = [];
  for (let i = 0; i < 40; i++) chaosClients.push((await createApiToken(store, `spiffe://chaos.lockaudit/payments/force-target-${i}`, ['client'])).token);
  // The throughput pump's clients (the realistic profile): one identity per pump loop.
  const pumpClients: string[] = [];
  for (let i = 0; i < PUMP_CLIENTS; i++) pumpClients.push((await createApiToken(store, `spiffe://chaos.lockaudit/payments/pump-${i}`, ['client'])).token);
  const out = {
    admin: fleet.admin,
    operators: fleet.operators.map((o) => o.token),
    clients: fleet.clients.map((c) => c.token),
    investigator: investigator.token,
    chaosClients,
    pumpClients,
  };
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`, { mode: 0o600 });
} finally {
  await store.close();
}
process.exit(0);
