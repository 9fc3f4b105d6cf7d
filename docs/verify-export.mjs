#!/usr/bin/env node
// Checks a downloaded lockaudit compliance export against its signed manifest
// and the signed digests the manifest carries, with nothing but the public
// key: plain Node (18+), no lockaudit code, no database, no bucket.
//
//   node verify-export.mjs --manifest export.manifest.json --file export.parquet --public-key digests.pem
//       [--expect-id <export id>] [--expect-from <ISO time>] [--expect-to <ISO time>] [--expect-filter name=value ...]
//
// Get the three from the API: GET /v1/exports/<id>/download (the file),
// GET /v1/exports/<id>/manifest, GET /v1/digests/public-key (its `keys`, as one
// PEM file; better: the keys your operator handed you out of band). The
// public-key file may hold several keys, one PEM block after another: a
// keyring (docs/keys.md). What it checks
// (docs/digests.md#tamper-evident-digests):
//   1. the manifest's Ed25519 signature (over its canonical JSON without
//      `signature`) under a key of the keyring;
//   2. the file: its byte length and sha256 are the manifest's (a truncated or
//      altered download fails here);
//   3. every digest in the manifest: its hash (sha256 of its canonical JSON
//      without `hash`, `signature` and `nextSignature`), its signature, the
//      key that made it — a key of the keyring, or one a hand-over digest
//      before it moved signing to (signed by both keys); a recovery digest
//      only under a key of the keyring, and said so;
//      per cluster, the seqs without a hole, each prevHash the hash of the
//      digest before, the periods contiguous; and that the periods cover the
//      export's range: a period of the range not sealed when the export ran
//      fails (no digest vouches for its rows);
//   4. what the export is: its id, range and filters (a scoped token's export:
//      its scope too, as scope.namespaces and scope.clusters, which fail the
//      check unless expected), as the signed manifest says them, printed; each --expect-… given must match (the file you were
//      handed is the export you asked about, not another one, well signed).
// Prints one line per period; exits 0 when everything holds, 1 otherwise, 2
// on bad arguments.
import { createHash, createPublicKey, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';

function args(argv) {
  const out = { filters: {} };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i];
    if (!['--manifest', '--file', '--public-key', '--expect-id', '--expect-from', '--expect-to', '--expect-filter'].includes(name) || argv[i + 1] === undefined)
      usage(`unknown or incomplete argument ${name}`);
    if (name === '--expect-filter') {
      const eq = argv[i + 1].indexOf('=');
      if (eq < 1) usage(`--expect-filter: "${argv[i + 1]}" is not name=value`);
      out.filters[argv[i + 1].slice(0, eq)] = argv[i + 1].slice(eq + 1);
    } else out[name.slice(2)] = argv[i + 1];
  }
  for (const need of ['manifest', 'file', 'public-key']) if (!out[need]) usage(`--${need} is required`);
  for (const t of ['expect-from', 'expect-to'])
    if (out[t] !== undefined && !Number.isFinite(Date.parse(out[t]))) usage(`--${t}: "${out[t]}" is not a time (ISO 8601)`);
  return out;
}

function usage(problem) {
  process.stderr.write(
    `verify-export: ${problem}\nusage: node verify-export.mjs --manifest <manifest.json> --file <export file> --public-key <public key PEM> [--expect-id ID] [--expect-from TIME] [--expect-to TIME] [--expect-filter NAME=VALUE ...]\n`,
  );
  process.exit(2);
}

