// The Ed25519 key that signs the tamper-evident digests (exporters/digests/)
// and compliance-export manifests. Like the origin secret (originSecret.ts):
// configured (LOCKAUDIT_DIGEST_SIGNING_KEY: PKCS#8 PEM, or its DER in base64)
// or generated once into <dataDir>/digest-signing-key.pem, so the worker that
// signs and the API that publishes the public half share it without setup;
// never logged (maskedConfig hides a configured one). The key id is the first
// 16 hex digits of the sha256 of the public key's DER (SPKI): a verifier names
// a digest signed by another key by it.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { appendFileSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { LockauditError } from './errors.js';

export const DIGEST_KEY_FILE = 'digest-signing-key.pem';
/** A rotation's next key (`lockaudit keys rotate`), until the chain has handed signing over to it. */
export const DIGEST_NEXT_KEY_FILE = 'digest-signing-key.next.pem';
/** The public half of every key the deployment has signed with: what verifies its older digests and manifests. */
export const DIGEST_KEYRING_FILE = 'digest-keyring.pem';
/** The current key's signature of a rotation's next key id (`lockaudit keys rotate`): a next key file without it is no rotation. */
export const DIGEST_NEXT_KEY_AUTH_FILE = 'digest-signing-key.next.auth';
/** A recovery the operator authorized (`lockaudit keys recover`): the lost key the chain may move on from. */
export const DIGEST_RECOVERY_FILE = 'digest-recovery.json';

/** Public keys by key id: the keys a verifier trusts, or the keys a deployment has signed with. */
export type DigestKeyring = ReadonlyMap<string, KeyObject>;

/** What of the configuration the key comes from (config.ts checks a configured key with digestSigningKeyProblem, so it cannot import the Config type back). */
interface KeySource {
  dataDir: string;
  digestSigningKey?: string | undefined;
}

export interface DigestSigner {
  /** Key id: sha256(SPKI DER) hex, first 16 digits. */
  readonly keyId: string;
  /** The public key, SPKI PEM: what a verifier needs. */
  readonly publicKeyPem: string;
  /** Ed25519 signature of the bytes, base64. */
  sign(data: Buffer): string;
}

/** The key id of a public key. */
export function digestKeyId(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

/** A keyring of the given keys. */
export function keyringOf(keys: Iterable<KeyObject>): Map<string, KeyObject> {
  const ring = new Map<string, KeyObject>();
  for (const k of keys) ring.set(digestKeyId(k), k);
  return ring;
}

const PEM_BLOCK = /-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g;

/** Every public key (SPKI PEM blocks, one or more, one after the other) in `text`; throws naming `what` when there is none or one is not Ed25519. */
export function parseKeyring(text: string, what = 'keyring'): Map<string, KeyObject> {
  const blocks = text.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) throw new LockauditError('LOCKAUDIT_ERR_DIGEST_KEY', `${what}: holds no PEM public key`);
  return keyringOf(blocks.map((b, i) => digestPublicKey(b, blocks.length > 1 ? `${what} (key ${i + 1})` : what)));
}

/** A keyring as text: each key's PEM after a comment line naming its id, in the order given. */
export function keyringPem(ring: DigestKeyring): string {
  return [...ring].map(([id, k]) => `# key ${id}\n${k.export({ type: 'spki', format: 'pem' }).toString()}`).join('');
}

/** A public key from SPKI PEM; throws a validation error naming `what` when it is not an Ed25519 key. */
export function digestPublicKey(pem: string, what = 'public key'): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (err) {
    throw new LockauditError('LOCKAUDIT_ERR_DIGEST_KEY', `${what}: not a PEM public key (${(err as Error).message})`, { cause: err });
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new LockauditError('LOCKAUDIT_ERR_DIGEST_KEY', `${what}: an ${key.asymmetricKeyType} key, expected Ed25519`);
  return key;
}

