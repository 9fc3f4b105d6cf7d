// `lockaudit keys list|rotate|recover`: the digest signing key's life
// (docs/keys.md). These act on the data dir only —
// the worker reads it each run and does the signing: a rotation's next key is
// handed over to in the next digest, signed by both keys; a recovery lets the
// chain go on under a new key after the old one was lost, saying so in the
// chain. A key set in the environment is rotated through the environment
// (LOCKAUDIT_DIGEST_NEXT_SIGNING_KEY; runbook).
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig, type Config } from '../core/config.js';
import { createS3Client } from '../core/s3.js';
import { keyTrail } from '../exporters/digests/format.js';
import { readChain } from '../exporters/digests/worker.js';
import {
  addToKeyringFile,
  authorizeRotation,
  authorizedRecovery,
  createDigestKeyFile,
  deploymentKeyring,
  DIGEST_KEY_FILE,
  DIGEST_NEXT_KEY_FILE,
  DIGEST_RECOVERY_FILE,
  existingDigestPublicKeyPem,
  nextDigestSigner,
  parseKeyring,
  signerFromPrivateKey,
  type DigestRecovery,
} from '../core/digestKey.js';
import { badFlag as bad, keyed as run } from './flags.js';
import { splitRefusal, splitTailerKey } from '../roles/tailerKeySplit.js';
import { existingOriginSecret, TAILER_SECRET_FILE } from '../core/originSecret.js';
import { existingTailerKey } from '../core/tailerSecret.js';
import { proofKeyId } from '../core/proof.js';
import { withStore } from './store.js';

const say = (line: string): void => void process.stdout.write(`${line}\n`);

/** The key each configured cluster's chain is signed by now (undefined: no digest yet), checked under the deployment's keyring. */
async function chainKeys(config: Config): Promise<Map<string, string | undefined>> {
  const s3 = createS3Client(config.s3);
  const keyring = deploymentKeyring(config);
  const out = new Map<string, string | undefined>();
  for (const c of config.etcd.clusters) {
    const digests = (await readChain(s3, config.s3.archiveBucket, c.name)).flatMap((e) => (e.digest ? [e.digest] : [])).sort((a, b) => a.seq - b.seq);
    out.set(c.name, keyTrail(digests, keyring).currentKeyId);
  }
  return out;
}

function keyIdOfFile(file: string): string {
  return signerFromPrivateKey(createPrivateKey(readFileSync(file, 'utf8'))).keyId;
}

