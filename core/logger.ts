// Structured logs (pino). Tokens never reach a log: any field named token,
// secret or password is redacted wherever it sits in the object.
import { pino, type Logger } from 'pino';

export type { Logger };

const REDACT = [
  'token',
  '*.token',
  '*.*.token',
  'secretKey',
  '*.secretKey',
  'password',
  '*.password',
  'authorization',
  '*.authorization',
  'req.headers.authorization',
];

// A fencing token can travel in a query string (GET /v1/grants?token=…), and
// fastify logs every request URL: the value is cut out of logged URLs.
const TOKEN_IN_QUERY = /([?&]token=)[^&#]*/gi;
export const redactUrl = (url: string): string => url.replace(TOKEN_IN_QUERY, '$1[redacted]');

interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** How a long-running command logs (`lockaudit start --log-format`). */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** What `auto` becomes: human-readable on a terminal, JSON lines (for collectors) otherwise. */
export function resolveLogFormat(setting: LogFormat, stdoutIsTty: boolean): 'json' | 'pretty' {
  if (setting !== 'auto') return setting;
  return stdoutIsTty ? 'pretty' : 'json';
}

/**
 * pino's own pretty transport (pino-pretty, in a worker thread): one line per
 * entry, local time, the role and cluster kept, the constant fields dropped.
 * Redaction runs before it, as for JSON.
 */
export function prettyDestination(): pino.DestinationStream {
  return pino.transport({
    target: 'pino-pretty',
    options: { colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname,app', singleLine: true },
  }) as pino.DestinationStream;
}

export function createLogger(level: string, bindings: Record<string, unknown> = {}, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { app: 'lockaudit', ...bindings },
      redact: { paths: REDACT, censor: '[redacted]' },
      // Replaces fastify's request serializer (fastify merges a logger's own serializers over its defaults).
      serializers: {
        req: (req: LoggedRequest) => ({
          method: req.method,
          url: redactUrl(String(req.url ?? '')),
          host: req.host,
          remoteAddress: req.ip,
          remotePort: req.socket?.remotePort,
        }),
      },
    },
    destination,
  );
}
