// Which events a sink delivers: any rule matches (kinds AND namespaces AND
// classes AND purposes; an absent list matches everything). Pure.
import type { AlertRule } from '../../core/config.js';
import type { AlertEvent } from './alertEvent.js';

export function matches(rules: readonly AlertRule[], e: AlertEvent, purposeOf: (cls: string) => string | undefined): boolean {
  return rules.some(
    (r) =>
      (r.kinds as readonly string[]).includes(e.kind) &&
      (!r.namespaces || r.namespaces.includes(e.namespace)) &&
      (!r.classes || r.classes.includes(e.class)) &&
      (!r.purposes || (r.purposes as readonly string[]).includes(purposeOf(e.class) ?? '')),
  );
}

/** Every kind any rule names: what the sink needs to read at all. */
export function ruleKinds(rules: readonly AlertRule[]): string[] {
  return [...new Set(rules.flatMap((r) => r.kinds))].sort();
}
