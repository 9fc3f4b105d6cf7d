// The lock API's shared high-water, wired: the audit store's highest captured
// API grant per cluster (tailer/grantHighWater.ts) is what a new API process
// finds of the tokens other processes issued (lock/sharedHighWater.ts).
import type { AuditStore } from '../core/clickhouse.js';
import type { GrantHighWaterSource } from '../lock/sharedHighWater.js';
import { capturedGrantHighWater } from '../tailer/grantHighWater.js';

export const storeHighWater = (store: AuditStore): GrantHighWaterSource => capturedGrantHighWater(store);
