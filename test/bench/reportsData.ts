// Synthetic lock history generated inside ClickHouse (INSERT … SELECT FROM
// numbers()), shaped like the tailer's output: 5 events per grant (queue
// enter, grant, queue leave, marker/clock/force record, end), and per grant an
// open `grants` row plus, once ended, its closed row — FINAL has real work.
// Keys (issue 14: "many namespaces and holders, a few very hot keys"): 3 % of
// grants hit 5 very hot keys (ns0/acct-0 … ns4/acct-4), 27 % 1 000 warm keys,
// the rest ~1 000 000 cold keys; 200 namespaces, 10 classes (0–4 advisory),
// 20 000 holders; 1 in 1 000 grants is unprotected. Spread evenly over `days`.
// Tokens use epoch 40, so every token is above 2^53.
import type { AuditStore } from '../../core/clickhouse.js';

export interface GeneratedData {
  grants: number;
  events: number;
  fromMs: number;
  toMs: number;
  hotKey: string;
  holder: string;
  token: string;
}

export const HOT_KEYS = 5;
export const WARM_KEYS = 1_000;
export const COLD_KEYS = 1_000_000;
export const NAMESPACES = 200;
export const HOLDERS = 20_000;

/** The lock name of key number k, as GRANT_EXPR names it. */
export function benchKey(k: number): string {
  return `ns${k % NAMESPACES}/acct-${k}`;
}

const GRANT_EXPR = `
  intDiv(number, {per:UInt64}) AS g,
  toInt64({t0:Int64} + intDiv(g * {spanMs:Int64}, {n:UInt64})) AS granted_ms,
  cityHash64(g, 5) AS kh,
  multiIf(g % 100 < 3, kh % ${HOT_KEYS}, g % 100 < 30, ${HOT_KEYS} + kh % ${WARM_KEYS}, ${HOT_KEYS + WARM_KEYS} + kh % ${COLD_KEYS}) AS k,
  concat('ns', toString(k % ${NAMESPACES})) AS ns,
  concat('acct-', toString(k)) AS path,
  concat(ns, '/', path) AS lock,
  concat('class-', toString(k % 10)) AS cls,
  concat('spiffe://corp/worker-', toString(cityHash64(g, 7) % ${HOLDERS})) AS who,
  g % 1000 = 999 AS unprot,
  1000 + 5 * g + 1 AS rev,
  if(unprot, 0, 40 * 281474976710656 + rev) AS tok,
  cityHash64(g, 1) % 2000 AS wait,
  toInt64(50 + cityHash64(g, 2) % 30000) AS dur,
  cityHash64(g, 3) % 100 AS h,
  multiIf(g >= {n:UInt64} - 500, '', h < 82, 'release', h < 92, 'expiry', h < 97, 'session-close', 'force') AS ek0,
  -- A fail-open grant ends by its spool's end line: released or expired, nothing else.
  if(unprot AND ek0 NOT IN ('', 'expiry'), 'release', ek0) AS ek,
  1000 + 5 * g + 4 AS end_rev,
  concat('spool-', toString(g)) AS spool,
  concat('{"id":"', spool, '","lock":"', lock, '"}') AS spool_line`;

const GRANTS_SQL = `INSERT INTO {db:Identifier}.grants
  (cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id, granted_at, wait_ms,
   end_kind, end_revision, ended_at, ended_at_error_ms, duration_ms, unprotected, start_known, row_version)
SELECT 'bench', lock, ns, path, cls, who, toString(7587862000000 + g % 10000), tok, 40, if(unprot, 0, rev),
  if(unprot, spool, ''), fromUnixTimestamp64Milli(granted_ms, 'UTC'), wait,
  if(closed, ek, ''), if(closed AND NOT unprot, end_rev, 0), if(closed, fromUnixTimestamp64Milli(granted_ms + dur, 'UTC'), NULL),
  if(closed AND ek = 'expiry' AND NOT unprot, 500, 0), if(closed, dur, NULL), unprot, 1, if(closed, if(unprot, 1, end_rev), 0)
FROM (SELECT ${GRANT_EXPR}, {closed:UInt8} = 1 AS closed FROM numbers({rows:UInt64}))
WHERE NOT closed OR ek != ''`;

