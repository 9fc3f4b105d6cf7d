// Structured logs (pino). Tokens never reach a log: any field named token,
// secret or password is redacted wherever it sits in the object.
import { pino, type Logger } from 'pino';

export type { Logger };

const REDACT = ['token', '*.token', '*.*.token', 'secretKey', '*.secretKey', 'password', '*.password', 'authorization', '*.authorization', 'req.headers.authorization'];

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

export function createLogger(level: string, bindings: Record<string, unknown> = {}, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { app: 'lockaudit', ...bindings },
      redact: { paths: REDACT, censor: '[redacted]' },
      // Replaces fastify's request serializer (fastify merges a logger's own serializers over its defaults).
      serializers: { req: (req: LoggedRequest) => ({ method: req.method, url: redactUrl(String(req.url ?? '')), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort }) },
    },
    destination,
  );
}
