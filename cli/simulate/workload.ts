// The simulated fleet's world: namespaces, their lock classes (fenced and
// advisory; waivers healthy, expiring soon and expired; memory and durable
// fairness; open and closed on quorum loss), their keys with a few hot ones.
import type { LockClass } from '../../core/keyspace.js';
import type { Rng } from './rng.js';

export interface SimNamespace {
  name: string;
  classes: Array<{ lockClass: LockClass; weight: number }>;
  keys: number;
  hotKeys: number;
}

const day = 24 * 3600_000;
const isoDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The namespaces and classes, with waiver dates relative to `now`. */
export function simNamespaces(now: number): SimNamespace[] {
  const fenced = (name: string, namespace: string, extra: Partial<LockClass> = {}): LockClass => ({
    name,
    namespace,
    purpose: 'correctness',
    enforcement: 'fenced',
    ttlSeconds: 15,
    tier: 'entity',
    onQuorumLoss: 'closed',
    fairness: 'memory',
    pauseTest: `PT-sim-${name}`,
    ...extra,
  });
  const advisory = (name: string, namespace: string, waiverDays: number, extra: Partial<LockClass> = {}): LockClass => ({
    name,
    namespace,
    purpose: 'efficiency',
    enforcement: 'advisory',
    riskOwner: `${namespace}-risk@corp.example`,
    waiverExpires: isoDate(now + waiverDays * day),
    ttlSeconds: 30,
    tier: 'entity',
    onQuorumLoss: 'open',
    fairness: 'memory',
    ...extra,
  });
  return [
    {
      name: 'payments',
      keys: 40,
      hotKeys: 2,
      classes: [
        { lockClass: fenced('sim-payments-ledger', 'payments'), weight: 3 },
        { lockClass: fenced('sim-payments-settlement', 'payments', { fairness: 'durable', tier: 'coord' }), weight: 1 },
      ],
    },
    {
      name: 'inventory',
      keys: 60,
      hotKeys: 3,
      classes: [
        { lockClass: advisory('sim-inventory-cache', 'inventory', 10), weight: 3 }, // waiver expiring soon
        { lockClass: fenced('sim-inventory-reserve', 'inventory', { ttlSeconds: 10 }), weight: 1 },
      ],
    },
    {
      name: 'search',
      keys: 30,
      hotKeys: 2,
      classes: [
        { lockClass: advisory('sim-search-reindex', 'search', -5), weight: 1 }, // waiver expired
      ],
    },
    {
      name: 'billing',
      keys: 25,
      hotKeys: 1,
      classes: [
        { lockClass: advisory('sim-billing-batch', 'billing', 200, { purpose: 'correctness', onQuorumLoss: 'closed', ttlSeconds: 60 }), weight: 1 },
        { lockClass: fenced('sim-billing-invoice', 'billing', { fairness: 'durable', ttlSeconds: 20 }), weight: 2 },
      ],
    },
  ];
}

/** A key of the namespace: hot keys take about a third of the traffic. */
export function pickKey(rng: Rng, ns: SimNamespace): string {
  if (rng.chance(0.35)) return `${ns.name}/hot-${rng.int(0, ns.hotKeys - 1)}`;
  return `${ns.name}/item-${rng.int(0, ns.keys - 1)}`;
}
