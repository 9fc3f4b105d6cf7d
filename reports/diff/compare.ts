// Pure: what changed between two states of the keyspace. Holds are compared
// by grant (key, grant revision): `appeared` and `ended` are the exact set
// differences; `changedHolder` cross-references the keys present in both
// states under a different grant. Classes are compared field by field.
import type { ClassItem, HoldItem } from '../state/assemble.js';

export interface FieldChange {
  field: string;
  before: unknown;
  after: unknown;
}

export interface ClassChange {
  name: string;
  revision: string;
  fields: FieldChange[];
}

export interface HolderChange {
  key: string;
  before: { holder: string; grantRevision: string; token: string };
  after: { holder: string; grantRevision: string; token: string };
}

export interface StateDiff {
  appeared: HoldItem[];
  ended: HoldItem[];
  changedHolder: HolderChange[];
  classesCreated: ClassItem[];
  classesChanged: ClassChange[];
  classesDeleted: ClassItem[];
}

const grantId = (h: HoldItem): string => `${h.key}\u0000${h.grantRevision}`;

/** Fields of two class definitions that differ (missing on one side = undefined → null). */
export function fieldChanges(before: Record<string, unknown>, after: Record<string, unknown>): FieldChange[] {
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  const out: FieldChange[] = [];
  for (const f of names) {
    const b = before[f];
    const a = after[f];
    if (JSON.stringify(b) !== JSON.stringify(a)) out.push({ field: f, before: b ?? null, after: a ?? null });
  }
  return out;
}

export function compareStates(
  from: { holds: readonly HoldItem[]; classes: readonly ClassItem[] },
  to: { holds: readonly HoldItem[]; classes: readonly ClassItem[] },
): StateDiff {
  const fromIds = new Set(from.holds.map(grantId));
  const toIds = new Set(to.holds.map(grantId));
  const appeared = to.holds.filter((h) => !fromIds.has(grantId(h)));
  const ended = from.holds.filter((h) => !toIds.has(grantId(h)));
  const endedByKey = new Map(ended.map((h) => [h.key, h]));
  const changedHolder: HolderChange[] = [];
  for (const a of appeared) {
    const b = endedByKey.get(a.key);
    if (b)
      changedHolder.push({
        key: a.key,
        before: { holder: b.holder, grantRevision: b.grantRevision, token: b.token },
        after: { holder: a.holder, grantRevision: a.grantRevision, token: a.token },
      });
  }
  const fromClasses = new Map(from.classes.map((c) => [c.name, c]));
  const toClasses = new Map(to.classes.map((c) => [c.name, c]));
  const classesCreated = to.classes.filter((c) => !fromClasses.has(c.name));
  const classesDeleted = from.classes.filter((c) => !toClasses.has(c.name));
  const classesChanged: ClassChange[] = [];
  for (const c of to.classes) {
    const before = fromClasses.get(c.name);
    if (!before || before.revision === c.revision) continue;
    // Whether the lock API wrote it is part of what changed: an insider's copy of the same fields reads foreign.
    const fields = fieldChanges({ ...before.definition, origin: before.origin }, { ...c.definition, origin: c.origin });
    if (fields.length) classesChanged.push({ name: c.name, revision: c.revision, fields });
  }
  return { appeared, ended, changedHolder, classesCreated, classesChanged, classesDeleted };
}
