// One embedded audit store for a whole test file: opened before its first
// test, closed (and its directory removed) after its last. Call at the top of
// the file, outside any describe, so the hooks belong to the file.
import { after, before } from 'node:test';
import type { AuditStore } from '../../core/clickhouse.js';
import { tempStore } from './env.js';

export function fileStore(): { readonly store: AuditStore } {
  let opened: Awaited<ReturnType<typeof tempStore>> | undefined;
  before(async () => {
    opened = await tempStore();
  });
  after(async () => {
    await opened?.close();
  });
  return {
    get store(): AuditStore {
      if (!opened) throw new Error('fileStore: the store is open only inside the tests of the file');
      return opened.store;
    },
  };
}
