// Flag parsers shared by the subcommands: each error names the flag.
import { InvalidArgumentError } from 'commander';

export const integer =
  (flag: string, min: number, max: number) =>
  (value: string): number => {
    if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`${flag} must be an integer, got "${value}"`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`${flag} must be between ${min} and ${max}, got ${n}`);
    return n;
  };