/** Checks an Ed25519 signature (base64) of `data`. */
export function verifyDigestSignature(publicKey: KeyObject, data: Buffer, signature: string): boolean {
  try {
    return verify(null, data, publicKey, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}

export function signerFromPrivateKey(privateKey: KeyObject): DigestSigner {
  if (privateKey.asymmetricKeyType !== 'ed25519')
    throw new LockauditError('LOCKAUDIT_ERR_DIGEST_KEY', `digestSigningKey: an ${privateKey.asymmetricKeyType} key, expected Ed25519`);
  const publicKey = createPublicKey(privateKey);
  return {
    keyId: digestKeyId(publicKey),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    sign: (data) => sign(null, data, privateKey).toString('base64'),
  };
}

/** Why a configured signing key cannot sign digests (not PKCS#8, not Ed25519), or undefined: what `lockaudit config` checks. */
export function digestSigningKeyProblem(text: string): string | undefined {
  try {
    const key = parsePrivateKey(text, 'key');
    return key.asymmetricKeyType === 'ed25519' ? undefined : `an ${key.asymmetricKeyType} key, expected Ed25519`;
  } catch {
    return 'not a PKCS#8 private key (PEM, or DER in base64)';
  }
}

function parsePrivateKey(text: string, what: string): KeyObject {
  const trimmed = text.trim();
  try {
    return trimmed.startsWith('-----BEGIN')
      ? createPrivateKey(trimmed)
      : createPrivateKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'pkcs8' });
  } catch (err) {
    throw new LockauditError('LOCKAUDIT_ERR_DIGEST_KEY', `${what}: not a PKCS#8 private key (PEM, or DER in base64)`, { cause: err });
  }
}

/** A fresh signer (tests: "a digest signed by another key"). */
export function generateDigestSigner(): DigestSigner {
  return signerFromPrivateKey(generateKeyPairSync('ed25519').privateKey);
}

/** The key ids a keyring file holds; empty when there is no such file. */
function keyringFileIds(dataDir: string): string[] {
  const text = readIfExists(path.join(dataDir, DIGEST_KEYRING_FILE));
  return text === undefined ? [] : [...parseKeyring(text, path.join(dataDir, DIGEST_KEYRING_FILE)).keys()];
}

/** Adds a key's public half to the data dir's keyring file (once). */
export function addToKeyringFile(dataDir: string, publicKeyPem: string): void {
  const key = digestPublicKey(publicKeyPem);
  const id = digestKeyId(key);
  if (keyringFileIds(dataDir).includes(id)) return;
  mkdirSync(dataDir, { recursive: true });
  appendFileSync(path.join(dataDir, DIGEST_KEYRING_FILE), keyringPem(new Map([[id, key]])), { mode: 0o644 });
}

/** A file's text; undefined when it does not exist. Unreadable is not absent: that throws, naming the file. */
function readIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new LockauditError(
      'LOCKAUDIT_ERR_DIGEST_KEY',
      `${file} cannot be read (${code ?? (err as Error).message}): give the process read access to it (or restore it from your backup)`,
      { cause: err },
    );
  }
}

