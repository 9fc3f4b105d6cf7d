// The class registry (/sys/class/<name>, docs/architecture.md, the lock service's rules).
// Reads are cached with their mod revision; every grant txn compares that
// revision, so a stale cache costs a retry, never a grant under old rules.
// Every class carries the API's proof (core/proof.ts) bound to its key's
// create revision and the version the put makes, so a class put by hand — or
// an older version put back — is never used to grant (acquire names why) and
// reads as not the API's wherever classes are shown. A new key is written in
// two steps: a first put with a pending proof (never usable) to learn the
// key's create revision, then the proven put bound to it.
import { decodeValue, classRuleViolations, StoredClassSchema, type LockClass, type StoredClass } from '../core/keyspace.js';
import { LockauditError } from '../core/errors.js';
import { classMac, classPendingMac, classProofState } from '../core/proof.js';
import { cmp, op, type Kv, type LockKeys } from './kv.js';
import type { LockEtcd } from './lockEtcd.js';

export interface CachedClass {
  value: LockClass;
  modRevision: string;
  /** 'proven': the API wrote this very put; 'pending': the API's first put of a new key; 'unproven': someone else's. */
  proof: 'proven' | 'pending' | 'unproven';
}

/** Every broken rule of a class, shape rules aside (the route schema checks those). */
export function classProblems(c: LockClass): string[] {
  const problems = classRuleViolations(c);
  if (c.ttlSeconds < 5 || c.ttlSeconds > 300) problems.push('ttlSeconds: must be between 5 and 300');
  return problems;
}

const PUT_ATTEMPTS = 5;

export class Classes {
  readonly #etcd: LockEtcd;
  readonly #keys: LockKeys;
  readonly #secret: Buffer;
  readonly #cache = new Map<string, CachedClass>();

  constructor(etcd: LockEtcd, keys: LockKeys, originSecret: Buffer) {
    this.#etcd = etcd;
    this.#keys = keys;
    this.#secret = originSecret;
  }

  /** The class as etcd holds it, proven or not (for showing it); from cache or etcd; a serializable read when the quorum is lost. */
  async read(name: string, options: { fresh?: boolean } = {}): Promise<CachedClass> {
    const cached = this.#cache.get(name);
    if (cached && !options.fresh) return cached;
    const { kv } = await this.#etcd.get(this.#keys.class(name), { serializable: this.#etcd.quorum.lost });
    if (!kv) {
      this.#cache.delete(name);
      throw new LockauditError('LOCKAUDIT_ERR_CLASS_NOT_FOUND', `class "${name}" is not registered (PUT /v1/classes/${name} creates it)`);
    }
    return this.accept(name, kv);
  }

  /** The class to grant under: only a proven one (LOCKAUDIT_ERR_CLASS_UNPROVEN otherwise). */
  async get(name: string, options: { fresh?: boolean } = {}): Promise<CachedClass> {
    return usable(name, await this.read(name, options));
  }

  cached(name: string): CachedClass | undefined {
    return this.#cache.get(name);
  }

  /** The cached class to grant under (after a txn's retry took a fresh one): proven, or the error that says why not. */
  usable(name: string): CachedClass {
    const entry = this.#cache.get(name);
    if (!entry) throw new LockauditError('LOCKAUDIT_ERR_CLASS_NOT_FOUND', `class "${name}" is no longer registered`);
    return usable(name, entry);
  }

  /** Takes a freshly read class kv (e.g. from a failed grant txn) into the cache, judged. */
  accept(name: string, kv: Kv): CachedClass {
    const entry = this.#judge(name, kv);
    if (!entry) {
      this.#cache.delete(name);
      throw new LockauditError(
        'LOCKAUDIT_ERR_CLASS_UNPROVEN',
        `class "${name}": the value under ${kv.key} is not a lock class (written around the API); nothing is granted under it until an admin writes it (PUT /v1/classes/${name})`,
      );
    }
    this.#cache.set(name, entry);
    return entry;
  }

  /** A class kv as the API reads it: the class without its proof, and the proof's state; undefined when it is no class. */
  #judge(name: string, kv: Kv): CachedClass | undefined {
    const stored = decodeValue(StoredClassSchema, kv.value);
    if (!stored) return undefined;
    const { mac: _mac, ...value } = stored;
    return { value, modRevision: kv.modRevision, proof: classProofState(this.#secret, name, stored, kv) };
  }

  /** Every class etcd holds (at most `limit`, by name), each with its proof state; a value that is no class at all reads `unproven` with no class. */
  async list(limit = 1000): Promise<Array<{ name: string; entry: CachedClass | undefined; modRevision: string }>> {
    const prefix = this.#keys.class('');
    const { kvs } = await this.#etcd.getPrefix(prefix, { limit });
    const out = kvs.map((kv) => {
      const name = kv.key.slice(prefix.length);
      return { name, entry: this.#judge(name, kv), modRevision: kv.modRevision };
    });
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  drop(name: string): void {
    this.#cache.delete(name);
  }

  /** Validates every rule, then writes the class, proven for the put it is; a rejected class names each broken rule. */
  async put(value: LockClass): Promise<CachedClass> {
    const problems = classProblems(value);
    if (problems.length > 0) {
      throw new LockauditError('LOCKAUDIT_ERR_CLASS_INVALID', `class "${value.name}" breaks ${problems.length} rule(s): ${problems.join('; ')}`, {
        details: problems,
      });
    }
    const key = this.#keys.class(value.name);
    for (let attempt = 0; attempt < PUT_ATTEMPTS; attempt++) {
      const { kv } = await this.#etcd.get(key);
      let at: Pick<Kv, 'createRevision' | 'modRevision' | 'version'>;
      if (kv) at = kv;
      else {
        const pending: StoredClass = { ...value, mac: classPendingMac(this.#secret, value) };
        const created = await this.#etcd.txn([cmp.absent(key)], [op.put(key, pending)]);
        if (!created.succeeded) continue; // made meanwhile: read it again
        const revision = String(created.header.revision);
        at = { createRevision: revision, modRevision: revision, version: '1' };
      }
      const version = String(BigInt(at.version) + 1n);
      const stored: StoredClass = { ...value, mac: classMac(this.#secret, value, at.createRevision, version) };
      const res = await this.#etcd.txn([cmp.mod(key, at.modRevision)], [op.put(key, stored)]);
      if (!res.succeeded) continue;
      const entry: CachedClass = { value, modRevision: String(res.header.revision), proof: 'proven' };
      this.#cache.set(value.name, entry);
      return entry;
    }
    throw new LockauditError('LOCKAUDIT_ERR_INTERNAL', `class "${value.name}" kept changing under the write (${PUT_ATTEMPTS} attempts); try again`);
  }
}

function usable(name: string, entry: CachedClass): CachedClass {
  if (entry.proof === 'proven') return entry;
  throw new LockauditError(
    'LOCKAUDIT_ERR_CLASS_UNPROVEN',
    entry.proof === 'pending'
      ? `class "${name}" is being written (its first put is not yet followed by the proven one); nothing is granted under it until an admin writes it again (PUT /v1/classes/${name})`
      : `class "${name}" in etcd does not carry the lock API's proof (put by hand, an older version put back, or written before proofs existed); nothing is granted under it until an admin writes it through the API (PUT /v1/classes/${name})`,
  );
}
