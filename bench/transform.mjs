#!/usr/bin/env node
// What a transform costs per call: `node --import tsx --conditions=eventrelay-source bench/transform.mjs`
// at the repository root (the sandbox is not yet exported by the built package, so this loads its
// source through tsx). Records nothing: a diagnostic of the sandbox alone; the whole path's cost is
// measured by forwarder-ab.mjs with `<cli>:transform` (docs/benchmarks.md).
//
// One webhook message (a track call with properties and context, about 600 bytes of JSON) goes
// through, per call:
//
//   floor       JSON.stringify(message): what delivery does for a URL without a transform
//   rename      transform.run(message): the sandbox's call of a transform that renames three
//               fields and passes the rest, including JSON.stringify on the host (the message
//               goes in as JSON text), the call into QuickJS, its JSON.parse, the transform, the
//               strict serialization, and the body read back
//   renameJson  transform.runJson(text): the same given the message's JSON text, as delivery has it
//   identity    transform.runJson(text) of `return message`: the fixed cost of a call
//
// Each case runs ROUNDS times, alternating; the table shows the median CPU (user + system) per
// call in µs and the wall time per call, and the extra CPU per call of each against the floor.
// It also shows what a transform costs once: its compile (a WebAssembly instance, the frozen
// intrinsics, the code), and the longest a looping transform held the event loop at its limit.
//
//   node --import tsx --conditions=eventrelay-source bench/transform.mjs [--calls 20000] [--rounds 5]
import { parseArgs } from 'node:util';
import { compileTransform } from '../packages/forwarder/src/transform/sandbox.ts';

const { values: args } = parseArgs({ options: { calls: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '5' } } });
const CALLS = Number(args.calls);
const ROUNDS = Number(args.rounds);

const message = {
  type: 'track',
  event: 'Order Completed',
  userId: 'u-1234567',
  anonymousId: '2f6f3c1e-9a51-4cbb-9d1b-4d1c0a7d6e21',
  messageId: 'api-2NqGJ4f1o8Jx0cVbqkKpL9x2yZb',
  timestamp: '2026-11-28T19:00:00.000Z',
  receivedAt: '2026-11-28T19:00:00.120Z',
  sentAt: '2026-11-28T19:00:00.050Z',
  properties: { orderId: 'o-98765', total: 142.5, currency: 'EUR', coupon: 'WINTER', items: [{ sku: 'A-1', qty: 1, price: 100 }, { sku: 'B-2', qty: 3, price: 14.17 }] },
  context: { ip: '203.0.113.5', locale: 'de-DE', library: { name: 'eventrelay', version: '0.2.0' }, userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36' },
  integrations: {},
};
const json = JSON.stringify(message);

const RENAME = `function transform(message) {
  const { event, userId, timestamp, ...rest } = message;
  return { ...rest, name: event, user: userId, at: timestamp };
}`;

let started = process.hrtime.bigint();
const rename = await compileTransform(RENAME);
const compileMs = Number(process.hrtime.bigint() - started) / 1e6;
const identity = await compileTransform('function transform(message) { return message; }');

let sink = 0;
const cases = {
  floor: async () => {
    for (let i = 0; i < CALLS; i++) sink += JSON.stringify(message).length;
  },
  rename: async () => {
    for (let i = 0; i < CALLS; i++) {
      const result = await rename.run(message);
      if (!result.ok || result.skip) throw new Error(`rename failed: ${result.ok ? 'skip' : result.reason}`);
      sink += result.body.length;
    }
  },
  renameJson: async () => {
    for (let i = 0; i < CALLS; i++) {
      const result = await rename.runJson(json);
      if (!result.ok || result.skip) throw new Error('rename failed');
      sink += result.body.length;
    }
  },
  identity: async () => {
    for (let i = 0; i < CALLS; i++) {
      const result = await identity.runJson(json);
      if (!result.ok || result.skip) throw new Error('identity failed');
      sink += result.body.length;
    }
  },
};

const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, { cpu: [], wall: [] }]));
for (const run of Object.values(cases)) await run(); // warm-up
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(cases)) {
    const cpu = process.cpuUsage();
    const wall = process.hrtime.bigint();
    await run();
    const used = process.cpuUsage(cpu);
    samples[name].cpu.push((used.user + used.system) / CALLS);
    samples[name].wall.push(Number(process.hrtime.bigint() - wall) / 1e3 / CALLS);
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const floor = median(samples.floor.cpu);
console.log(`${CALLS} calls x ${ROUNDS} rounds, message of ${Buffer.byteLength(json)} bytes; Node ${process.version}`);
console.log('| case | CPU µs/call | wall µs/call | extra CPU µs/call over the floor |');
console.log('|---|---:|---:|---:|');
for (const name of Object.keys(cases)) {
  const cpu = median(samples[name].cpu);
  console.log(`| ${name} | ${cpu.toFixed(1)} | ${median(samples[name].wall).toFixed(1)} | ${name === 'floor' ? '' : (cpu - floor).toFixed(1)} |`);
}

// Once per transform: its compile; and how long a looping call holds the event loop at 100 ms.
const loop = await compileTransform('function transform(message) { for (;;) {} }', { timeoutMs: 100 });
const held = [];
for (let i = 0; i < 5; i++) {
  started = process.hrtime.bigint();
  const result = await loop.run(message);
  held.push(Number(process.hrtime.bigint() - started) / 1e6);
  if (result.ok) throw new Error('the loop ended by itself');
}
console.log(`compile (first, with the WebAssembly module): ${compileMs.toFixed(1)} ms`);
started = process.hrtime.bigint();
for (let i = 0; i < 5; i++) (await compileTransform(RENAME)).dispose();
console.log(`compile (each after): ${(Number(process.hrtime.bigint() - started) / 1e6 / 5).toFixed(1)} ms`);
console.log(`a looping transform at timeoutMs 100 held the event loop: ${held.map((ms) => ms.toFixed(0)).join(', ')} ms`);
rename.dispose();
identity.dispose();
loop.dispose();
if (sink === 0) console.log('');
