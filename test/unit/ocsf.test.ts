// Every alert kind's OCSF event validates against what the published OCSF
// schema requires of its class: required attributes of the base event, the
// category and the class; required attributes and constraints of every object
// it carries; enum values; primitive types; no attribute the class or object
// does not define (lock fields go under `unmapped`); type_uid = class_uid·100
// + activity_id. The requirements are test data derived from the schema's
// JSON files (fixtures/ocsf-required-<version>.json, scripts/ocsfRequired.mjs),
// not from our code.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { FileConfigSchema } from '../../core/config.js';
import {
  fromLogRow,
  fromRegisterRow,
  fromSpoolRow,
  fromTwoPersonRow,
  type AlertEvent,
  type LogRow,
  type TwoPersonRow,
} from '../../exporters/alerts/alertEvent.js';
import { forSink, OCSF_KINDS, OCSF_VERSION, toOcsf } from '../../exporters/alerts/formats.js';
import { hashToken, tokenHashKey } from '../../core/tokenHash.js';

const tokenKey = tokenHashKey(Buffer.from('ocsf-test-origin-secret-0123456789abcdef'));

type Requirement = 'required' | 'recommended' | 'optional' | 'reserved';
type AttrSpec = Requirement | [Requirement, number[]];
interface Definition {
  constraints: { at_least_one?: string[]; just_one?: string[] };
  attributes: Record<string, AttrSpec>;
}
interface ClassDef extends Definition {
  name: string;
  class_uid: number;
  class_name: string;
  category_uid: number;
  category_name: string;
  activities: Record<string, string>;
}
interface Fixture {
  version: string;
  commit: string;
  classes: Record<string, ClassDef>;
  objects: Record<string, Definition>;
  types: Record<string, { type: string; array?: true }>;
  primitive: Record<string, string>;
  observableTypeIds: Record<string, string>;
}

const fixture = JSON.parse(readFileSync(new URL(`./fixtures/ocsf-required-${OCSF_VERSION}.json`, import.meta.url), 'utf8')) as Fixture;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function checkPrimitive(kind: string, v: unknown): boolean {
  switch (kind) {
    case 'string_t':
      return typeof v === 'string';
    case 'integer_t':
    case 'long_t':
      return typeof v === 'number' && Number.isSafeInteger(v);
    case 'float_t':
      return typeof v === 'number';
    case 'boolean_t':
      return typeof v === 'boolean';
    case 'json_t':
      return true;
    default:
      return false;
  }
}

/** Problems of one object against its definition (a class or an OCSF object), each naming its path. */
function validate(value: Record<string, unknown>, def: Definition, path: string, errors: string[]): void {
  for (const [name, spec] of Object.entries(def.attributes)) {
    const requirement = Array.isArray(spec) ? spec[0] : spec;
    if (requirement === 'required' && (value[name] === undefined || value[name] === null)) errors.push(`${path}${name}: required, missing`);
  }
  const here = path.replace(/\.$/, '') || '(event)';
  const present = (names: string[] | undefined) => (names ?? []).filter((n) => value[n] !== undefined && value[n] !== null);
  if (def.constraints.at_least_one && present(def.constraints.at_least_one).length === 0)
    errors.push(`${here}: needs at least one of ${def.constraints.at_least_one.join(', ')}`);
  if (def.constraints.just_one && present(def.constraints.just_one).length !== 1)
    errors.push(`${here}: needs exactly one of ${def.constraints.just_one.join(', ')}`);
  for (const [name, v] of Object.entries(value)) {
    const spec = def.attributes[name];
    if (spec === undefined) {
      errors.push(`${path}${name}: not an attribute of this class or object`);
      continue;
    }
    if (v === null || v === undefined) continue;
    const enumIds = Array.isArray(spec) ? spec[1] : undefined;
    if (enumIds && !enumIds.includes(v as number)) errors.push(`${path}${name}: ${String(v)} not in its enum (${enumIds.join(', ')})`);
    const t = fixture.types[name];
    if (!t) {
      errors.push(`${path}${name}: no type in the dictionary`);
      continue;
    }
    const items = t.array ? v : [v];
    if (t.array && !Array.isArray(v)) {
      errors.push(`${path}${name}: must be an array`);
      continue;
    }
    (items as unknown[]).forEach((item, i) => {
      const at = t.array ? `${path}${name}[${i}]` : `${path}${name}`;
      const prim = fixture.primitive[t.type];
      if (prim !== undefined) {
        if (!checkPrimitive(prim, item)) errors.push(`${at}: not a ${t.type}: ${JSON.stringify(item)}`);
      } else if (name === 'unmapped') {
        if (!isObject(item)) errors.push(`${at}: not an object`);
      } else {
        const obj = fixture.objects[t.type];
        if (!obj) errors.push(`${at}: object type ${t.type} not in the fixture`);
        else if (!isObject(item)) errors.push(`${at}: not an object`);
        else validate(item, obj, `${at}.`, errors);
      }
    });
  }
}

