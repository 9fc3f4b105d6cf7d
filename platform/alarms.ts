// The alarm catalog: every alarm the platform raises has a code, the name of
// its instance (one per label set, so /readyz shows one line per cluster, not
// one per event), a message template and what an operator should do. Labels
// are bounded (a configured cluster); measured facts go in the message only.
// docs/runbook.md has a runbook entry for each code; test/unit/catalogs.test.ts checks it does.

export interface AlarmSpec {
  /** Instance name; `{label}` placeholders are the alarm's bounded labels. */
  readonly instance: string;
  /** Message; placeholders not in `instance` are facts of this raising. */
  readonly message: string;
  /** What an operator should do about it. */
  readonly action: string;
}

export const alarmCatalog = {
  LOCKAUDIT_ALARM_TAILER_LAG: {
    instance: 'tailer-lag:{cluster}',
    message: 'tailer for {cluster} is {lagRevisions} revisions behind (alarm at {alarmAt} revisions)',
    action:
      'The tailer falls behind etcd; at the compaction window history is lost. Check ClickHouse insert latency and the tailer log (lockaudit_tailer_* metrics); cleared once the lag is under half the window.',
  },
  LOCKAUDIT_ALARM_TAILER_GAP: {
    instance: 'tailer-gap:{cluster}',
    message: 'history of {cluster} revisions {from}..{to} was compacted before capture; see GET /v1/gaps',
    action:
      'History was lost: reports over that range are incomplete (GET /v1/gaps lists it). Find why the tailer was down or behind for longer than the compaction window; held until the process restarts.',
  },
  LOCKAUDIT_ALARM_TAILER_RESTORE: {
    instance: 'tailer-restore:{cluster}',
    message: 'etcd of {cluster} was restored ({why}); captured revisions {from}..{to} were rolled back; see GET /v1/gaps',
    action:
      'etcd went back in time: the rolled-back revisions stay in the record, marked rolled back with their timeline (GET /v1/grants shows them with rolledBack: true), and the lock API stays sealed until the two-person epoch advance (POST /v1/epoch/advance). Check who restored etcd and why; held until the process restarts.',
  },
  LOCKAUDIT_ALARM_TAILER_NEW_HISTORY: {
    instance: 'tailer-new-history:{cluster}',
    message:
      'etcd of {cluster} shares nothing with the captured history ({why}): captured revisions 1..{to} belong to the ended timeline; capture follows the new cluster as timeline {generation}',
    action:
      'No key etcd holds matches what was captured: it was rebuilt empty under the same name, or the endpoints now reach another cluster. Nothing captured is rolled back or deleted; its open grants are closed as unknown. If the endpoints are wrong, stop the tailer and fix the configuration; held until the process restarts.',
  },
  LOCKAUDIT_ALARM_FORCE_ARCHIVE_LATE: {
    instance: 'force-archive:{cluster}',
    message: '{late} force-release record(s) of cluster {cluster} not archived after {alarmAfterSeconds} s (oldest {oldestSeconds} s)',
    action:
      'Force-release records wait for the WORM archive. Check the worker log and MinIO (lockaudit_force_* metrics); cleared once every record older than the threshold is archived.',
  },
  LOCKAUDIT_ALARM_FORCE_ARCHIVE_UNLOCKED: {
    instance: 'force-archive:{cluster}:unlocked',
    message: '{problem}',
    action:
      'The archive bucket has no object lock, so nothing is archived into it. Recreate it with object lock (lockaudit migrate creates it so) and restart the worker.',
  },
  LOCKAUDIT_ALARM_CANARY_STAGE: {
    instance: 'canary:{cluster}:{stage}',
    message: 'the canary lock of {cluster} last passed stage {stage} {ageSeconds} s ago (bound {boundSeconds} s){why}',
    action:
      'The end-to-end canary (LOCKAUDIT_CANARY_INTERVAL_SECONDS) stopped at this stage: lock — the lock engine grants nothing (etcd, the epoch, the canary class); stored — the tailer captures nothing into the store; sealed — the digest worker signs nothing. Check that role; cleared once the stage keeps up.',
  },
  LOCKAUDIT_ALARM_DIGEST_BEHIND: {
    instance: 'digest-behind:{cluster}',
    message: '{behind} sealed period(s) of {cluster} have no signed digest (digested through {digestedThrough}); last run: {lastRun}',
    action:
      "The digest worker (worker role) is not sealing periods: check its log (lockaudit_digest_* metrics), MinIO and the archive bucket's object lock, and the signing key. Nothing is skipped: the next run digests every period from the last digest on. Cleared once at most alarmAfterPeriods sealed periods wait.",
  },
  LOCKAUDIT_ALARM_DIGEST_CHANGED: {
    instance: 'digest-changed:{cluster}',
    message: '{count} sealed period(s) of {cluster} changed after sealing in a way the record does not explain, the first {period}: {problem}; not re-signed',
    action:
      "Someone changed the audit store's events (or gaps) of a period that already has a signed digest, and no proven restore or late spool explains it: lockaudit verify fails the period. Run it for the cluster, find who wrote the store (its query log), and restore the rows from the Parquet history or a backup; the digest stays as signed. Cleared when the period reads as signed again, or at restart.",
  },
  LOCKAUDIT_ALARM_CLOCK_AHEAD: {
    instance: 'clock-ahead:{cluster}',
    message:
      "{count} captured /sys/clock write(s) of {cluster} are dated ahead of the digest worker's clock, the newest {aheadSeconds} s ahead (revision {revision}; tolerance {toleranceSeconds} s); they seal no period",
    action:
      "A tailer host's clock jumped ahead, or someone wrote a clock row into the audit store. Sealed digests never cover a period that has not ended by the worker's own clock, so nothing is signed early; the row is no boundary until real time reaches it. Check the clocks (NTP) of the tailer and worker hosts; if no host was wrong, find who wrote the store (its query log). Cleared once no captured clock write is ahead.",
  },
  LOCKAUDIT_ALARM_DIGEST_CHAIN_INVALID: {
    instance: 'digest-chain-invalid:{cluster}',
    message:
      'the digest chain of {cluster} in the archive bucket holds {count} object(s) that are not valid digests of this deployment (first: {problem}); sealing of {cluster} is stopped',
    action:
      "Someone with write access to the archive bucket added or replaced a digest object (unsigned, signed by another key, altered, or not linking to the one before), or the signing key changed. The worker will not build on it. Run lockaudit verify for the cluster, find who wrote the object (bucket access logs), and restore the bucket's integrity; the worker resumes on its next run once every object checks. Cleared then.",
  },
  LOCKAUDIT_ALARM_DIGEST_KEY_UNKNOWN: {
    instance: 'digest-key-unknown:{cluster}',
    message:
      'the digest chain of {cluster} ({digests} digest(s)) is signed by key {chainKeyId}, which this worker does not hold (it holds key {keyId}); sealing of {cluster} is stopped',
    action:
      'The signing key was lost or replaced (a data dir restored without it, a wrong LOCKAUDIT_DIGEST_SIGNING_KEY). Nothing is signed under a key the chain did not hand over to. Restore the key from your backup; if it is lost for good, run lockaudit keys recover (runbook: digest signing key lost), which starts a new key linked to the chain and says so in every later verification. Cleared once the worker signs again.',
  },
  LOCKAUDIT_ALARM_DIGEST_KEY_MISSING: {
    instance: 'digest-key-missing',
    message: 'the digest signing key cannot be loaded ({problem}); no digest is signed',
    action:
      'The key file is gone or unreadable while the keyring says this deployment has signed with a key: it is never silently replaced. Restore the key file from your backup (the worker tries again every 10 s); if it is lost for good, run lockaudit keys recover (runbook: digest signing key lost). Cleared once the key loads.',
  },
  LOCKAUDIT_ALARM_DIGEST_HISTORY_MISMATCH: {
    instance: 'digest-history-mismatch:{cluster}',
    message: 'the history object {object} of {cluster} does not match its manifest ({problem}); no digest names it',
    action:
      'The digest worker hashes each Parquet history file itself before a digest names it. This one is not the file its manifest describes: it was replaced or damaged in the history bucket after the export wrote it. Find who wrote it (bucket access logs); remove its manifest (the object name plus .manifest.json) and re-export the day (lockaudit export history --from DAY --to DAY --cluster CLUSTER), which writes file and manifest again. Cleared once every complete file matches its manifest.',
  },
  LOCKAUDIT_ALARM_HISTORY_UNSIGNED: {
    instance: 'history-unsigned:{cluster}',
    message:
      'the history manifest {object} of {cluster} does not stand for the file under it ({problem}); the day is written again and no digest names what it describes',
    action:
      "Every history manifest the worker writes carries the digest key's signature over the file's sha256. This one does not, or the file under it was swapped: it was placed or edited in the history bucket by whoever holds its credentials (bucket access logs say who). Nothing needs undoing: the nightly job writes the day again over it and signs its manifest, and the digest worker never names a file on an unsigned manifest's word. If it came from before manifests were signed, `lockaudit export history` for that day replaces it. Held until the process restarts.",
  },
  LOCKAUDIT_ALARM_HIGHWATER_UNEXPLAINED: {
    instance: 'highwater-unexplained:{cluster}',
    message:
      "the highest captured grant token of {cluster} (epoch {epoch}) is explained by no grant carrying the lock API's proof; the lock API uses the highest proven one (epoch {usedEpoch}) instead",
    action:
      "Someone wrote the audit store's grant_high_water (or events) by hand: a token no proven grant explains is neither obeyed as a seal nor taken as the epoch to advance from. Find who wrote the store (its query log); the row stays until removed (ALTER TABLE grant_high_water DELETE WHERE …, with the platform stopped for an embedded store). Held until the process restarts.",
  },
  LOCKAUDIT_ALARM_RESUME_UNPROVEN: {
    instance: 'resume-unproven:{cluster}',
    message:
      'the checkpoint of {cluster} in effect (revision {claimed}, term {term}) carries no tailer proof; capture resumes from the highest proven position, revision {resume}',
    action:
      "Someone wrote the audit store's checkpoints by hand (or edited a row): a checkpoint without the tailer's proof is never resumed from, so the tailer captures again from its last proven position (rows it already holds are written again, nothing is skipped). Find who wrote the store (its query log) and remove the row (ALTER TABLE checkpoints DELETE WHERE proof = '' …, with the platform stopped for an embedded store). Held until the process restarts.",
  },
  LOCKAUDIT_ALARM_RESTORE_UNPROVEN: {
    instance: 'restore-unproven:{cluster}',
    message:
      'a restore gap of {cluster} (generation {generation}) with no timeline carries no tailer proof; it is not finished and no captured row is marked for it',
    action:
      "Someone wrote the audit store's gaps by hand: a restore the tailer recorded half-way (its gap, not yet its timeline) is finished at the next start by marking every row above its start rolled back, so only a gap with the tailer's proof is. This one has none; the tailer decides its start from etcd and the store as if it were not there. Find who wrote the store (its query log) and remove the row (ALTER TABLE gaps DELETE WHERE kind = 'restore' AND proof = '' …, with the platform stopped for an embedded store). Held until the process restarts.",
  },
  LOCKAUDIT_ALARM_TIMELINE_MISSING: {
    instance: 'timeline-missing:{cluster}',
    message:
      'the restore of {cluster} to generation {generation} was finished (the tailer captured under it) but its timeline record was gone; it is written again from its proven gap, not finished again',
    action:
      "Someone removed a row of the audit store's etcd_timelines (it carries no proof): the restore it recorded has its proven gap, and the tailer's proven checkpoints of that generation show it was finished and captured under. Finishing it again would mark everything captured since rolled back, and going on from the older timeline would capture the restored etcd again under it, so the tailer writes the record again from the proven gap (generation, cluster ids, divergence, detection time; the old timeline's checkpoint from its proven checkpoints; etcd's head when it was seen, which the gap does not carry, as 0; its reason says it was written again) and goes on under it. A digest that sealed the removed record names the difference. Find who wrote the store (its query log); a backup's row may replace the one written again. Held until the process restarts.",
  },
  LOCKAUDIT_ALARM_FOREIGN_WRITE: {
    instance: 'foreign-write:{cluster}',
    message: 'a {what} not made by the lock API was written into {cluster} ({key} at revision {revision}); see {where}',
    action:
      "Someone wrote around the lock API (etcdctl, a misbehaving client): a hold without the API's proof, a copy of a real hold put back (a replay), or a reason marker or force record without the API's proof (it explains nothing: the delete beside it reads `deleted`, and a forged force record is never archived). Find who from the value and the etcd audit trail, and remove the write path. A value under the hold prefix that is no hold at all (not even its shape) is no grant: it is quarantined (GET /v1/quarantine), and while it stands no acquire of that key succeeds and force-release finds nothing to release; remove it by hand (`etcdctl del <key>`: the delete is captured and quarantined too) once you know who wrote it. Held until the process restarts, and raised again at start while the write is still in etcd (a forged force record stays until `etcdctl del /sys/force/<id>`); grant history lists every such grant (origin=foreign), the event log every such marker and record, GET /v1/quarantine every unreadable value.",
  },
} as const satisfies Record<string, AlarmSpec>;

