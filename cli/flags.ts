// Flag parsers shared by the subcommands: each error names the flag.
import { InvalidArgumentError } from 'commander';
import { isLockauditError, LockauditError } from '../core/errors.js';

/** A bad flag: a validation error naming it, which keyed() prints as one line and exit 2. */
export function badFlag(message: string): never {
  throw new LockauditError('LOCKAUDIT_ERR_VALIDATION', message);
}

/** Runs a digest or key command's body: a bad flag or an unusable key is one line on stderr and exit 2. */
export async function keyed(body: () => void | Promise<void>): Promise<void> {
  try {
    await body();
  } catch (err) {
    if (isLockauditError(err, 'LOCKAUDIT_ERR_VALIDATION') || isLockauditError(err, 'LOCKAUDIT_ERR_DIGEST_KEY')) {
      process.stderr.write(`lockaudit: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    throw err;
  }
}

export const integer =
  (flag: string, min: number, max: number) =>
  (value: string): number => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`${flag} must be an integer, got "${value}"`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`${flag} must be between ${min} and ${max}, got ${n}`);
    return n;
  };