function validateEvent(ev: Record<string, unknown>): string[] {
  const errors: string[] = [];
  const cls = Object.values(fixture.classes).find((c) => c.class_uid === ev.class_uid);
  if (!cls) return [`class_uid ${String(ev.class_uid)} is not one of the fixture's classes`];
  validate(ev, cls, '', errors);
  if (ev.category_uid !== cls.category_uid) errors.push(`category_uid ${String(ev.category_uid)} ≠ ${cls.category_uid}`);
  if (ev.type_uid !== cls.class_uid * 100 + Number(ev.activity_id)) errors.push(`type_uid ${String(ev.type_uid)} ≠ class_uid·100 + activity_id`);
  if (ev.class_name !== undefined && ev.class_name !== cls.class_name) errors.push(`class_name ${String(ev.class_name)} ≠ ${cls.class_name}`);
  if (ev.activity_name !== undefined && ev.activity_name !== cls.activities[String(ev.activity_id)])
    errors.push(`activity_name ${String(ev.activity_name)} ≠ ${cls.activities[String(ev.activity_id)]}`);
  for (const [i, o] of ((ev.observables as unknown[] | undefined) ?? []).entries()) {
    const id = isObject(o) ? o.type_id : undefined;
    if (fixture.observableTypeIds[String(id)] === undefined) errors.push(`observables[${i}].type_id ${String(id)} is no observable type`);
  }
  if (isObject(ev.metadata) && ev.metadata.version !== fixture.version) errors.push(`metadata.version ${String(ev.metadata.version)} ≠ ${fixture.version}`);
  return errors;
}

// One realistic event of each kind, made by the same converters the sink uses.
const logRow = (over: Partial<LogRow>): LogRow => ({
  revision: '1734',
  key: '/l/payments/acct-7',
  event_type: 'grant',
  namespace: 'payments',
  class: 'ledger',
  holder: 'spiffe://corp/billing',
  session: '7587',
  token: '11258999068428022',
  epoch: 40,
  grant_revision: '1700',
  wall_ms: 1_764_000_000_000,
  time_estimated: 0,
  value: '',
  gap_to: '0',
  reason: '',
  origin: 'api',
  ...over,
});
const act = (over: Partial<TwoPersonRow>): TwoPersonRow => ({
  row_id: '9f2c4e0d1b7a6c3e5f8d2a1b0c9e7d6f',
  at_ms: 1_764_000_000_000,
  kind: 'force-release',
  action: 'approved',
  request_id: 'fr-01JD7',
  request_hash: 'sha256:ab12',
  actor: 'op-bob@corp',
  requester: 'op-alice@corp',
  key: 'payments/acct-7',
  reason: 'stuck batch',
  revision: '1800',
  detail: '',
  ...over,
});
const run = { run_id: 'repeat:risk-register-nightly:1764381600000', register_day: '2025-11-29', as_of_ms: 1_764_381_600_000 };
const EXAMPLES: Record<string, AlertEvent> = {
  grant: fromLogRow('c1', logRow({})),
  canary: fromLogRow('c1', logRow({ key: '/l/lockaudit-canary/host-1', namespace: 'lockaudit-canary', class: 'lockaudit-canary', holder: 'lockaudit-canary' })),
  'foreign-grant': fromLogRow('c1', logRow({ holder: 'etcdctl', session: '0', origin: 'foreign' })),
  release: fromLogRow('c1', logRow({ event_type: 'release' })),
  expiry: fromLogRow('c1', logRow({ event_type: 'expiry', time_estimated: 1 })),
  'force-release': fromLogRow('c1', logRow({ event_type: 'force-release' })),
  'session-close': fromLogRow('c1', logRow({ event_type: 'session-close' })),
  'epoch-release': fromLogRow('c1', logRow({ event_type: 'epoch-release' })),
  deleted: fromLogRow('c1', logRow({ event_type: 'deleted' })),
  'epoch-advance': fromLogRow(
    'c1',
    logRow({
      event_type: 'epoch-advance',
      key: '/sys/epoch',
      namespace: '',
      class: '',
      holder: '',
      session: '0',
      token: '0',
      epoch: 41,
      value: '{"epoch":41}',
    }),
  ),
  'class-change': fromLogRow(
    'c1',
    logRow({
      event_type: 'class-change',
      key: '/sys/class/ledger',
      namespace: 'payments',
      holder: '',
      session: '0',
      token: '0',
      value: '{"name":"ledger","ttlSeconds":15}',
    }),
  ),
  gap: fromLogRow('c1', logRow({ event_type: 'gap', key: '', revision: '500', gap_to: '900', reason: 'compacted' })),
  'unprotected-grant': fromSpoolRow('c1', {
    key: 'spool-1',
    namespace: 'cache',
    lock_path: 'warm/1',
    class: 'warmer',
    holder: 'spiffe://corp/warmer',
    session: '12',
    wall_ms: 5,
    ingested_ms: 9,
    value: '',
  }),
  'waiver-expired': fromRegisterRow(run, {
    class: 'cache',
    namespace: 'cat',
    risk_owner: 'r@corp',
    waiver_day: '2025-11-20',
    days_left: -9,
    status: 'expired',
  }),
  'two-person': fromTwoPersonRow('c1', act({})),
  'two-person-refused': fromTwoPersonRow('c1', act({ kind: 'epoch-advance', action: 'refused-unproven', key: '', request_hash: '', revision: '1810' })),
  'waiver-expiring': fromRegisterRow(run, {
    class: 'warm',
    namespace: 'cat',
    risk_owner: 'r@corp',
    waiver_day: '2025-12-02',
    days_left: 3,
    status: 'expiring',
  }),
};

