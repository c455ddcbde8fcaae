// Benchmark: eventrelay/webhooks verifySignature against a floor, a careful hand-written
// verifier on bare crypto.createHmac + timingSafeEqual (same input checks: one string of 40
// hex digits, constant-time compare). Both verify the same valid signature over the same
// Buffer body, in alternating rounds after a warm-up; the median round counts.
// Run: npm run build && node bench/webhooks-verify.mjs   (uses only the root node_modules)
import { createHmac, timingSafeEqual } from 'node:crypto';
import { verifySignature, verifySignatureAsync } from '../dist/webhooks/index.js';

const SECRET = 'whsec-bench-0123456789';
const ROUNDS = Number(process.env.ROUNDS ?? 15);
const TARGET = 1.15;

const HEX40 = /^[0-9a-fA-F]{40}$/;
function floorVerify(body, signature, secret) {
  if (typeof signature !== 'string' || !HEX40.test(signature)) return false;
  const expected = createHmac('sha1', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

/** A track message padded to `bytes` bytes of JSON. */
function makeBody(bytes) {
  const base = { version: 1, type: 'track', userId: 'user-42', timestamp: '2026-03-01T12:34:56.789Z', event: 'Order Completed', properties: { pad: '' } };
  const overhead = Buffer.byteLength(JSON.stringify(base));
  base.properties.pad = 'x'.repeat(bytes - overhead);
  return Buffer.from(JSON.stringify(base));
}

function timeRound(fn, body, signature, n) {
  let ok = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) if (fn(body, signature, SECRET)) ok++;
  const ns = Number(process.hrtime.bigint() - start);
  if (ok !== n) throw new Error(`${fn.name} rejected a valid signature`);
  return ns / n;
}

async function timeRoundAsync(fn, body, signature, n) {
  let ok = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) if (await fn(body, signature, SECRET)) ok++;
  const ns = Number(process.hrtime.bigint() - start);
  if (ok !== n) throw new Error(`${fn.name} rejected a valid signature`);
  return ns / n;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const rows = [];
for (const [label, size, n] of [['1 KB', 1024, 20_000], ['32 KB', 32 * 1024, 1_000]]) {
  const body = makeBody(size);
  const signature = createHmac('sha1', SECRET).update(body).digest('hex');
  // Warm-up: let both reach optimized code.
  timeRound(floorVerify, body, signature, n);
  timeRound(verifySignature, body, signature, n);
  const floor = [];
  const ours = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate who goes first so neither always runs on a warmer (or busier) core.
    if (round % 2 === 0) {
      floor.push(timeRound(floorVerify, body, signature, n));
      ours.push(timeRound(verifySignature, body, signature, n));
    } else {
      ours.push(timeRound(verifySignature, body, signature, n));
      floor.push(timeRound(floorVerify, body, signature, n));
    }
  }
  const asyncNs = [];
  for (let round = 0; round < 5; round++) asyncNs.push(await timeRoundAsync(verifySignatureAsync, body, signature, Math.ceil(n / 4)));
  rows.push({ label, floor: median(floor), ours: median(ours), asyncNs: median(asyncNs) });
}

const perSecond = (ns) => Math.round(1e9 / ns).toLocaleString('en-US');
console.log(`Node ${process.version}, ${ROUNDS} alternating rounds, median round; time ratio = eventrelay / floor (target <= ${TARGET})\n`);
console.log('| body | floor: createHmac + timingSafeEqual | eventrelay verifySignature | time ratio | verifySignatureAsync (Web Crypto, for reference) |');
console.log('|---|---|---|---|---|');
for (const r of rows) {
  const ratio = r.ours / r.floor;
  console.log(
    `| ${r.label} | ${perSecond(r.floor)}/s (${(r.floor / 1000).toFixed(2)} µs) | ${perSecond(r.ours)}/s (${(r.ours / 1000).toFixed(2)} µs) | ` +
      `${ratio.toFixed(3)} ${ratio <= TARGET ? '✓' : '✗'} | ${perSecond(r.asyncNs)}/s (${(r.asyncNs / 1000).toFixed(2)} µs) |`,
  );
}
