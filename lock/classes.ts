// The class registry (/sys/class/<name>, DESIGN.md §2 "Lock classes").
// Reads are cached with their mod revision; every grant txn compares that
// revision, so a stale cache costs a retry, never a grant under old rules.
import { decodeValue, LockClassSchema, classRuleViolations, type LockClass } from '../core/keyspace.js';
import { LockauditError } from '../core/errors.js';
import { op, type Kv, type LockKeys } from './kv.js';
import type { LockEtcd } from './lockEtcd.js';

export interface CachedClass {
  value: LockClass;
  modRevision: string;
}

/** Every broken rule of a class, shape rules aside (the route schema checks those). */
export function classProblems(c: LockClass): string[] {
  const problems = classRuleViolations(c);
  if (c.ttlSeconds < 5 || c.ttlSeconds > 300) problems.push('ttlSeconds: must be between 5 and 300');
  return problems;
}

export class Classes {
  readonly #etcd: LockEtcd;
  readonly #keys: LockKeys;
  readonly #cache = new Map<string, CachedClass>();

  constructor(etcd: LockEtcd, keys: LockKeys) {
    this.#etcd = etcd;
    this.#keys = keys;
  }

  /** The class, from cache or etcd; a serializable read when the quorum is lost. */
  async get(name: string, options: { fresh?: boolean } = {}): Promise<CachedClass> {
    const cached = this.#cache.get(name);
    if (cached && !options.fresh) return cached;
    const { kv } = await this.#etcd.get(this.#keys.class(name), { serializable: this.#etcd.quorum.lost });
    if (!kv) {
      this.#cache.delete(name);
      throw new LockauditError('LOCKAUDIT_ERR_CLASS_NOT_FOUND', `class "${name}" is not registered (PUT /v1/classes/${name} creates it)`);
    }
    return this.accept(name, kv);
  }

  cached(name: string): CachedClass | undefined {
    return this.#cache.get(name);
  }

  /** Takes a freshly read class kv (e.g. from a failed grant txn) into the cache. */
  accept(name: string, kv: Kv): CachedClass {
    const value = decodeValue(LockClassSchema, kv.value);
    if (!value) throw new LockauditError('LOCKAUDIT_ERR_INTERNAL', `class "${name}" in etcd does not decode as a lock class`);
    const entry = { value, modRevision: kv.modRevision };
    this.#cache.set(name, entry);
    return entry;
  }

  drop(name: string): void {
    this.#cache.delete(name);
  }

  /** Validates every rule, then writes the class; a rejected class names each broken rule. */
  async put(value: LockClass): Promise<CachedClass> {
    const problems = classProblems(value);
    if (problems.length > 0) {
      throw new LockauditError('LOCKAUDIT_ERR_CLASS_INVALID', `class "${value.name}" breaks ${problems.length} rule(s): ${problems.join('; ')}`, { details: problems });
    }
    const res = await this.#etcd.txn([], [op.put(this.#keys.class(value.name), value)]);
    const entry = { value, modRevision: String(res.header.revision) };
    this.#cache.set(value.name, entry);
    return entry;
  }
}
