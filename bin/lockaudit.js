#!/usr/bin/env node
// Runs the compiled CLI (npm install builds dist/ through the prepare script).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('lockaudit: dist/ is missing; run `npm run build` (npm install runs it)\n');
  process.exit(1);
}
const { main } = await import(entry.href);
await main(process.argv);
// Every command has closed what it opened; a client's idle timer must not keep the CLI alive.
process.exit(process.exitCode ?? 0);