/** Writes a fresh key into `file` unless one is there ('wx': a second process at the same moment keeps the first one's). */
export function createDigestKeyFile(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  try {
    const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    writeFileSync(file, pem, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/**
 * The deployment's digest signer: the configured key, or the one in the data dir — generated there only while the
 * deployment has signed with no key at all. A key file gone while the keyring names keys is a lost key: refused by
 * name, never silently replaced (a new key would start a chain no earlier digest links to; `lockaudit keys recover`
 * does that on purpose, and says so in the chain).
 */
export function digestSigner(config: KeySource): DigestSigner {
  if (config.digestSigningKey) return signerFromPrivateKey(parsePrivateKey(config.digestSigningKey, 'LOCKAUDIT_DIGEST_SIGNING_KEY'));
  const file = path.join(config.dataDir, DIGEST_KEY_FILE);
  let text = readIfExists(file);
  if (text === undefined) {
    const known = keyringFileIds(config.dataDir);
    if (known.length)
      throw new LockauditError(
        'LOCKAUDIT_ERR_DIGEST_KEY',
        `${file} is missing, but this deployment has signed with key(s) ${known.join(', ')} (${path.join(config.dataDir, DIGEST_KEYRING_FILE)}): restore the key from your backup, or start a new chain with \`lockaudit keys recover\` (runbook: digest signing key lost)`,
      );
    createDigestKeyFile(file);
    text = readFileSync(file, 'utf8');
  }
  // An empty or cut file is refused by name (parsePrivateKey), never replaced.
  const signer = signerFromPrivateKey(parsePrivateKey(text, file));
  addToKeyringFile(config.dataDir, signer.publicKeyPem);
  return signer;
}

/** A rotation's next signer: LOCKAUDIT_DIGEST_NEXT_SIGNING_KEY, else the data dir's next key; undefined when no rotation is pending. */
export function nextDigestSigner(config: KeySource & { digestNextSigningKey?: string | undefined }): DigestSigner | undefined {
  if (config.digestNextSigningKey) return signerFromPrivateKey(parsePrivateKey(config.digestNextSigningKey, 'LOCKAUDIT_DIGEST_NEXT_SIGNING_KEY'));
  const file = path.join(config.dataDir, DIGEST_NEXT_KEY_FILE);
  const text = readIfExists(file);
  return text === undefined ? undefined : signerFromPrivateKey(parsePrivateKey(text, file));
}

const rotationMessage = (nextKeyId: string): Buffer => Buffer.from(`lockaudit digest rotation\0${nextKeyId}`, 'utf8');

/** Writes the current key's authorization of a rotation to `next` (next to the next key file). */
export function authorizeRotation(dataDir: string, current: DigestSigner, next: DigestSigner): void {
  writeFileSync(path.join(dataDir, DIGEST_NEXT_KEY_AUTH_FILE), `${current.keyId} ${current.sign(rotationMessage(next.keyId))}\n`, { mode: 0o600 });
}

/**
 * Why the data dir's next key is no rotation the current key authorized (whoever can create a file in the data dir
 * could otherwise plant a key of their own for the chain to hand over to), or undefined when it is one.
 */
export function rotationProblem(dataDir: string, current: { keyId: string; publicKeyPem: string }, next: DigestSigner): string | undefined {
  const text = readIfExists(path.join(dataDir, DIGEST_NEXT_KEY_AUTH_FILE));
  if (text === undefined) return `${DIGEST_NEXT_KEY_FILE} has no ${DIGEST_NEXT_KEY_AUTH_FILE}: not a rotation of lockaudit keys rotate`;
  const [keyId, signature] = text.trim().split(' ');
  if (
    keyId !== current.keyId ||
    signature === undefined ||
    !verifyDigestSignature(createPublicKey(current.publicKeyPem), rotationMessage(next.keyId), signature)
  )
    return `${DIGEST_NEXT_KEY_AUTH_FILE} is not key ${current.keyId}'s authorization of key ${next.keyId}`;
  return undefined;
}

/**
 * Once the chain has handed signing over to the next key: the data dir's next key becomes its key (the retired
 * private key is overwritten, its public half stays in the keyring). A no-op for keys set in the environment,
 * which the operator swaps (runbook).
 */
export function promoteNextKeyFile(dataDir: string, nextKeyId: string): boolean {
  const next = path.join(dataDir, DIGEST_NEXT_KEY_FILE);
  const text = readIfExists(next);
  if (text === undefined || signerFromPrivateKey(parsePrivateKey(text, next)).keyId !== nextKeyId) return false;
  renameSync(next, path.join(dataDir, DIGEST_KEY_FILE));
  rmSync(path.join(dataDir, DIGEST_NEXT_KEY_AUTH_FILE), { force: true });
  return true;
}

/** A recovery the operator authorized: the lost key's id, why, and when. */
export interface DigestRecovery {
  lostKeyId: string;
  reason: string;
  authorizedAt: string;
}

/** Once the chain went on from `lostKeyId`: the authorization is spent (never honoured twice). */
export function spendRecovery(dataDir: string, lostKeyId: string): void {
  if (authorizedRecovery(dataDir)?.lostKeyId === lostKeyId) rmSync(path.join(dataDir, DIGEST_RECOVERY_FILE), { force: true });
}

/** The recovery authorized in the data dir (`lockaudit keys recover`), if any. */
export function authorizedRecovery(dataDir: string): DigestRecovery | undefined {
  const file = path.join(dataDir, DIGEST_RECOVERY_FILE);
  const text = readIfExists(file);
  if (text === undefined) return undefined;
  let parsed: Partial<DigestRecovery>;
  try {
    parsed = JSON.parse(text) as Partial<DigestRecovery>;
  } catch {
    throw new LockauditError('LOCKAUDIT_ERR_DIGEST_KEY', `${file}: not JSON (write it with \`lockaudit keys recover\`)`);
  }
  if (
    typeof parsed.lostKeyId !== 'string' ||
    !/^[0-9a-f]{16}$/.test(parsed.lostKeyId) ||
    typeof parsed.reason !== 'string' ||
    typeof parsed.authorizedAt !== 'string'
  )
    throw new LockauditError('LOCKAUDIT_ERR_DIGEST_KEY', `${file}: not a recovery (lostKeyId, reason, authorizedAt; write it with \`lockaudit keys recover\`)`);
  return { lostKeyId: parsed.lostKeyId, reason: parsed.reason, authorizedAt: parsed.authorizedAt };
}

/**
 * Every key the deployment has signed with or will sign with, by id: LOCKAUDIT_DIGEST_PUBLIC_KEY (one key or
 * several), the data dir's keyring, and the public halves of the current and next signing keys (never created here).
 */
export function deploymentKeyring(
  config: KeySource & { digestPublicKey?: string | undefined; digestNextSigningKey?: string | undefined },
): Map<string, KeyObject> {
  const ring = new Map<string, KeyObject>();
  const add = (r: DigestKeyring): void => {
    for (const [id, k] of r) ring.set(id, k);
  };
  if (config.digestPublicKey) add(parseKeyring(config.digestPublicKey, 'LOCKAUDIT_DIGEST_PUBLIC_KEY'));
  const file = path.join(config.dataDir, DIGEST_KEYRING_FILE);
  const text = readIfExists(file);
  if (text !== undefined) add(parseKeyring(text, file));
  const current = existingDigestPublicKeyPem(config);
  if (current) add(keyringOf([createPublicKey(current)]));
  const next = nextDigestSigner(config);
  if (next) add(keyringOf([createPublicKey(next.publicKeyPem)]));
  return ring;
}

/** Why a configured public key (or keyring) cannot be served (not Ed25519 SPKI keys, or without the configured signing key's half), or undefined. */
export function digestPublicKeyProblem(text: string, signingKey?: string): string | undefined {
  let ring: Map<string, KeyObject>;
  try {
    ring = parseKeyring(text, 'public key');
  } catch (err) {
    return (err as Error).message.replace(/^public key[^:]*: /, '');
  }
  if (signingKey === undefined || digestSigningKeyProblem(signingKey) !== undefined) return undefined;
  const signer = signerFromPrivateKey(parsePrivateKey(signingKey, 'LOCKAUDIT_DIGEST_SIGNING_KEY'));
  return ring.has(signer.keyId)
    ? undefined
    : `key ${[...ring.keys()].join(', ')} is not the public half of LOCKAUDIT_DIGEST_SIGNING_KEY (key ${signer.keyId}): the API would publish a key no digest is signed with`;
}

/**
 * The public key the API serves, which never needs the private one: LOCKAUDIT_DIGEST_PUBLIC_KEY (the last key when it
 * holds several: a rotation appends the new one), else the public half of the deployment's existing signing key;
 * undefined while there is none (the API never generates one: a key it generated would be one no worker signs with).
 */
export function servedDigestPublicKey(config: KeySource & { digestPublicKey?: string | undefined }): { keyId: string; publicKeyPem: string } | undefined {
  if (config.digestPublicKey) {
    const ring = parseKeyring(config.digestPublicKey, 'LOCKAUDIT_DIGEST_PUBLIC_KEY');
    const [keyId, key] = [...ring].at(-1) as [string, KeyObject];
    return { keyId, publicKeyPem: key.export({ type: 'spki', format: 'pem' }).toString() };
  }
  const pem = existingDigestPublicKeyPem(config);
  return pem === undefined ? undefined : { keyId: digestKeyId(createPublicKey(pem)), publicKeyPem: pem };
}

/** The deployment's public key without creating one: the configured key's, or the data dir's; undefined when there is none yet. */
export function existingDigestPublicKeyPem(config: KeySource): string | undefined {
  if (config.digestSigningKey) return signerFromPrivateKey(parsePrivateKey(config.digestSigningKey, 'LOCKAUDIT_DIGEST_SIGNING_KEY')).publicKeyPem;
  const file = path.join(config.dataDir, DIGEST_KEY_FILE);
  const text = readIfExists(file);
  return text === undefined ? undefined : signerFromPrivateKey(parsePrivateKey(text, file)).publicKeyPem;
}
