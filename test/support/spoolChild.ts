// A child process for the spool crash test: appends records forever and
// prints each id only after its append resolved (written and fsync'd).
import { randomUUID } from 'node:crypto';
import { SpoolWriter } from '../../lock/spool.js';

const file = process.argv[2] as string;
const writer = new SpoolWriter(file);
for (let i = 0; ; i++) {
  const id = randomUUID();
  await writer.append({
    v: 1,
    kind: 'grant',
    id,
    cluster: 'local',
    key: `ns/k-${i}`,
    namespace: 'ns',
    class: 'c',
    holder: 'h',
    session: '1',
    token: '0',
    waitMs: 0,
    at: Date.now(),
    epoch: 1,
  });
  process.stdout.write(`${id}\n`);
}
