// A store process for the conformance test (platform/storeServer.ts): serves the chdb data dir argv[2] with the
// password in LOCKAUDIT_STORE_PASSWORD, prints its address once listening, closes on SIGTERM.
import { startStoreServer } from '../../platform/storeServer.js';

const server = await startStoreServer({ path: process.argv[2] as string, password: process.env.LOCKAUDIT_STORE_PASSWORD ?? '', listen: { port: 0 } });
process.stdout.write(`${server.address}\n`);
process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));
