// Benchmark: eventrelay/webhooks verifySignature against a floor, a careful hand-written
// verifier on bare crypto.createHmac + timingSafeEqual (same input checks: one string of 40
// hex digits, constant-time compare). Both verify the same valid signature over the same
// Buffer body, in alternating rounds after a warm-up; the median round counts.
// A second table does the same for Standard Webhooks: verifyStandardWebhook against a floor on
// bare createHmac('sha256') + timingSafeEqual with the same checks (three headers, whole-second
// timestamp within 5 minutes, v1 signatures of 32 bytes), the key decoded once, as a careful
// hand-written verifier would; the `standardwebhooks` package is shown for reference.
// Run: npm run build && node bench/webhooks-verify.mjs   (uses only the root node_modules)
//      ROUNDS=31: rounds per body size (default 15); BENCH_WRITE_RESULTS=1: record in bench/results.json
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { commandLine, recordResult } from './results.mjs';
import { signStandardWebhook, verifySignature, verifySignatureAsync, verifyStandardWebhook, verifyStandardWebhookAsync } from '../packages/eventrelay/dist/webhooks/index.js';

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

// Standard Webhooks: the same bodies, a whsec_ secret as Standard Webhooks tools make them.
const WHSEC = `whsec_${Buffer.from('bench-key-0123456789abcdef012345').toString('base64')}`;
const KEY = Buffer.from(WHSEC.slice(6), 'base64');
const V1 = /^v1,[A-Za-z0-9+/]{43}=$/;
const SECONDS = /^[0-9]{1,12}$/;
function floorStandard(body, headers) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signature = headers['webhook-signature'];
  if (typeof id !== 'string' || id === '' || typeof timestamp !== 'string' || !SECONDS.test(timestamp) || typeof signature !== 'string') return false;
  if (Math.abs(Date.now() - Number(timestamp) * 1000) > 300_000) return false;
  const expected = createHmac('sha256', KEY).update(`${id}.${timestamp}.`).update(body).digest();
  for (const entry of signature.split(' ')) {
    if (V1.test(entry) && timingSafeEqual(expected, Buffer.from(entry.slice(3), 'base64'))) return true;
  }
  return false;
}
const oursStandard = (body, headers) => verifyStandardWebhook(body, headers, WHSEC);
const oursStandardAsync = (body, headers) => verifyStandardWebhookAsync(body, headers, WHSEC);
const packageVerifier = new Webhook(WHSEC);
const packageStandard = (body, headers) => {
  packageVerifier.verify(body, headers, { jsonParse: false });
  return true;
};

const standardRows = [];
for (const [label, size, n] of [['1 KB', 1024, 20_000], ['32 KB', 32 * 1024, 1_000]]) {
  const body = makeBody(size);
  const headers = signStandardWebhook(body, WHSEC, { id: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W' });
  timeRound(floorStandard, body, headers, n);
  timeRound(oursStandard, body, headers, n);
  const floor = [];
  const ours = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      floor.push(timeRound(floorStandard, body, headers, n));
      ours.push(timeRound(oursStandard, body, headers, n));
    } else {
      ours.push(timeRound(oursStandard, body, headers, n));
      floor.push(timeRound(floorStandard, body, headers, n));
    }
  }
  const asyncNs = [];
  for (let round = 0; round < 5; round++) asyncNs.push(await timeRoundAsync(oursStandardAsync, body, headers, Math.ceil(n / 4)));
  const packageNs = [];
  for (let round = 0; round < 5; round++) packageNs.push(timeRound(packageStandard, body, headers, Math.ceil(n / 4)));
  standardRows.push({ label, floor: median(floor), ours: median(ours), asyncNs: median(asyncNs), packageNs: median(packageNs) });
}

console.log(`\nStandard Webhooks; time ratio = eventrelay / floor (target <= ${TARGET})\n`);
console.log('| body | floor: createHmac(sha256) + timingSafeEqual | eventrelay verifyStandardWebhook | time ratio | verifyStandardWebhookAsync (Web Crypto) | standardwebhooks package |');
console.log('|---|---|---|---|---|---|');
for (const r of standardRows) {
  const ratio = r.ours / r.floor;
  console.log(
    `| ${r.label} | ${perSecond(r.floor)}/s (${(r.floor / 1000).toFixed(2)} µs) | ${perSecond(r.ours)}/s (${(r.ours / 1000).toFixed(2)} µs) | ` +
    `${ratio.toFixed(3)} ${ratio <= TARGET ? '✓' : '✗'} | ${perSecond(r.asyncNs)}/s (${(r.asyncNs / 1000).toFixed(2)} µs) | ` +
    `${perSecond(r.packageNs)}/s (${(r.packageNs / 1000).toFixed(2)} µs) |`,
  );
}

/** A row of bench/results.json, rounded as the tables show it. */
function resultRow(r, extra = {}) {
  const perSecond = (ns) => Math.round(1e9 / ns);
  const us = (ns) => Number((ns / 1000).toFixed(2));
  return {
    floorPerSec: perSecond(r.floor),
    floorUs: us(r.floor),
    eventrelayPerSec: perSecond(r.ours),
    eventrelayUs: us(r.ours),
    timeVsFloor: Number((r.ours / r.floor).toFixed(2)),
    asyncPerSec: perSecond(r.asyncNs),
    asyncUs: us(r.asyncNs),
    ...extra,
  };
}
const setup = { rounds: ROUNDS, bodyKB: [1, 32], target: TARGET };
const command = commandLine(['ROUNDS']);
recordResult('webhooks-verify', {
  script: 'bench/webhooks-verify.mjs',
  command,
  setup,
  rows: Object.fromEntries(rows.map((r) => [r.label, resultRow(r)])),
});
recordResult('webhooks-verify/standard', {
  script: 'bench/webhooks-verify.mjs',
  command,
  setup,
  rows: Object.fromEntries(
    standardRows.map((r) => [r.label, resultRow(r, { packagePerSec: Math.round(1e9 / r.packageNs), packageUs: Number((r.packageNs / 1000).toFixed(2)) })]),
  ),
});