export function registerKeyCommands(program: Command): void {
  const keys = program
    .command('keys')
    .description("the digest signing key: list the keyring, rotate to a new key, recover from a lost one; the tailer's key: split it from the origin secret");

  keys
    .command('split-tailer')
    .description(
      "give the tailer a key of its own, apart from the lock API's origin secret (a deployment from before the split): every row the tailer proved is proved again under the new key, then the key is put in place. Run with every tailer and worker stopped, on a tailer or worker host",
    )
    .option('--resume', 'finish a split that was cut off, with the draft key it left (<dataDir>/tailer-secret.next)')
    .action((flags: { resume?: boolean }) =>
      run(async () => {
        const config = loadConfig();
        const options = { resume: flags.resume === true };
        const refusal = splitRefusal(config, options);
        if (refusal) bad(refusal);
        const { result, file } = await withStore(config, (store) => splitTailerKey(config, store, options), { migrate: true });
        const { review, ...counts } = result;
        for (const [what, c] of Object.entries(counts))
          say(`${what}: ${c.reproved} proved again${c.left ? `, ${c.left} left (no proof of the old key: they proved nothing before either)` : ''}`);
        // The old key was the lock API's too: what it vouched for is carried over, and these are worth a look.
        for (const g of review.restoreGaps) say(`review: restore gap of generation ${g.generation} (revisions ${g.fromRevision}-${g.toRevision}) carried over`);
        if (review.grantRowExcuses > 0)
          say(`review: ${review.grantRowExcuses} quarantine entr${review.grantRowExcuses === 1 ? 'y' : 'ies'} excusing a missing grant row carried over`);
        say(`the tailer's key is now ${file}; start the tailer and worker again`);
        say('where the tailer or worker runs on another host, set LOCKAUDIT_TAILER_SECRET there to its content — never on the api');
      }),
    );

  keys
    .command('list')
    .description(
      'every key the deployment has signed with (its keyring), which one signs now and which one a rotation hands over to; --pem prints the keyring as one PEM file for lockaudit verify --public-key and verify-export.mjs',
    )
    .option('--pem', 'print the public keys as one PEM file')
    .action((flags: { pem?: boolean }) =>
      run(() => {
        const config = loadConfig();
        const ring = deploymentKeyring(config);
        if (flags.pem) {
          for (const [id, k] of ring) process.stdout.write(`# key ${id}\n${k.export({ type: 'spki', format: 'pem' }).toString()}`);
          return;
        }
        const currentPem = existingDigestPublicKeyPem(config);
        const current = currentPem ? [...ring].find(([, k]) => k.equals(createPublicKey(currentPem)))?.[0] : undefined;
        const next = nextDigestSigner(config)?.keyId;
        const recovery = authorizedRecovery(config.dataDir);
        if (ring.size === 0) say('no digest key yet: the worker makes one at its first start');
        for (const id of ring.keys())
          say(`${id}${id === current ? '  signing' : ''}${id === next ? '  next (a rotation: the next digest hands over to it)' : ''}`);
        if (recovery) say(`recovery authorized ${recovery.authorizedAt} from lost key ${recovery.lostKeyId}: ${recovery.reason}`);
        // The proof keys by id (a hash: the same id on every host means the same key), never the keys.
        const origin = existingOriginSecret(config);
        const tailer = existingTailerKey(config);
        say(origin ? `origin secret ${proofKeyId(origin)}  (the lock API's proofs)` : 'origin secret: none yet (made at the first start)');
        if (tailer?.source === 'origin') say(`tailer key ${proofKeyId(tailer.key)}  the origin secret, shared with the lock API: lockaudit keys split-tailer`);
        else if (tailer)
          say(
            `tailer key ${proofKeyId(tailer.key)}  (${tailer.source === 'configured' ? 'LOCKAUDIT_TAILER_SECRET' : path.join(config.dataDir, TAILER_SECRET_FILE)})`,
          );
        else say('tailer key: none yet (made at the first start)');
      }),
    );

  keys
    .command('rotate')
    .description(
      "start a rotation: a new key is written beside the current one; the worker's next digest hands signing over to it, signed by both keys, and the old private key is then overwritten (its public half stays in the keyring)",
    )
    .action(() =>
      run(() => {
        const config = loadConfig();
        if (config.digestSigningKey)
          bad(
            'the signing key is set in the environment (LOCKAUDIT_DIGEST_SIGNING_KEY): rotate by setting LOCKAUDIT_DIGEST_NEXT_SIGNING_KEY on the worker (runbook: rotating the digest key)',
          );
        const current = path.join(config.dataDir, DIGEST_KEY_FILE);
        if (!existsSync(current)) bad(`${current} does not exist: there is no key to rotate from (the worker makes one at its first start)`);
        const nextFile = path.join(config.dataDir, DIGEST_NEXT_KEY_FILE);
        if (existsSync(nextFile))
          bad(`a rotation is already pending: ${nextFile} (key ${keyIdOfFile(nextFile)}) waits for the worker's next digest to hand over to it`);
        createDigestKeyFile(nextFile);
        const next = nextDigestSigner(config);
        if (!next) bad(`${nextFile} could not be written`);
        // The current key vouches for the rotation: a next key planted in the data dir without it is not handed over to.
        authorizeRotation(config.dataDir, signerFromPrivateKey(createPrivateKey(readFileSync(current, 'utf8'))), next);
        addToKeyringFile(config.dataDir, next.publicKeyPem);
        say(`rotation started: key ${keyIdOfFile(current)} hands over to key ${next.keyId} in the next digest of each cluster, signed by both`);
        say('give auditors the new public key beside the old ones: lockaudit keys list --pem');
      }),
    );

  keys
    .command('recover')
    .description(
      'after the signing key was lost for good (no backup): authorize the worker to go on under a new key; its next digest links to the chain and names the lost key, and every later verification says so — trusted only by verifiers given the new key',
    )
    .requiredOption('--lost-key-id <id>', 'the key the chain is signed by, which is lost (as LOCKAUDIT_ALARM_DIGEST_KEY_UNKNOWN names it)')
    .requiredOption('--reason <text>', 'why: kept in the chain and shown in every later verification')
    .option(
      '--public-key <file>',
      "the lost key's public half (PEM), when the keyring lost it too (a data dir lost whole): auditors hold it, GET /v1/digests/public-key served it; the worker checks the chain it goes on from with it",
    )
    .action((flags: { lostKeyId: string; reason: string; publicKey?: string }) =>
      run(async () => {
        if (!/^[0-9a-f]{16}$/.test(flags.lostKeyId)) bad(`--lost-key-id: "${flags.lostKeyId}" is not a key id (16 hex digits)`);
        const reason = flags.reason.trim();
        if (reason.length < 10 || reason.length > 500) bad('--reason: say why in 10 to 500 characters');
        const config = loadConfig();
        if (flags.publicKey !== undefined) {
          let text = '';
          try {
            text = readFileSync(flags.publicKey, 'utf8');
          } catch (err) {
            bad(`--public-key: cannot read ${flags.publicKey}: ${(err as Error).message}`);
          }
          const ring = parseKeyring(text, '--public-key');
          const lost =
            ring.get(flags.lostKeyId) ?? bad(`--public-key: ${flags.publicKey} holds key ${[...ring.keys()].join(', ')}, not the lost key ${flags.lostKeyId}`);
          addToKeyringFile(config.dataDir, lost.export({ type: 'spki', format: 'pem' }).toString());
        } else if (!deploymentKeyring(config).has(flags.lostKeyId))
          bad(
            `--public-key: the keyring does not hold the lost key ${flags.lostKeyId}'s public half, which the worker needs to check the chain it goes on from: give it (auditors hold it; GET /v1/digests/public-key served it)`,
          );
        // The chains say which key is lost: only a key a chain is signed by now can be recovered from.
        const signing = await chainKeys(config);
        const inUse = (id: string): string | undefined => [...signing].find(([, k]) => k === id)?.[0];
        if (!inUse(flags.lostKeyId))
          bad(
            `--lost-key-id: no chain is signed by key ${flags.lostKeyId} now (${[...signing].map(([c, k]) => `${c}: ${k ?? 'no digest'}`).join(', ')}): only the key a chain is signed by can be recovered from`,
          );
        if (config.digestSigningKey) {
          const configured = signerFromPrivateKey(createPrivateKey(config.digestSigningKey)).keyId;
          if (configured === flags.lostKeyId) bad(`--lost-key-id: ${flags.lostKeyId} is LOCKAUDIT_DIGEST_SIGNING_KEY, which is not lost`);
        } else {
          const file = path.join(config.dataDir, DIGEST_KEY_FILE);
          if (existsSync(file)) {
            const there = keyIdOfFile(file);
            if (there === flags.lostKeyId) bad(`--lost-key-id: ${flags.lostKeyId} is the key in ${file}, which is not lost: nothing to recover`);
            const cluster = inUse(there);
            if (cluster) bad(`the key in ${file} (${there}) signs the chain of ${cluster}: it is not lost, and is kept`);
            // A key no chain was signed with (a worker made it in a data dir lost whole, or it was put there): set
            // aside, never taken as the new key — whoever could create the file may hold it.
            renameSync(file, path.join(config.dataDir, `digest-signing-key.replaced-${there}.pem`));
          }
          createDigestKeyFile(file);
          addToKeyringFile(config.dataDir, signerFromPrivateKey(createPrivateKey(readFileSync(file, 'utf8'))).publicKeyPem);
        }
        const recovery: DigestRecovery = { lostKeyId: flags.lostKeyId, reason, authorizedAt: new Date().toISOString() };
        writeFileSync(path.join(config.dataDir, DIGEST_RECOVERY_FILE), `${JSON.stringify(recovery, null, 2)}\n`, { mode: 0o600 });
        const key = existingDigestPublicKeyPem(config);
        const id = key ? [...deploymentKeyring(config)].find(([, k]) => k.equals(createPublicKey(key)))?.[0] : undefined;
        say(`recovery authorized: the next digest of each cluster signed by key ${flags.lostKeyId} goes on under key ${id ?? '?'}, naming the lost key`);
        say('verifiers trust it only with the new key in their keyring: give them lockaudit keys list --pem, out of band');
      }),
    );
}
