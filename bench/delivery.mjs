#!/usr/bin/env node
// Webhook delivery benchmark: `npm run build && node bench/delivery.mjs` at the package root.
// Plain Node ESM; imports the built package (../dist) and nothing outside the root node_modules.
//
// A receiver runs in a separate process (this file with --receiver) on 127.0.0.1: 5 HTTP
// servers that read each body and answer 200. Two senders push the same deliveries to it:
//
//   floor       a bare keep-alive http.request loop: W workers, each sending one
//               pre-serialized body to every URL at once and waiting for all answers; the
//               same headers as eventrelay's, with the signature computed once up front
//   undici      the same loop on undici's dispatcher (an Agent, a handler that only counts
//               the answer), the HTTP client eventrelay's webhook transport uses
//   eventrelay  WebhookDestination.deliver(message) from W workers (concurrency W), with a
//               shared secret: serialize, sign (HMAC-SHA1) and the outcome rules included
//
// Each case runs ROUNDS times, alternating floor and eventrelay; the table shows the median
// deliveries per second (one delivery = one message sent to every URL), the ratio, and the
// sender's CPU time per delivery, which other load on the machine disturbs less.
//
//   node bench/delivery.mjs [--count 20000] [--workers 32] [--rounds 5] [--max-seconds 30]
//
// --count is requests per run: 20,000 deliveries to 1 URL, 4,000 deliveries to 5 URLs.
// BENCH_WRITE_RESULTS=1 records the table in bench/results.json (`delivery`).
import { fork } from 'node:child_process';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Agent } from 'undici';
import { commandLine, recordResult } from './results.mjs';

if (process.argv.includes('--receiver')) {
  await receiver();
} else {
  await main();
}

