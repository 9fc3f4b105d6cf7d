// A real HTTP receiver for alert sinks (node http on 127.0.0.1): acknowledges
// every request with 204 and keeps each delivered line's event id and the
// OCSF `unmapped` fields (kind, key, revision, ...). For tests that need to
// see what a sink delivered, not how it copes with failures (alerts.test.ts).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Delivered {
  id: string;
  cluster: string;
  unmapped: Record<string, unknown>;
}

export interface AlertReceiver {
  url: string;
  delivered: Delivered[];
  close(): Promise<void>;
}

export async function alertReceiver(): Promise<AlertReceiver> {
  const delivered: Delivered[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const cluster = String(req.headers['x-lockaudit-cluster']);
      for (const line of Buffer.concat(chunks).toString('utf8').trimEnd().split('\n')) {
        if (line === '') continue;
        const event = JSON.parse(line) as { metadata: { uid: string }; unmapped?: Record<string, unknown> };
        delivered.push({ id: event.metadata.uid, cluster, unmapped: event.unmapped ?? {} });
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/ingest`,
    delivered,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
