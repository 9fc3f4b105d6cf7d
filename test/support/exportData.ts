// Synthetic grants and events generated inside ClickHouse (numbers()), for
// export tests and the export benchmark. Tokens use epoch 40, so every one
// is above 2^53: a reader that rounds through a double gets them wrong.
import type { AuditStore } from '../../core/clickhouse.js';

export const EPOCH_40 = 40n * 2n ** 48n;

/** `n` grants of `cluster`, granted every `stepMs` from `startMs`; every third still held (`held`: every `held`-th; 0: none). */
export async function insertGrants(store: AuditStore, cluster: string, n: number, startMs: number, stepMs = 10, held = 3): Promise<void> {
  await store.command(
    `INSERT INTO {db:Identifier}.grants (cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, granted_at, wait_ms,
       end_kind, end_revision, ended_at, duration_ms, unprotected, start_known, row_version)
     SELECT {cluster:String}, concat('ns', toString(number % 20), '/key-', toString(number % 5000)), concat('ns', toString(number % 20)),
       concat('key-', toString(number % 5000)), concat('class-', toString(number % 7)), concat('spiffe://corp/worker-', toString(number % 300)),
       toString(7587862000 + number % 1000), 40 * 281474976710656 + 1000000 + number, 40, 1000000 + number,
       fromUnixTimestamp64Milli(toInt64({start:Int64} + number * {step:Int64}), 'UTC'), number % 250,
       if({held:UInt64} > 0 AND number % greatest({held:UInt64}, 1) = 0, '', 'release'), if({held:UInt64} > 0 AND number % greatest({held:UInt64}, 1) = 0, 0, 1000001 + number),
       if({held:UInt64} > 0 AND number % greatest({held:UInt64}, 1) = 0, NULL, fromUnixTimestamp64Milli(toInt64({start:Int64} + number * {step:Int64} + 5), 'UTC')),
       if({held:UInt64} > 0 AND number % greatest({held:UInt64}, 1) = 0, NULL, 5), 0, 1, if({held:UInt64} > 0 AND number % greatest({held:UInt64}, 1) = 0, 0, 1000001 + number)
     FROM numbers({n:UInt64})`,
    { cluster, n, start: startMs, step: stepMs, held },
  );
  await insertGrantEvents(store, cluster, { from: 1_000_000, to: 1_000_000 + n });
}

/**
 * The events the grants of `cluster` were derived from, as the tailer writes them: each grant's hold put (or spool
 * line) and, when it ended, the hold's delete (or the spool's end line) carrying the grant — so that exports, which
 * check every grant against its events (exporters/checks/grantsCheck.ts), take grants written straight into the table.
 * Grants closed 'unknown' (in a gap) have no end event; a grant a restore rolled back has its events rolled back too. Call after inserting grant rows by hand; `revisions` limits it
 * to the grants of those grant revisions ([from, to)).
 */
export async function insertGrantEvents(
  store: AuditStore,
  cluster: string,
  revisions: { from: number | string; to: number | string } = { from: 0, to: '18446744073709551615' },
): Promise<void> {
  const columns = `cluster, revision, key, event_type, op, namespace, lock_path, class, holder, session, token, epoch, grant_revision,
       wait_ms, wall_time, time_estimated, time_error_ms, create_revision, mod_revision, version, lease, value, prev_value, unprotected, origin, timeline,
       rolled_back_by, superseded_by`;
  const line = "toJSONString(map('id', spool_id, 'lock', key))";
  await store.command(
    `INSERT INTO {db:Identifier}.events (${columns})
     SELECT cluster, grant_revision, if(spool_id = '', concat('/l/', key), concat('/spool/', spool_id)), if(spool_id = '', 'grant', 'unprotected-grant'),
       if(spool_id = '', 'put', 'spool'), namespace, lock_path, class, holder, session, token, epoch, grant_revision, wait_ms, granted_at, 0, 0,
       grant_revision, grant_revision, 1, session, if(spool_id = '', '{}', ${line}), '', unprotected, origin, timeline, rolled_back_by, rolled_back_by
     FROM {db:Identifier}.grants FINAL WHERE cluster = {cluster:String} AND grant_revision >= {from:UInt64} AND grant_revision < {to:UInt64}`,
    { cluster, ...revisions },
  );
  await store.command(
    `INSERT INTO {db:Identifier}.events (${columns})
     SELECT cluster, end_revision, if(spool_id = '', concat('/l/', key), concat('/spool/', spool_id, '-end')),
       transform(end_kind, ['release', 'expiry', 'force', 'session-close', 'epoch-advance', 'deleted'], ['release', 'expiry', 'force-release', 'session-close', 'epoch-release', 'deleted'], ''),
       if(spool_id = '', 'delete', 'spool'), namespace, lock_path, class, holder, session, token, epoch, grant_revision, wait_ms, assumeNotNull(ended_at), 0, ended_at_error_ms,
       grant_revision, grant_revision, 1, session, if(spool_id = '', '', toJSONString(map('grantId', spool_id))), if(spool_id = '', '{}', ${line}), unprotected, origin, timeline,
       rolled_back_by, rolled_back_by
     FROM {db:Identifier}.grants FINAL WHERE cluster = {cluster:String} AND grant_revision >= {from:UInt64} AND grant_revision < {to:UInt64} AND end_kind NOT IN ('', 'unknown')`,
    { cluster, ...revisions },
  );
}