export type AlarmCode = keyof typeof alarmCatalog;

type Placeholders<S extends string> = S extends `${string}{${infer P}}${infer Rest}` ? P | Placeholders<Rest> : never;
type LabelNames<C extends AlarmCode> = Placeholders<(typeof alarmCatalog)[C]['instance']>;
type FactNames<C extends AlarmCode> = Exclude<Placeholders<(typeof alarmCatalog)[C]['message']>, LabelNames<C>>;

export type AlarmLabels<C extends AlarmCode> = Record<LabelNames<C>, string>;
export type AlarmFacts<C extends AlarmCode> = Record<FactNames<C>, string | number | bigint>;

/** One raising of a catalogued alarm, as HealthState keeps it. */
export interface RaisedAlarm {
  readonly code: AlarmCode;
  readonly name: string;
  readonly message: string;
}

function fill(template: string, values: Record<string, string | number | bigint>): string {
  return template.replace(/\{(\w+)\}/g, (whole, key: string) => (key in values ? String(values[key]) : whole));
}

/** The instance name of an alarm for these labels (what `clear` takes). */
export function alarmName<C extends AlarmCode>(code: C, labels: AlarmLabels<C>): string {
  return fill(alarmCatalog[code].instance, labels);
}

/** An alarm of the catalog, its name and message filled in. */
export function alarm<C extends AlarmCode>(code: C, labels: AlarmLabels<C>, facts: AlarmFacts<C>): RaisedAlarm {
  const spec: AlarmSpec = alarmCatalog[code];
  return { code, name: fill(spec.instance, labels), message: fill(spec.message, { ...facts, ...labels }) };
}
