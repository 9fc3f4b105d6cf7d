// Runs the lockaudit CLI from source (tsx), so a chaos run tests the code of
// this checkout without a build: `node --import tsx test/chaos/lockauditBin.ts start`.
import { main } from '../../cli/main.js';

await main(process.argv);
process.exit(process.exitCode ?? 0);
