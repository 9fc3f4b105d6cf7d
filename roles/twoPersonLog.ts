// The lock API's two-person log, wired to the audit store (sql/200): each act of a request's life is one row.
// A failed write is logged, never thrown: the act itself (an approval's force record, a rejection) stands.
import type { AuditStore } from '../core/clickhouse.js';
import type { Logger } from '../core/logger.js';
import type { TwoPersonLog } from '../lock/context.js';

export function storeTwoPersonLog(store: AuditStore, cluster: string, logger: Logger): TwoPersonLog {
  return {
    async record(act) {
      try {
        await store.insert('two_person_log', [
          {
            cluster,
            kind: act.kind,
            action: act.action,
            request_id: act.requestId,
            request_hash: act.requestHash,
            actor: act.actor,
            requester: act.requester,
            key: act.key,
            reason: act.reason,
            revision: act.revision,
          },
        ]);
      } catch (err) {
        logger.error(
          { err: (err as Error).message, kind: act.kind, action: act.action, requestId: act.requestId },
          'two-person act not recorded in the audit log',
        );
      }
    },
  };
}