/**
 * `n` raw events of `cluster`, one every `stepMs` from `startMs` (revisions from 5 000 000: apart from insertGrants' own):
 * waiters entering and leaving queues, which no grant row is derived from (a grant put without its row is what the
 * grants check names, once the checkpoint covers it).
 */
export async function insertEvents(store: AuditStore, cluster: string, n: number, startMs: number, stepMs = 10): Promise<void> {
  await store.command(
    `INSERT INTO {db:Identifier}.events (cluster, revision, key, event_type, op, namespace, lock_path, class, holder, session, token, epoch, grant_revision,
       wait_ms, wall_time, time_estimated, time_error_ms, create_revision, mod_revision, version, lease, value, prev_value, unprotected)
     SELECT {cluster:String}, 5000000 + number, concat('/q/ns', toString(number % 20), '/key-', toString(number % 5000), '/w'), if(number % 2 = 1, 'queue-leave', 'queue-enter'),
       if(number % 2 = 1, 'delete', 'put'), concat('ns', toString(number % 20)), concat('key-', toString(number % 5000)), 'class-1',
       'spiffe://corp/worker', '7587862000', 40 * 281474976710656 + 5000000 + number, 40, 5000000 + number, 0,
       fromUnixTimestamp64Milli(toInt64({start:Int64} + number * {step:Int64}), 'UTC'), 0, 0, 5000000 + number, 5000000 + number, 1, '0', '{}', '', 0
     FROM numbers({n:UInt64})`,
    { cluster, n, start: startMs, step: stepMs },
  );
}

/** Row count and token checksums (sum, xor) of grants in ClickHouse, as decimal strings. */
export async function grantTokenChecksum(
  store: AuditStore,
  where: { cluster?: string; fromMs: number; toMs: number },
): Promise<{ rows: string; sum: string; xor: string }> {
  const rows = await store.rows<{ rows: string; sum: string; xor: string }>(
    `SELECT toString(count()) AS rows, toString(sum(toUInt128(token))) AS sum, toString(groupBitXor(token)) AS xor
     FROM {db:Identifier}.grants FINAL
     WHERE ({cluster:String} = '' OR cluster = {cluster:String})
       AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')`,
    { cluster: where.cluster ?? '', fromMs: where.fromMs, toMs: where.toMs },
  );
  return rows[0] as { rows: string; sum: string; xor: string };
}

/** The same checksums over a Parquet file, read with @dsnp/parquetjs (an independent reader). */
export async function parquetTokenChecksum(file: string): Promise<{ rows: string; sum: string; xor: string; sample: bigint | undefined }> {
  const parquet = (await import('@dsnp/parquetjs')).default;
  const reader = await parquet.ParquetReader.openFile(file);
  try {
    const cursor = reader.getCursor([['token']]);
    let rows = 0n;
    let sum = 0n;
    let xor = 0n;
    let sample: bigint | undefined;
    for (let rec = (await cursor.next()) as { token: bigint } | null; rec; rec = (await cursor.next()) as { token: bigint } | null) {
      const t = BigInt(rec.token);
      sample ??= t;
      rows++;
      sum += t;
      xor ^= t;
    }
    return { rows: rows.toString(), sum: sum.toString(), xor: xor.toString(), sample };
  } finally {
    await reader.close();
  }
}
