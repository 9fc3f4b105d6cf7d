// Input shapes shared by the report parameter schemas. Every free-text filter
// has a strict pattern: values are always bound as parameters anyway, but a
// value that cannot be a key, holder or class is a caller error (400), not an
// empty result.
import Type, { type TStringOptions } from 'typebox';
import { CLUSTER_NAME_PATTERN } from '../core/config.js';
import { LOCK_NAME_MAX, LOCK_NAME_PATTERN } from '../core/keyspace.js';

export const LockName = (opts: TStringOptions = {}) =>
  Type.String({
    pattern: LOCK_NAME_PATTERN,
    maxLength: LOCK_NAME_MAX,
    description: 'A lock name: <namespace>/<path>',
    examples: ['payments/acct-42'],
    ...opts,
  });
export const KeyPrefix = (opts: TStringOptions = {}) =>
  Type.String({
    pattern: '^[A-Za-z0-9][A-Za-z0-9._/-]{0,511}$',
    description: 'A lock-name prefix, e.g. a namespace and the start of a path',
    examples: ['payments/acct-'],
    ...opts,
  });
export const Holder = (opts: TStringOptions = {}) =>
  Type.String({
    pattern: '^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$',
    description: 'The holder identity (SPIFFE-style or plain)',
    examples: ['spiffe://corp/payments-worker'],
    ...opts,
  });
export const ClassName = (opts: TStringOptions = {}) =>
  Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,63}$', description: 'A lock class name', examples: ['ledger-entry'], ...opts });
export const ClusterName = (opts: TStringOptions = {}) =>
  Type.String({ pattern: CLUSTER_NAME_PATTERN, description: 'An etcd cluster name as configured', examples: ['local'], ...opts });
export const Namespace = (opts: TStringOptions = {}) =>
  Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$', description: 'A lock namespace', examples: ['payments'], ...opts });
export const Decimal64 = (opts: TStringOptions = {}) =>
  Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$', description: 'A 64-bit unsigned integer as a decimal string', examples: ['11258999068426240'], ...opts });
export const Instant = (opts: TStringOptions = {}) =>
  Type.String({ format: 'date-time', description: 'An ISO 8601 timestamp with a zone', examples: ['2025-11-29T03:12:00Z'], ...opts });
export const NullableString = (description: string, examples: unknown[] = []) => Type.Union([Type.String(), Type.Null()], { description, examples });
export const NullableNumber = (description: string, examples: unknown[] = []) => Type.Union([Type.Number(), Type.Null()], { description, examples });