async function receiver() {
  const ports = [];
  for (let i = 0; i < 5; i++) {
    const server = http.createServer((req, res) => {
      req.on('data', () => {});
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
        res.end('ok');
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    ports.push(server.address().port);
  }
  process.send({ ports });
  process.on('disconnect', () => process.exit(0));
}

async function main() {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', default: '20000' },
      workers: { type: 'string', default: '32' },
      rounds: { type: 'string', default: '5' },
      'max-seconds': { type: 'string', default: '30' },
    },
  });
  const count = Number(values.count);
  const workers = Number(values.workers);
  const rounds = Number(values.rounds);
  const maxMs = Number(values['max-seconds']) * 1000;

  const { WebhookDestination, toWebhookMessage } = await import('../packages/forwarder/dist/index.js');
  const SECRET = 'bench-shared-secret';

  const child = fork(new URL(import.meta.url), ['--receiver'], { stdio: 'inherit' });
  const { ports } = await new Promise((resolve) => child.once('message', resolve));
  const allUrls = ports.map((port, i) => `http://127.0.0.1:${port}/hook/${i}`);

  const message = toWebhookMessage({
    type: 'track',
    userId: 'user-1234567890',
    event: 'Order Completed',
    properties: { orderId: 'o-98765', revenue: 129.95, currency: 'EUR', products: [{ sku: 'A-1', qty: 2 }, { sku: 'B-7', qty: 1 }] },
    context: { ip: '203.0.113.7', library: { name: 'eventrelay', version: '0.1.0' } },
    timestamp: '2026-03-14T09:26:53.589Z',
    messageId: 'msg-0001',
  });
  const body = Buffer.from(WebhookDestination.serialize(message));

  /** W workers take deliveries from one counter until `total` or the time cap. */
  async function drive(total, deliverOnce) {
    let next = 0;
    let done = 0;
    let failed = 0;
    const cpu = process.cpuUsage();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: workers }, async () => {
        while (next < total && performance.now() - started < maxMs) {
          next++;
          if (!(await deliverOnce())) failed++;
          done++;
        }
      }),
    );
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    return { rate: (done / ms) * 1000, cpuUs: (used.user + used.system) / done, done, failed };
  }

  async function floorRun(urls) {
    const agent = new http.Agent({ keepAlive: true });
    // The very request eventrelay sends (same headers, signature computed once), so the
    // receiver's work is the same and the ratio shows the sender's cost alone.
    const headers = {
      'Content-Type': 'application/json',
      'User-Agent': 'EventRelay-Webhooks/1.0',
      'X-Source': 'bench',
      'Content-Length': String(body.length),
      'X-Signature': createHmac('sha1', SECRET).update(body).digest('hex'),
    };
    const post = (url) =>
      new Promise((resolve) => {
        const req = http.request(url, { method: 'POST', agent, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200));
        });
        req.on('error', () => resolve(false));
        req.end(body);
      });
    try {
      return await drive(count / urls.length, async () => (await Promise.all(urls.map(post))).some(Boolean));
    } finally {
      agent.destroy();
    }
  }

  async function undiciRun(urls) {
    const agent = new Agent();
    const headers = [
      'Content-Type', 'application/json',
      'User-Agent', 'EventRelay-Webhooks/1.0',
      'X-Source', 'bench',
      'X-Signature', createHmac('sha1', SECRET).update(body).digest('hex'),
    ];
    const targets = urls.map((url) => new URL(url));
    const post = (url) =>
      new Promise((resolve) => {
        let status = 0;
        agent.dispatch(
          { origin: url.origin, path: url.pathname, method: 'POST', headers, body },
          {
            onRequestStart: () => {},
            onResponseStart: (_c, code) => (status = code),
            onResponseData: () => {},
            onResponseEnd: () => resolve(status === 200),
            onResponseError: () => resolve(false),
          },
        );
      });
    try {
      return await drive(count / urls.length, async () => (await Promise.all(targets.map(post))).some(Boolean));
    } finally {
      await agent.destroy();
    }
  }

  async function eventrelayRun(urls) {
    const destination = new WebhookDestination({
      webhooks: urls.map((url) => ({ url, headers: { 'X-Source': 'bench' } })),
      sharedSecret: SECRET,
      concurrency: workers,
    });
    try {
      return await drive(count / urls.length, async () => (await destination.deliver(message)).status === 'delivered');
    } finally {
      await destination.close();
    }
  }

  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const rows = [];
  for (const n of [1, 5]) {
    const urls = allUrls.slice(0, n);
    await floorRun(urls); // warm-up of every path (JIT, sockets)
    await undiciRun(urls);
    await eventrelayRun(urls);
    const floor = [];
    const bare = [];
    const ours = [];
    let failures = 0;
    for (let r = 0; r < rounds; r++) {
      const f = await floorRun(urls);
      const u = await undiciRun(urls);
      const e = await eventrelayRun(urls);
      floor.push(f);
      bare.push(u);
      ours.push(e);
      failures += f.failed + u.failed + e.failed;
    }
    rows.push({
      n,
      floor: median(floor.map((x) => x.rate)),
      bare: median(bare.map((x) => x.rate)),
      ours: median(ours.map((x) => x.rate)),
      floorCpu: median(floor.map((x) => x.cpuUs)),
      bareCpu: median(bare.map((x) => x.cpuUs)),
      oursCpu: median(ours.map((x) => x.cpuUs)),
      failures,
    });
  }
  child.disconnect();

  const fmt = (x) => Math.round(x).toLocaleString('en-US');
  console.log(
    `Node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), load average ${os.loadavg()[0].toFixed(1)}; ` +
    `${count} requests per run, ${workers} deliveries in flight, median of ${rounds} alternating runs`,
  );
  console.log('');
  console.log(
    '| URLs | http.request floor (deliveries/s) | undici floor | eventrelay | ratio to the http.request floor (target 0.80) | ratio to the undici floor | ' +
    'CPU µs/delivery: http.request floor, undici floor, eventrelay |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    const ratio = row.ours / row.floor;
    console.log(
      `| ${row.n} | ${fmt(row.floor)} | ${fmt(row.bare)} | ${fmt(row.ours)} | ${ratio.toFixed(2)} ${ratio >= 0.8 ? 'met' : 'MISSED'} | ${(row.ours / row.bare).toFixed(2)} | ` +
      `${row.floorCpu.toFixed(1)}, ${row.bareCpu.toFixed(1)}, ${row.oursCpu.toFixed(1)} |`,
    );
  }
  console.log('\nCPU is the sender process only (user + system).');
  recordResult('delivery', {
    script: 'bench/delivery.mjs',
    command: commandLine(),
    setup: { requests: count, workers, rounds, target: 0.8 },
    rows: Object.fromEntries(
      rows.map((row) => [
        row.n === 1 ? '1 URL' : `${row.n} URLs`,
        {
          httpFloorPerSec: Math.round(row.floor),
          undiciFloorPerSec: Math.round(row.bare),
          eventrelayPerSec: Math.round(row.ours),
          vsHttpFloor: Number((row.ours / row.floor).toFixed(2)),
          vsUndiciFloor: Number((row.ours / row.bare).toFixed(2)),
          httpFloorCpuUs: Number(row.floorCpu.toFixed(1)),
          undiciFloorCpuUs: Number(row.bareCpu.toFixed(1)),
          eventrelayCpuUs: Number(row.oursCpu.toFixed(1)),
          failed: row.failures,
        },
      ]),
    ),
  });
  if (rows.some((row) => row.failures > 0)) console.log(`\nfailed deliveries: ${rows.map((r) => `${r.n} URL(s): ${r.failures}`).join(', ')}`);
}
