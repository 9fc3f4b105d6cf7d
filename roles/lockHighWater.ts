// The lock API's shared high-water, wired: the audit store's highest captured
// API grant per cluster (tailer/sink/grantHighWater.ts) is what a new API process
// finds of the tokens other processes issued (lock/sharedHighWater.ts).
// A stored token no proven grant explains is alarmed and not obeyed (tailer/sink/grantHighWater.ts).
import type { AuditStore } from '../core/clickhouse.js';
import type { GrantHighWaterSource } from '../lock/sharedHighWater.js';
import { alarm, type RaisedAlarm } from '../platform/alarms.js';
import { capturedGrantHighWater } from '../tailer/sink/grantHighWater.js';

export const storeHighWater = (store: AuditStore, originSecret?: Buffer, health?: { raise(a: RaisedAlarm): void }): GrantHighWaterSource =>
  capturedGrantHighWater(store, {
    originSecret,
    onUnexplained: ({ cluster, epoch, usedEpoch }) => health?.raise(alarm('LOCKAUDIT_ALARM_HIGHWATER_UNEXPLAINED', { cluster }, { epoch, usedEpoch })),
  });
