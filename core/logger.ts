// Structured logs (pino). Tokens never reach a log: any field named token,
// secret or password is redacted wherever it sits in the object.
import { pino, type Logger } from 'pino';

export type { Logger };

const REDACT = ['token', '*.token', '*.*.token', 'secretKey', '*.secretKey', 'password', '*.password', 'authorization', '*.authorization', 'req.headers.authorization'];

export function createLogger(level: string, bindings: Record<string, unknown> = {}, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { app: 'lockaudit', ...bindings }, redact: { paths: REDACT, censor: '[redacted]' } }, destination);
}
