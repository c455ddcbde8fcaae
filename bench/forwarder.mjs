// Forwarder benchmark: messages per second through `eventrelay serve` (ingest over HTTP, store,
// deliver to one local receiver) and the latency from sending a message to its webhook arriving,
// with the SQLite queue (synchronous=full, then normal) and with the in-memory store, to show
// what durability costs, each with the delivery log on (the default) and off, to show what the
// log costs. The forwarder runs as its own process (the built CLI); the load
// generator and the receiver share this one. 127.0.0.1 only; bounded in count and time.
//
//   node bench/forwarder.mjs [messages=20000] [batch=20] [requestsInFlight=8] [paced msg/s=1000]
//   FORWARDER_BENCH_MODES=0,1,0,1 node bench/forwarder.mjs   (only those rows of `modes`, in that order)
//
// Two phases per store: (1) throughput: `messages` sent as fast as `requestsInFlight` batch
// requests allow, until the last webhook arrives; (2) latency at a steady rate the forwarder
// keeps up with: `paced` messages per second for 5 s, p50/p99 from sending to the webhook.
//
// Needs `npm run build` first; uses only the root node_modules.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(root, 'dist', 'cli.js');
const MESSAGES = Number(process.argv[2] ?? 20_000);
const BATCH = Number(process.argv[3] ?? 20);
const IN_FLIGHT = Number(process.argv[4] ?? 8);
const PACED_RATE = Number(process.argv[5] ?? 1000);
const PACED_SECONDS = 5;
const RUN_TIMEOUT = 120_000;
const WRITE_KEY = 'bench-write-key';

const modes = [
  { name: 'SQLite, synchronous=full (default)', storage: { type: 'sqlite', synchronous: 'full' } },
  { name: 'SQLite, synchronous=full, delivery log off', storage: { type: 'sqlite', synchronous: 'full', deliveryLog: false } },
  { name: 'SQLite, synchronous=normal', storage: { type: 'sqlite', synchronous: 'normal' } },
  { name: 'in memory (no durability)', storage: { type: 'memory' } },
  { name: 'in memory, delivery log off', storage: { type: 'memory', deliveryLog: false } },
];

/** CPU time (user + system) of a process so far, in ms, from /proc (Linux); NaN elsewhere. */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function startReceiver() {
  const arrivals = new Map(); // messageId -> time of arrival (performance.now)
  let onArrival = () => {};
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const id = JSON.parse(Buffer.concat(chunks).toString()).messageId;
      if (!arrivals.has(id)) arrivals.set(id, performance.now());
      res.writeHead(200).end();
      onArrival();
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    arrivals,
    waitFor: (count) =>
      new Promise((resolve) => {
        onArrival = () => arrivals.size >= count && resolve();
        onArrival();
      }),
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))),
  };
}

async function startForwarder(mode, receiverUrl, dir) {
  const configPath = join(dir, 'config.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      storage: mode.storage,
      delivery: { concurrency: 64 },
      sources: [{ name: 'bench', writeKey: WRITE_KEY, destinations: { Webhooks: { sharedSecret: 'bench-secret', webhooks: [{ url: receiverUrl }] } } }],
    }),
  );
  const child = spawn(process.execPath, [CLI, 'serve', '--config', configPath, '--data', join(dir, 'data'), '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const url = await new Promise((resolve, reject) => {
    child.stdout.on('data', (c) => {
      out += c;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`forwarder exited with ${code}`)));
  });
  return { url, pid: child.pid, stop: () => new Promise((resolve) => (child.once('exit', resolve), child.kill('SIGTERM'))) };
}

function makeBatch(prefix, from, count) {
  return Array.from({ length: count }, (_, j) => ({
    type: 'track',
    userId: `user-${(from + j) % 1000}`,
    event: 'Bench Event',
    messageId: `${prefix}-${from + j}`,
    properties: { index: from + j, plan: 'pro', amount: 19.99, tags: ['a', 'b'] },
    context: { library: { name: 'bench', version: '0' } },
    timestamp: new Date().toISOString(),
  }));
}

function latencies(receiver, sentAt) {
  const out = [];
  for (const [id, t] of sentAt) out.push(receiver.arrivals.get(id) - t);
  return out.sort((a, b) => a - b);
}

