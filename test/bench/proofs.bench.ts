// What a proof costs per captured value (core/proof.ts chose HMAC-SHA256 for it): checking the envelope's
// proof of a hold, and the Ed25519 signature the same message would carry instead, each beside the work
// every captured hold already pays — its JSON parse and schema check — timed in the same run.
import { createHmac, generateKeyPairSync, sign, verify } from 'node:crypto';
import { decodeValue, HoldValueSchema } from '../../core/keyspace.js';
import { hasValidProof, holdMac } from '../../core/proof.js';
import { heading, report } from './report.js';

const N = Number(process.env.BENCH_PROOFS ?? 100_000);
const secret = Buffer.from('bench-proofs-secret-0123456789abcdef');
const key = '/l/payments/ledger-7';
const fields = { holder: 'worker-12', session: '7587883245627', class: 'payments', epoch: 1, waitMs: 12, at: 1_764_000_000_000 };
const text = JSON.stringify({ ...fields, mac: holdMac(secret, key, fields) });
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const message = Buffer.from(JSON.stringify(['lockaudit/proof/v2', 'hold', 'ed25519', 'k', key, ...Object.values(fields)]));
const signature = sign(null, message, privateKey);

function perValueMicros(fn: (i: number) => unknown): number {
  for (let i = 0; i < 2_000; i++) fn(i); // warm up
  const start = process.hrtime.bigint();
  let sink = 0;
  for (let i = 0; i < N; i++) if (fn(i)) sink++;
  const micros = Number(process.hrtime.bigint() - start) / 1_000 / N;
  if (sink === 0) throw new Error('nothing checked out');
  return micros;
}

heading(`proofs: µs per captured hold, ${N.toLocaleString('en-US')} values`);
const decode = perValueMicros(() => decodeValue(HoldValueSchema, text));
const hs256 = perValueMicros(() => {
  const hold = decodeValue(HoldValueSchema, text);
  return hold && hasValidProof(secret, key, hold);
});
const ed25519 = perValueMicros(() => decodeValue(HoldValueSchema, text) && verify(null, message, publicKey, signature));
const hmacOnly = perValueMicros(() => createHmac('sha256', secret).update(message).digest().length);
report({
  name: 'decode + hs256 proof check',
  value: hs256,
  baselineName: 'decode only (JSON + schema)',
  baseline: decode,
  unit: 'µs/value',
  higherIsBetter: false,
});
report({
  name: 'decode + ed25519 verify',
  value: ed25519,
  baselineName: 'decode only (JSON + schema)',
  baseline: decode,
  unit: 'µs/value',
  higherIsBetter: false,
});
report({
  name: 'ed25519 verify alone',
  value: ed25519 - decode,
  baselineName: 'HMAC-SHA256 alone',
  baseline: hmacOnly,
  unit: 'µs/value',
  higherIsBetter: false,
});