/** JSON with object keys sorted at every level, undefined members dropped: one text per value. */
function canonicalJson(value) {
  const norm = (v) => {
    if (v === null || typeof v === 'boolean' || typeof v === 'number' || typeof v === 'string') return v;
    if (Array.isArray(v)) return v.map(norm);
    if (typeof v === 'object') {
      const o = {};
      for (const k of Object.keys(v).sort()) if (v[k] !== undefined) o[k] = norm(v[k]);
      return o;
    }
    throw new TypeError(`cannot encode a ${typeof v}`);
  };
  return JSON.stringify(norm(value));
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const without = (obj, ...names) => Object.fromEntries(Object.entries(obj).filter(([k]) => !names.includes(k)));
const signedBy = (key, text, signature) => {
  try {
    return verify(null, Buffer.from(text, 'utf8'), key, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
};

/** A file's contents, or a one-line usage error naming the argument (a missing file is bad input, not a crash). */
function read(name, encoding) {
  try {
    return readFileSync(opts[name], encoding);
  } catch (err) {
    return usage(`--${name}: cannot read ${opts[name]} (${err.code ?? err.message})`);
  }
}

const opts = args(process.argv.slice(2));
// The keyring: every PEM public key in the file, by key id.
const keyIdOf = (key) => sha256(key.export({ type: 'spki', format: 'der' })).slice(0, 16);
const keyring = new Map();
for (const block of read('public-key', 'utf8').match(/-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g) ?? []) {
  let key;
  try {
    key = createPublicKey(block);
  } catch {
    usage(`--public-key: ${opts['public-key']} holds a block that is not a public key (PEM)`);
  }
  if (key.asymmetricKeyType !== 'ed25519') usage('--public-key: not an Ed25519 public key');
  keyring.set(keyIdOf(key), key);
}
if (keyring.size === 0) usage(`--public-key: ${opts['public-key']} is not a public key (PEM)`);
const keyIds = [...keyring.keys()].join(', ');
let manifest;
try {
  manifest = JSON.parse(read('manifest', 'utf8'));
} catch {
  usage(`--manifest: ${opts.manifest} is not JSON (give the export's manifest, GET /v1/exports/<id>/manifest)`);
}
if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) usage(`--manifest: ${opts.manifest} is not a manifest object`);
const file = read('file');
let failures = 0;
const line = (ok, text) => {
  if (!ok) failures++;
  process.stdout.write(`${ok ? 'ok  ' : 'FAIL'}  ${text}\n`);
};

// 1. The manifest itself.
const sig = manifest.signature;
if (!sig) line(false, 'manifest: not signed');
else if (!keyring.has(sig.keyId)) line(false, `manifest: signed by another key (key id ${sig.keyId}, expected ${keyIds})`);
else line(signedBy(keyring.get(sig.keyId), canonicalJson(without(manifest, 'signature')), sig.value), `manifest: signature under key ${sig.keyId}`);
// The file's size and hash and the rows' check are the manifest's word: without its signature they vouch for
// nothing (the digests below carry signatures of their own and are still checked).
const manifestSigned = failures === 0;

// What the export is, as the signed manifest says it; and what the caller expects it to be.
const exportId = manifest.exportId ?? /^exports\/([^/]+)\//.exec(String(manifest.object ?? ''))?.[1] ?? '(none)';
// A scoped token's export holds only its scope's grants: the scope reads as two more filters
// (scope.namespaces, scope.clusters; comma-separated), expected like any other.
const filters = { ...(manifest.filters ?? {}) };
for (const part of ['namespaces', 'clusters'])
  if (Array.isArray(manifest.scope?.[part]) && manifest.scope[part].length) filters[`scope.${part}`] = manifest.scope[part].join(',');
const filterText =
  Object.keys(filters)
    .sort()
    .map((k) => `${k}=${filters[k]}`)
    .join(', ') || 'none';
line(
  manifestSigned,
  `export: id ${exportId}, range ${manifest.from}..${manifest.to}, filters ${filterText}${manifestSigned ? '' : ' (the manifest saying so is not signed by this key)'}`,
);
if (opts['expect-id'] !== undefined)
  line(exportId === opts['expect-id'], `export id: ${exportId}${exportId === opts['expect-id'] ? '' : `, expected ${opts['expect-id']}`}`);
for (const [name, want] of [
  ['from', opts['expect-from']],
  ['to', opts['expect-to']],
]) {
  if (want === undefined) continue;
  const same = Date.parse(manifest[name]) === Date.parse(want);
  line(same, `export ${name}: ${manifest[name]}${same ? '' : `, expected ${want}`}`);
}
// A scope is a set of names: compared as one, in any order.
const asSet = (v) => (v === undefined ? undefined : v.split(',').sort().join(','));
const same = (name, want) => (name.startsWith('scope.') ? asSet(filters[name]) === asSet(want) : filters[name] === want);
for (const [name, want] of Object.entries(opts.filters))
  line(same(name, want), `export filter ${name}: ${filters[name] ?? '(none)'}${same(name, want) ? '' : `, expected ${want}`}`);
// A scoped token's export is one team's part of the record: it passes only when that is what the caller expects.
const scopeNames = Object.keys(filters).filter((k) => k.startsWith('scope.'));
if (scopeNames.length && !scopeNames.every((k) => k in opts.filters))
  line(
    false,
    `export scope: the file holds only ${scopeNames.map((k) => `${k.slice('scope.'.length)} ${filters[k]}`).join(' and ')} (a scoped token's export, not the whole record); expect it with --expect-filter ${scopeNames.map((k) => `${k}=${filters[k]}`).join(' --expect-filter ')}`,
  );
const unexpected = Object.keys(opts.filters).length ? Object.keys(filters).filter((k) => !(k in opts.filters) && !k.startsWith('scope.')) : [];
if (unexpected.length)
  line(
    false,
    `export filters: also ${unexpected.map((k) => `${k}=${filters[k]}`).join(', ')}, which were not expected (the file holds fewer rows than asked for)`,
  );

// 2. The file.
if (!manifestSigned) line(false, 'file: not checked: the size and sha256 it would be checked against are in a manifest this key did not sign');
else if (file.length !== manifest.bytes) line(false, `file: ${file.length} bytes, the manifest says ${manifest.bytes} (truncated or altered)`);
else if (sha256(file) !== manifest.sha256) line(false, `file: sha256 ${sha256(file)} differs from the manifest's ${manifest.sha256} (altered)`);
else line(true, `file: ${file.length} bytes, sha256 ${manifest.sha256}, ${manifest.rows} rows`);

// The rows: lockaudit checked every grant against the events the digests hash before writing them (signed above).
if (!manifestSigned) line(false, 'rows: not vouched for: the manifest that says they were checked is not signed by this key');
else
  line(
    manifest.grantsCheckedAgainstEvents === true,
    manifest.grantsCheckedAgainstEvents === true
      ? 'rows: every grant was checked against the events it was derived from before the file was written'
      : 'rows: the manifest does not say its grants were checked against the events (written before that check existed?)',
  );

// 3. The digests, per cluster.
const fromMs = Date.parse(manifest.from);
const toMs = Date.parse(manifest.to);
for (const [cluster, digests] of Object.entries(manifest.digests ?? {})) {
  const chain = [...digests].sort((a, b) => a.seq - b.seq);
  const periods = new Map(); // periodStart -> { end, seq, problems }
  let previous;
  let regularEnd;
  // The key each digest must be signed by: the first by a key of the keyring, then as hand-overs and recoveries move it.
  let current;
  const learned = new Map();
  const used = new Set(); // keys the stretch was signed by or handed to: a recovery never moves back to one
  for (const d of chain) {
    const problems = [];
    const body = without(d, 'hash', 'signature', 'nextSignature');
    const text = canonicalJson(body);
    const key = d.recovery ? keyring.get(d.keyId) : (keyring.get(d.keyId) ?? learned.get(d.keyId));
    if (sha256(text) !== d.hash) problems.push('altered: content does not match its hash');
    else if (d.recovery && !key) problems.push(`a recovery signed by key ${d.keyId}, which your keyring does not hold`);
    else if (d.recovery && (used.has(d.keyId) || d.keyId === d.recovery.lostKeyId))
      problems.push(`a recovery to key ${d.keyId}, which the chain has already used`);
    else if (!key) problems.push(`signed by another key (key id ${d.keyId})`);
    else if (current !== undefined && d.keyId !== current && !d.recovery) problems.push(`signed by key ${d.keyId}, but the chain is signed by key ${current}`);
    else if (d.recovery && current !== undefined && d.recovery.lostKeyId !== current)
      problems.push(`a recovery from key ${d.recovery.lostKeyId}, but the chain was signed by key ${current}`);
    else if (!signedBy(key, text, d.signature)) problems.push('signature invalid');
    let next;
    if (problems.length === 0 && d.handover) {
      try {
        next = createPublicKey(d.handover.nextPublicKeyPem);
      } catch {}
      if (!next || next.asymmetricKeyType !== 'ed25519' || keyIdOf(next) !== d.handover.nextKeyId)
        problems.push('a hand-over to a key that is not the one it names');
      else if (!d.nextSignature || !signedBy(next, text, d.nextSignature)) problems.push(`a hand-over to key ${d.handover.nextKeyId} that key did not sign`);
    }
    if (d.cluster !== cluster) problems.push(`names cluster ${d.cluster}`);
    if (previous && d.seq !== previous.seq + 1) problems.push(`digests seq ${previous.seq + 1}–${d.seq - 1} are missing`);
    else if (previous && d.prevHash !== previous.hash) problems.push(`its prevHash is not seq ${previous.seq}'s hash (a link altered or replaced)`);
    // Only a link that holds moves the key, and each change is said wherever it sits (the stretch's first digest too).
    if (problems.length === 0) {
      if (d.recovery) {
        used.add(current ?? d.recovery.lostKeyId);
        line(
          true,
          `${cluster} seq ${d.seq}: RECOVERED after key ${current ?? d.recovery.lostKeyId} was lost: signed from then on by key ${d.keyId}, which only your keyring vouches for (${d.recovery.reason})`,
        );
      }
      current = d.keyId;
      used.add(current);
      if (next) {
        learned.set(d.handover.nextKeyId, next);
        current = d.handover.nextKeyId;
        used.add(current);
        line(true, `${cluster} seq ${d.seq}: signing handed over from key ${d.keyId} to key ${current} (signed by both)`);
      }
    }
    if (!d.supersedes) {
      if (regularEnd !== undefined && d.periodStart !== regularEnd) problems.push(`the periods jump from ${regularEnd} to ${d.periodStart}`);
      regularEnd = d.periodEnd;
    } else if (!periods.has(d.periodStart)) problems.push(`supersedes seq ${d.supersedes.seq}, whose period is not in the stretch`);
    const before = periods.get(d.periodStart);
    periods.set(d.periodStart, {
      end: d.periodEnd,
      seq: d.seq,
      count: d.events?.count,
      superseded: before ? [...before.superseded, before.seq] : [],
      problems: [...(before?.problems ?? []), ...problems],
    });
    previous = d;
  }
  const starts = [...periods.keys()].sort((a, b) => Date.parse(a) - Date.parse(b));
  const first = starts[0];
  if (first === undefined) {
    line(false, `${cluster}: no digest covers the export's range (none sealed when it ran?)`);
    continue;
  }
  if (Date.parse(first) > fromMs && chain[0].seq !== 1) line(false, `${cluster}: the digests start at ${first}, after the export's start ${manifest.from}`);
  for (const start of starts) {
    const p = periods.get(start);
    const sup = p.superseded.length ? ` (supersedes seq ${p.superseded.join(', ')}: changed after sealing)` : '';
    line(p.problems.length === 0, `${cluster} ${start}..${p.end} seq ${p.seq}${p.problems.length ? `: ${p.problems.join('; ')}` : ` events ${p.count}${sup}`}`);
  }
  // The manifest was signed when the export ran, by the key the chain was signed by then: a key the stretch had handed
  // over from (a retired key, which may have leaked) vouches for no export.
  const last = chain[chain.length - 1];
  if (sig && last && sig.keyId !== current && sig.keyId !== last.keyId)
    line(
      false,
      `${cluster}: the manifest is signed by key ${sig.keyId}, but its digests end signed by key ${current ?? last.keyId}: not the key in force when it ran`,
    );
  // Rows of a period no digest sealed are vouched for by nothing: the export covers it, so the check fails.
  if (regularEnd !== undefined && Date.parse(regularEnd) < toMs)
    line(false, `${cluster} ${regularEnd}..${manifest.to} not sealed when the export ran: no digest vouches for its rows (export again once it is sealed)`);
}
if (!manifest.digests || Object.keys(manifest.digests).length === 0) line(false, 'manifest: carries no digests');

process.stdout.write(failures ? `${failures} check(s) failed\n` : 'every check passed\n');
process.exit(failures ? 1 : 0);
