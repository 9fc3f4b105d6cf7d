// The alert sink's pure parts: rule matching, OCSF and CEF rendering, the
// HMAC signature, backoff bounds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AlertEvent } from '../../exporters/alerts/alertEvent.js';
import { forSink as sinkEvent, toCef, toOcsf } from '../../exporters/alerts/formats.js';
import { hashToken, tokenHashKey } from '../../core/tokenHash.js';
import { fromLogRow, fromRegisterRow, type LogRow } from '../../exporters/alerts/alertEvent.js';
import { matches, ruleKinds, waiverStatuses } from '../../exporters/alerts/rules.js';
import { sign, verify } from '../../exporters/alerts/signature.js';
import { backoffMs } from '../../exporters/alerts/webhookDelivery.js';

const tokenKey = tokenHashKey(Buffer.from('unit-test-origin-secret-0123456789abcdef'));
const forSink = (e: AlertEvent) => sinkEvent(e, tokenKey);
const event = (over: Partial<AlertEvent> = {}): AlertEvent => ({
  id: 'c1:1734:/l/payments/acct-7',
  cluster: 'c1',
  kind: 'expiry',
  revision: '1734',
  key: 'payments/acct-7',
  namespace: 'payments',
  class: 'ledger',
  holder: 'spiffe://corp/w|1=x',
  session: '99',
  token: '11258999068428022',
  epoch: 40,
  grantRevision: '1700',
  timeMs: 1_764_000_000_000,
  timeEstimated: true,
  detail: {},
  ...over,
});

describe('alert rules', () => {
  const purposeOf = (c: string) => ({ ledger: 'correctness', cache: 'efficiency' })[c];
  const rules = [
    { kinds: ['force-release' as const, 'gap' as const] },
    { kinds: ['expiry' as const], purposes: ['correctness' as const] },
    { kinds: ['grant' as const], namespaces: ['payments'], classes: ['cache'] },
  ];
  it('matches on kinds, namespaces, classes and class purpose; any rule suffices', () => {
    assert.equal(matches(rules, event(), purposeOf), true);
    assert.equal(matches(rules, event({ class: 'cache' }), purposeOf), false, 'an efficiency-class expiry');
    assert.equal(matches(rules, event({ class: 'unknown-class' }), purposeOf), false, 'an unknown class has no purpose');
    assert.equal(matches(rules, event({ kind: 'gap', class: '' }), purposeOf), true);
    assert.equal(matches(rules, event({ kind: 'grant', class: 'cache' }), purposeOf), true);
    assert.equal(matches(rules, event({ kind: 'grant', class: 'cache', namespace: 'other' }), purposeOf), false);
    assert.deepEqual(ruleKinds(rules), ['expiry', 'force-release', 'gap', 'grant']);
  });

  it("sends none of the canary's own grants, releases or expiries, but a write around the API into its namespace", () => {
    const canary = { namespace: 'lockaudit-canary', key: 'lockaudit-canary/host-1', class: 'lockaudit-canary' };
    const every = [{ kinds: ['grant' as const, 'expiry' as const, 'foreign-grant' as const, 'deleted' as const, 'force-release' as const] }];
    for (const kind of ['grant', 'expiry']) assert.equal(matches(every, event({ ...canary, kind }), purposeOf), false, kind);
    for (const kind of ['foreign-grant', 'deleted', 'force-release']) assert.equal(matches(every, event({ ...canary, kind }), purposeOf), true, kind);
    assert.equal(matches(every, event({ kind: 'grant' }), purposeOf), true, 'another namespace');
  });
});