/** The kinds an alert rule can name (the config schema): every one must have an OCSF class. */
function configKinds(): string[] {
  type Node = { properties?: Record<string, Node>; items?: Node; anyOf?: Array<{ const?: string }> };
  const alerts = (FileConfigSchema as unknown as Node).properties?.alerts;
  const kinds = alerts?.properties?.webhooks?.items?.properties?.rules?.items?.properties?.kinds?.items?.anyOf;
  assert.ok(kinds, 'the config schema names the rule kinds');
  return kinds.map((k) => String(k.const)).sort();
}

describe('OCSF events validate against the published schema', () => {
  it(`the requirements come from ocsf-schema ${fixture.version} (commit ${fixture.commit.slice(0, 12)}), the version the events claim`, () => {
    assert.equal(fixture.version, OCSF_VERSION);
    assert.match(fixture.commit, /^[0-9a-f]{40}$/);
    assert.deepEqual(fixture.classes.api_activity?.attributes.src_endpoint, 'required', 'API Activity requires src_endpoint (the issue this fixes)');
  });

  it('every kind an alert rule can name has a class, and an example here', () => {
    assert.deepEqual([...OCSF_KINDS].sort(), configKinds());
    assert.deepEqual(Object.keys(EXAMPLES).sort(), configKinds());
  });

  for (const [kind, e] of Object.entries(EXAMPLES)) {
    it(`${kind}: required attributes, constraints, enums and types hold; status and observables present; lock fields unmapped`, () => {
      assert.equal(e.kind, kind);
      const ev = JSON.parse(JSON.stringify(toOcsf(forSink(e, tokenKey)))) as Record<string, unknown>;
      assert.deepEqual(validateEvent(ev), []);
      assert.equal(ev.type_uid, Number(ev.class_uid) * 100 + Number(ev.activity_id));
      assert.ok(ev.status !== undefined && ev.status_id !== undefined, 'status (recommended)');
      const observables = (ev.observables ?? []) as Array<{ name: string; type_id: number; value?: string }>;
      if (e.key)
        assert.ok(
          observables.some((o) => o.type_id === 10 && o.value === e.key),
          'the key is an observable (Resource UID)',
        );
      // Each observable names where the event carries its value.
      for (const o of observables) {
        const at = o.name
          .split('.')
          .reduce<unknown>(
            (v, part) => (Array.isArray(v) ? v.map((x: Record<string, unknown>) => x[part]) : (v as Record<string, unknown> | undefined)?.[part]),
            ev,
          );
        assert.ok(Array.isArray(at) ? at.includes(o.value) : at === o.value, `${o.name} holds ${String(o.value)}`);
      }
      if (e.holder)
        assert.ok(
          observables.some((o) => o.type_id === 4 && o.value === e.holder),
          'the holder is an observable (User Name)',
        );
      if (e.detail.actor)
        assert.ok(
          observables.some((o) => o.type_id === 4 && o.value === e.detail.actor),
          "a two-person act's operator is an observable (User Name)",
        );
      const unmapped = ev.unmapped as Record<string, unknown>;
      assert.equal(unmapped.kind, kind);
      assert.equal(unmapped.cluster, e.cluster || undefined, 'the cluster (register events are about no cluster)');
      assert.equal(unmapped.token, undefined, 'no token leaves for a SIEM');
      assert.equal(unmapped.token_hash, hashToken(tokenKey, e.token) || undefined, 'its keyed hash instead (none for token 0)');
      assert.equal((ev.metadata as { uid: string }).uid, e.id);
    });
  }

  it('the check can fail: a missing required attribute, a wrong type_uid, an attribute the class lacks, a bad enum, a broken constraint', () => {
    const good = () => JSON.parse(JSON.stringify(toOcsf(forSink(EXAMPLES.release as AlertEvent, tokenKey)))) as Record<string, unknown>;
    const noApi = good();
    delete noApi.api;
    assert.deepEqual(validateEvent(noApi), ['api: required, missing']);
    assert.match(validateEvent({ ...good(), type_uid: 600399 }).join(), /type_uid/);
    assert.match(validateEvent({ ...good(), cloud: { provider: 'etcd' } }).join(), /cloud: not an attribute/);
    assert.match(validateEvent({ ...good(), severity_id: 7 }).join(), /severity_id: 7 not in its enum/);
    assert.match(validateEvent({ ...good(), src_endpoint: { port: 80 } }).join(), /src_endpoint: needs at least one of/);
    assert.match(validateEvent({ ...good(), time: '2025-01-01' }).join(), /time: not a timestamp_t/);
    const noProduct = good();
    delete (noProduct.metadata as Record<string, unknown>).product;
    assert.deepEqual(validateEvent(noProduct), ['metadata.product: required, missing']);
  });
});
