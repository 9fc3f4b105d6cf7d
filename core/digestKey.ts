// The Ed25519 key that signs the tamper-evident digests (exporters/digests/)
// and compliance-export manifests. Like the origin secret (originSecret.ts):
// configured (LOCKAUDIT_DIGEST_SIGNING_KEY: PKCS#8 PEM, or its DER in base64)
// or generated once into <dataDir>/digest-signing-key.pem, so the worker that
// signs and the API that publishes the public half share it without setup;
// never logged (maskedConfig hides a configured one). The key id is the first
// 16 hex digits of the sha256 of the public key's DER (SPKI): a verifier names
// a digest signed by another key by it.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { LockauditError } from './errors.js';

export const DIGEST_KEY_FILE = 'digest-signing-key.pem';

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

/** The deployment's digest signer: the configured key, or the one generated into the data dir. */
export function digestSigner(config: KeySource): DigestSigner {
  if (config.digestSigningKey) return signerFromPrivateKey(parsePrivateKey(config.digestSigningKey, 'LOCKAUDIT_DIGEST_SIGNING_KEY'));
  const file = path.join(config.dataDir, DIGEST_KEY_FILE);
  let text: string | undefined;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Unreadable is not absent: a key generated in its place would sign a chain no earlier digest links to.
    if (code !== 'ENOENT')
      throw new LockauditError(
        'LOCKAUDIT_ERR_DIGEST_KEY',
        `${file} cannot be read (${code ?? (err as Error).message}): give the process read access to it (or restore it from your backup)`,
        { cause: err },
      );
  }
  // An empty or cut file is refused by name (parsePrivateKey), never replaced.
  if (text !== undefined) return signerFromPrivateKey(parsePrivateKey(text, file));
  mkdirSync(config.dataDir, { recursive: true });
  try {
    // 'wx': a second process creating it at the same moment keeps the first one's key.
    const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    writeFileSync(file, pem, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return signerFromPrivateKey(parsePrivateKey(readFileSync(file, 'utf8'), file));
}

/** Why a configured public key cannot be served (not an Ed25519 SPKI key, or not the configured signing key's half), or undefined. */
export function digestPublicKeyProblem(text: string, signingKey?: string): string | undefined {
  let key: KeyObject;
  try {
    key = digestPublicKey(text.trim());
  } catch (err) {
    return (err as Error).message.replace(/^public key: /, '');
  }
  if (signingKey === undefined || digestSigningKeyProblem(signingKey) !== undefined) return undefined;
  const signer = signerFromPrivateKey(parsePrivateKey(signingKey, 'LOCKAUDIT_DIGEST_SIGNING_KEY'));
  const id = digestKeyId(key);
  return id === signer.keyId
    ? undefined
    : `key ${id} is not the public half of LOCKAUDIT_DIGEST_SIGNING_KEY (key ${signer.keyId}): the API would publish a key no digest is signed with`;
}

/**
 * The public key the API serves, which never needs the private one: LOCKAUDIT_DIGEST_PUBLIC_KEY, else the public half
 * of the deployment's existing signing key; undefined while there is none (the API never generates one: a key it
 * generated would be one no worker signs with).
 */
export function servedDigestPublicKey(config: KeySource & { digestPublicKey?: string | undefined }): { keyId: string; publicKeyPem: string } | undefined {
  if (config.digestPublicKey) {
    const key = digestPublicKey(config.digestPublicKey.trim(), 'LOCKAUDIT_DIGEST_PUBLIC_KEY');
    return { keyId: digestKeyId(key), publicKeyPem: key.export({ type: 'spki', format: 'pem' }).toString() };
  }
  const pem = existingDigestPublicKeyPem(config);
  return pem === undefined ? undefined : { keyId: digestKeyId(createPublicKey(pem)), publicKeyPem: pem };
}

/** The deployment's public key without creating one: the configured key's, or the data dir's; undefined when there is none yet. */
export function existingDigestPublicKeyPem(config: KeySource): string | undefined {
  if (config.digestSigningKey) return signerFromPrivateKey(parsePrivateKey(config.digestSigningKey, 'LOCKAUDIT_DIGEST_SIGNING_KEY')).publicKeyPem;
  const file = path.join(config.dataDir, DIGEST_KEY_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return signerFromPrivateKey(parsePrivateKey(text, file)).publicKeyPem;
}
