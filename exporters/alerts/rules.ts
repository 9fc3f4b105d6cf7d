// Which events a sink delivers: any rule matches (kinds AND namespaces AND
// classes AND purposes; an absent list matches everything). A foreign grant
// is still a grant: a 'grant' rule matches it too; a refused two-person
// approval is still a two-person act: a 'two-person' rule matches it too. Pure.
import type { AlertRule } from '../../core/config.js';
import type { AlertEvent } from './alertEvent.js';
import { CANARY_NAMESPACE } from '../../core/keyspace.js';

/** What the platform's canary does with its own locks every few seconds (roles/canary/): noise to a SIEM, never sent. */
const CANARY_OWN_KINDS: readonly string[] = ['grant', 'release', 'expiry'];

export function matches(rules: readonly AlertRule[], e: AlertEvent, purposeOf: (cls: string) => string | undefined): boolean {
  // A write around the API into the canary's namespace (foreign-grant, deleted) or an operator's act on it is still sent.
  if (e.namespace === CANARY_NAMESPACE && CANARY_OWN_KINDS.includes(e.kind)) return false;
  return rules.some(
    (r) =>
      ((r.kinds as readonly string[]).includes(e.kind) ||
        (e.kind === 'foreign-grant' && (r.kinds as readonly string[]).includes('grant')) ||
        (e.kind === 'two-person-refused' && (r.kinds as readonly string[]).includes('two-person'))) &&
      (!r.namespaces || r.namespaces.includes(e.namespace)) &&
      (!r.classes || r.classes.includes(e.class)) &&
      (!r.purposes || (r.purposes as readonly string[]).includes(purposeOf(e.class) ?? '')),
  );
}

/** Every kind any rule names: what the sink needs to read at all. */
export function ruleKinds(rules: readonly AlertRule[]): string[] {
  return [...new Set(rules.flatMap((r) => r.kinds))].sort();
}

/** The event types a sink reads from a cluster's log: its kinds, and `grant` for `canary` (the canary's grants are grant events). */
export function logKinds(rules: readonly AlertRule[]): string[] {
  const kinds = ruleKinds(rules);
  return kinds.includes('canary') && !kinds.includes('grant') ? [...kinds, 'grant'].sort() : kinds;
}

/** The waiver kinds, read from stored risk-register runs rather than a cluster's log. */
export const WAIVER_KINDS = { 'waiver-expired': 'expired', 'waiver-expiring': 'expiring' } as const;

/** The register statuses any rule can match ([] when no rule names a waiver kind). */
export function waiverStatuses(rules: readonly AlertRule[]): string[] {
  const kinds = ruleKinds(rules);
  return Object.entries(WAIVER_KINDS)
    .filter(([k]) => kinds.includes(k))
    .map(([, status]) => status);
}

/** The kinds read from the two-person log rather than a cluster's etcd log (twoPersonDelivery.ts). */
export const TWO_PERSON_KINDS = ['two-person', 'two-person-refused'] as const;