const EVENTS_SQL = `INSERT INTO {db:Identifier}.events
  (cluster, revision, key, event_type, op, namespace, lock_path, class, holder, session, token, epoch, grant_revision, wait_ms,
   wall_time, time_estimated, time_error_ms, create_revision, mod_revision, version, lease, value, prev_value, unprotected)
SELECT 'bench', if(spooled, 0, 1000 + 5 * g + j),
  multiIf(spooled AND j = 1, concat('/spool/', spool), spooled, concat('/spool/end-', toString(g)),
          j IN (0, 2), concat('/q/', lock, '/', session), j = 3, multiIf(ek = 'expiry' OR ek = '', '/sys/clock', ek = 'force', concat('/sys/force/f', toString(g)), concat('/sys/mark/m', toString(g))), j = 4 AND ek = '', '/sys/clock', concat('/l/', lock)),
  multiIf(j = 0, 'queue-enter', j = 1, if(unprot, 'unprotected-grant', 'grant'), j = 2, 'queue-leave',
          j = 3, multiIf(ek = 'expiry' OR ek = '', 'clock', ek = 'force', 'force-record', 'marker'),
          ek = '', 'clock', ek = 'force', 'force-release', ek),
  multiIf(spooled, 'spool', j = 4 AND ek != '', 'delete', 'put'), ns, path, cls, who, session, if(j IN (1, 4), tok, 0), 40,
  -- As the tailer writes them: a grant and its end carry the grant's revision, wait and session; a fail-open
  -- grant's start and end are spool lines (revision 0, the grant in the value and, on its end, the previous value).
  if(of_grant, if(unprot, 0, rev), 0), if(of_grant, wait, 0),
  fromUnixTimestamp64Milli(granted_ms + multiIf(j = 0, -20, j = 1, 0, j = 2, 1, dur), 'UTC'), j = 4 AND ek = 'expiry' AND NOT unprot, if(j = 4 AND ek = 'expiry' AND NOT unprot, 500, 0),
  if(spooled, 0, rev), if(spooled, 0, 1000 + 5 * g + j), if(spooled, 0, 1), toString(7587862000000 + g % 10000),
  multiIf(spooled AND j = 1, spool_line, spooled, concat('{"grantId":"', spool, '"}'), j = 1, '{"holder":"x"}', ''),
  multiIf(spooled AND j = 4, spool_line, j = 4, '{"holder":"x"}', ''), unprot
FROM (SELECT ${GRANT_EXPR}, number % 5 AS j, toString(7587862000000 + g % 10000) AS session,
             j = 1 OR (j = 4 AND ek != '') AS of_grant, unprot AND of_grant AS spooled
      FROM numbers({rows:UInt64}))`;

// INSERT … SELECT sorts, compresses and indexes on one thread unless told otherwise.
const INSERT_SETTINGS = { max_insert_threads: '2' };

export function benchClasses(asOfMs: number): Array<{ name: string; value: string }> {
  const day = (d: number) => new Date(asOfMs + d * 86_400_000).toISOString().slice(0, 10);
  return Array.from({ length: 10 }, (_, i) => {
    const advisory = i < 5;
    const def = {
      name: `class-${i}`,
      namespace: `ns${i}`,
      purpose: advisory ? 'efficiency' : 'correctness',
      enforcement: advisory ? 'advisory' : 'fenced',
      ...(advisory ? { riskOwner: `owner-${i}@corp`, waiverExpires: day([90, 20, -3, 45, 5][i] as number) } : { pauseTest: `pt-${i}` }),
      ttlSeconds: advisory ? 30 : 15,
      tier: 'entity',
      onQuorumLoss: advisory ? 'open' : 'closed',
      fairness: 'memory',
    };
    return { name: `class-${i}`, value: JSON.stringify(def) };
  });
}

/** Generates `events` events (≈ events/5 grants) over the `days` days before `endMs`. */
export async function generateReportData(store: AuditStore, events: number, endMs: number, days = 30): Promise<GeneratedData> {
  const n = Math.max(1, Math.floor(events / 5));
  const spanMs = days * 86_400_000;
  const t0 = endMs - spanMs;
  const common = { n, t0, spanMs };
  // Open rows first, closed rows in a second insert, as the tailer writes them
  // over time (one insert would collapse them on insert: optimize_on_insert).
  const step = async (name: string, run: () => Promise<void>): Promise<void> => {
    const t = performance.now();
    await run();
    process.stdout.write(`  ${name}: ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
  };
  await step('grants, open rows', () => store.command(GRANTS_SQL, { ...common, per: 1, rows: n, closed: 0 }, INSERT_SETTINGS));
  await step('grants, closed rows', () => store.command(GRANTS_SQL, { ...common, per: 1, rows: n, closed: 1 }, INSERT_SETTINGS));
  await step('events', () => store.command(EVENTS_SQL, { ...common, per: 5, rows: n * 5 }, INSERT_SETTINGS));
  await store.insert(
    'events',
    benchClasses(endMs).map((c, i) => ({
      cluster: 'bench',
      revision: String(100 + i),
      key: `/sys/class/${c.name}`,
      event_type: 'class-change',
      op: 'put',
      namespace: '',
      lock_path: '',
      class: c.name,
      holder: '',
      session: '0',
      token: '0',
      epoch: 40,
      grant_revision: '0',
      wait_ms: 0,
      wall_time: t0 - 86_400_000,
      time_estimated: 0,
      time_error_ms: 0,
      create_revision: String(100 + i),
      mod_revision: String(100 + i),
      version: '1',
      lease: '0',
      value: c.value,
      prev_value: '',
      unprotected: 0,
    })),
  );
  const hot = n > 0 ? 'ns0/acct-0' : '';
  return {
    grants: n,
    events: n * 5 + 10,
    fromMs: t0,
    toMs: endMs,
    hotKey: hot,
    holder: 'spiffe://corp/worker-42',
    token: String(40n * 2n ** 48n + 1000n + 5n * BigInt(Math.floor(n / 2)) + 1n),
  };
}
