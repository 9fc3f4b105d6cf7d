// A role process whose main thread is held in a blocking call (as in a native
// chdb call), for test/unit/followSupervisor.test.ts: it follows its
// supervisor (cli/followSupervisor.ts) with the kill delay given as argv[2],
// handles SIGTERM in JavaScript as a role does (so only a SIGKILL ends it),
// says it is ready, then blocks: no event, timer or signal handler of this
// thread runs again.
import { followSupervisor } from '../../cli/followSupervisor.js';

followSupervisor({ killAfterMs: Number(process.argv[2]) });
process.on('SIGTERM', () => undefined);
process.send?.('ready', () => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 600_000);
});