describe('alert kinds beyond the log: foreign grants, hand deletions, waivers', () => {
  const logRow = (over: Partial<LogRow>): LogRow => ({
    revision: '77',
    key: '/l/pay/a',
    event_type: 'grant',
    namespace: 'pay',
    class: 'ledger',
    holder: 'etcdctl',
    session: '0',
    token: '0',
    epoch: 1,
    grant_revision: '77',
    wall_ms: 5,
    time_estimated: 0,
    value: '',
    gap_to: '0',
    reason: '',
    ...over,
  });
  it("a grant written around the lock API is kind foreign-grant (origin in the payload); a 'grant' rule still matches it, a 'foreign-grant' rule only it", () => {
    const foreign = fromLogRow('c1', logRow({ origin: 'foreign' }));
    const api = fromLogRow('c1', logRow({ origin: 'api' }));
    assert.equal(foreign.kind, 'foreign-grant');
    assert.equal(foreign.detail.origin, 'foreign');
    assert.equal(api.kind, 'grant');
    const none = () => undefined;
    assert.equal(matches([{ kinds: ['foreign-grant'] }], foreign, none), true);
    assert.equal(matches([{ kinds: ['foreign-grant'] }], api, none), false);
    assert.equal(matches([{ kinds: ['grant'] }], foreign, none), true);
    assert.equal(matches([{ kinds: ['deleted'] }], fromLogRow('c1', logRow({ event_type: 'deleted' })), none), true);
    assert.match(String(toOcsf(forSink(fromLogRow('c1', logRow({ event_type: 'deleted' })))).message), /deleted by hand while its lease lived/);
  });
  it('a register class is one event per run and class, its kind from the status; rules name which statuses are read', () => {
    const run = { run_id: 'repeat:risk-register-nightly:1764381600000', register_day: '2025-11-29', as_of_ms: 1_764_381_600_000 };
    const e = fromRegisterRow(run, { class: 'cache', namespace: 'cat', risk_owner: 'r@corp', waiver_day: '2025-11-20', days_left: -9, status: 'expired' });
    assert.equal(e.id, 'register:repeat:risk-register-nightly:1764381600000:cache');
    assert.equal(e.kind, 'waiver-expired');
    assert.equal(
      fromRegisterRow(run, { class: 'c', namespace: 'n', risk_owner: '', waiver_day: '2025-12-01', days_left: 2, status: 'expiring' }).kind,
      'waiver-expiring',
    );
    assert.deepEqual(waiverStatuses([{ kinds: ['gap'] }]), []);
    assert.deepEqual(waiverStatuses([{ kinds: ['gap', 'waiver-expired'] }, { kinds: ['waiver-expiring'] }]), ['expired', 'expiring']);
    assert.match(toCef(forSink(e)), /\|waiver-expired\|waiver-expired\|9\|/);
  });
});

describe('alert formats', () => {
  it('OCSF: the event id is metadata.uid, the token leaves only as its keyed hash, a released lock is an API Activity resource owned by its holder', () => {
    const o = toOcsf(forSink(event({ kind: 'release' })));
    assert.equal((o.metadata as { uid: string }).uid, 'c1:1734:/l/payments/acct-7');
    assert.equal(o.class_uid, 6003);
    assert.equal(o.type_uid, 600304);
    assert.equal((o.unmapped as { token_hash: string }).token_hash, hashToken(tokenKey, '11258999068428022'));
    assert.match(hashToken(tokenKey, '11258999068428022'), /^hmac-sha256:[0-9a-f]{64}$/);
    assert.notEqual(
      hashToken(tokenHashKey(Buffer.from('another-deployment-secret-0123456789')), '11258999068428022'),
      hashToken(tokenKey, '11258999068428022'),
      'keyed: another key, another hash',
    );
    assert.equal(JSON.stringify(o).includes('11258999068428022'), false, 'the token is nowhere in the event');
    assert.deepEqual(o.resources, [
      {
        uid: 'payments/acct-7',
        name: 'payments/acct-7',
        type: 'lock',
        namespace: 'payments',
        owner: { name: 'spiffe://corp/w|1=x', uid: 'spiffe://corp/w|1=x' },
        group: { name: 'ledger' },
      },
    ]);
    const expiry = toOcsf(forSink(event()));
    assert.equal(expiry.class_uid, 6005, 'an expiry is what etcd did: Datastore Activity');
    assert.match(String(expiry.message), /expired/);
  });
  it('CEF: header pipes and extension = are escaped; the lock fields map to labelled keys', () => {
    const line = toCef(forSink(event()));
    assert.match(line, /^CEF:0\|lockaudit\|lockaudit\|1\|expiry\|expiry\|7\|rt=1764000000000 /);
    assert.match(line, / suser=spiffe:\/\/corp\/w\|1\\=x /);
    assert.match(line, / cs1Label=lock cs1=payments\/acct-7 /);
    assert.ok(line.includes(` cs4Label=tokenHash cs4=${hashToken(tokenKey, '11258999068428022')} `), line);
    assert.equal(line.includes('11258999068428022'), false, 'the token is nowhere in the line');
  });
});

describe('alert signature and backoff', () => {
  it('a signature verifies for its body and secret only', () => {
    const h = sign('s3cret-s3cret-s3cret', 'a\nb\n', 1_000);
    assert.equal(verify('s3cret-s3cret-s3cret', 'a\nb\n', h), true);
    assert.equal(verify('s3cret-s3cret-s3cret', 'a\nc\n', h), false);
    assert.equal(verify('other-secret-other', 'a\nb\n', h), false);
    assert.equal(verify('s3cret-s3cret-s3cret', 'a\nb\n', 'garbage'), false);
  });
  it('backoff is the project one from 100 ms (jittered 50–150 %), and backoffMaxMs caps it, jitter included', () => {
    assert.equal(
      backoffMs(1, 30_000, () => 0),
      50,
    );
    assert.equal(
      backoffMs(1, 30_000, () => 1),
      150,
    );
    assert.equal(
      backoffMs(4, 30_000, () => 0.5),
      800,
    );
    assert.equal(
      backoffMs(40, 2_000, () => 1),
      2_000,
    );
    assert.equal(
      backoffMs(40, 2_000, () => 0),
      1_000,
    );
  });
});