async function runMode(mode) {
  const dir = mkdtempSync(join(tmpdir(), 'eventrelay-bench-'));
  const receiver = await startReceiver();
  const forwarder = await startForwarder(mode, receiver.url, dir);
  const auth = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`;
  const send = async (batch) => {
    const response = await fetch(`${forwarder.url}/v1/batch`, {
      method: 'POST',
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ batch, sentAt: new Date().toISOString() }),
    });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`ingest answered ${response.status}`);
  };
  const timeout = setTimeout(() => {
    console.error(`timed out after ${RUN_TIMEOUT} ms in mode ${mode.name}`);
    process.exit(1);
  }, RUN_TIMEOUT);

  // Phase 1: throughput.
  const batches = [];
  for (let i = 0; i < MESSAGES; i += BATCH) batches.push(makeBatch('max', i, Math.min(BATCH, MESSAGES - i)));
  const sentAt = new Map();
  const cpuBefore = cpuMs(forwarder.pid);
  const start = performance.now();
  let next = 0;
  let ackedAt = 0;
  async function worker() {
    while (next < batches.length) {
      const batch = batches[next++];
      const t = performance.now();
      for (const m of batch) sentAt.set(m.messageId, t);
      await send(batch);
    }
    ackedAt = Math.max(ackedAt, performance.now());
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  await receiver.waitFor(MESSAGES);
  const end = performance.now();
  const cpu = cpuMs(forwarder.pid) - cpuBefore;
  const backlog = latencies(receiver, sentAt);

  // Phase 2: latency at a steady rate.
  const pacedSent = new Map();
  const perTick = Math.max(1, Math.round(PACED_RATE / 50));
  const ticks = Math.round((PACED_RATE * PACED_SECONDS) / perTick);
  const pending = [];
  const pacedStart = performance.now();
  for (let k = 0; k < ticks; k++) {
    const due = pacedStart + (k * 1000 * perTick) / PACED_RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const batch = makeBatch('paced', k * perTick, perTick);
    const t = performance.now();
    for (const m of batch) pacedSent.set(m.messageId, t);
    pending.push(send(batch));
  }
  await Promise.all(pending);
  await receiver.waitFor(MESSAGES + ticks * perTick);
  clearTimeout(timeout);
  const steady = latencies(receiver, pacedSent);

  await forwarder.stop();
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
  return {
    name: mode.name,
    endToEnd: MESSAGES / ((end - start) / 1000),
    cpuPerMessage: cpu === undefined || Number.isNaN(cpu) ? undefined : (cpu * 1000) / MESSAGES,
    ingest: MESSAGES / ((ackedAt - start) / 1000),
    backlogP50: percentile(backlog, 50),
    p50: percentile(steady, 50),
    p99: percentile(steady, 99),
  };
}

console.error(`forwarder benchmark: ${MESSAGES} track messages, batches of ${BATCH}, ${IN_FLIGHT} requests in flight, Node ${process.version}`);
const results = [];
// FORWARDER_BENCH_MODES=0,1 runs only those rows of `modes` (e.g. the log on/off pair, repeated).
const picked = process.env.FORWARDER_BENCH_MODES ? process.env.FORWARDER_BENCH_MODES.split(',').map((i) => modes[Number(i)]) : modes;
for (const mode of picked) {
  console.error(`  ${mode.name}...`);
  results.push(await runMode(mode));
}
const fmt = (n) => Math.round(n).toLocaleString('en-US');
const ms = (n) => `${n.toFixed(1)} ms`;
console.log(
  `\n| store | messages/s end to end | messages/s acknowledged | p50 send → webhook at ${fmt(PACED_RATE)} msg/s | p99 at ${fmt(PACED_RATE)} msg/s | forwarder CPU µs/message |`,
);
console.log(`|---|---:|---:|---:|---:|---:|`);
for (const r of results) {
  const cpu = r.cpuPerMessage === undefined ? '-' : fmt(r.cpuPerMessage);
  console.log(`| ${r.name} | ${fmt(r.endToEnd)} | ${fmt(r.ingest)} | ${ms(r.p50)} | ${ms(r.p99)} | ${cpu} |`);
}
console.log(
  `\nThroughput: ${MESSAGES} track messages in batches of ${BATCH}, ${IN_FLIGHT} batch requests in flight, until the last webhook arrived ` +
    `("acknowledged": until the last 200 from the ingestion API). Latency: ${fmt(PACED_RATE)} msg/s for ${PACED_SECONDS} s in batches of ${perTickShown()}, ` +
    `from sending the batch to the webhook's arrival. One receiver answering 200 at once, signing on, forwarder in its own process; Node ${process.version}, 127.0.0.1.`,
);
function perTickShown() {
  return Math.max(1, Math.round(PACED_RATE / 50));
}
