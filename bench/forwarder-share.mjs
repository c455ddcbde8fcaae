// How well forwarders on one PostgreSQL database share a backlog (issue 36): the time from the
// first request of a backlog until the receiver has every message, with one instance and with
// two, and their ratio (two over one; the goal is at most 0.65). The receiver answers after a
// delay, so one instance's `delivery.concurrency` bounds its throughput; the load balancer
// sends the batches to the instances in turn. Also prints each instance's share and the most
// requests the receiver had in flight at once (all instances together).
//
//   node bench/forwarder-share.mjs [messages=2000] [rounds=2] [delay ms=40] [concurrency=4]
//
// The forwarders run from source (packages/forwarder/test/fixtures/serve-in-child.ts with tsx),
// each in its own process. PostgreSQL at EVENTRELAY_BENCH_PG_URL (default the local server);
// a database of its own per run, dropped after.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const MESSAGES = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 2);
const DELAY = Number(process.argv[4] ?? 40);
const CONCURRENCY = Number(process.argv[5] ?? 4);
const BATCH = 50;
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN = process.env.EVENTRELAY_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function receiver() {
  const delivered = new Set();
  let inFlight = 0;
  let most = 0;
  let waiter;
  const server = createServer((req, res) => {
    inFlight++;
    most = Math.max(most, inFlight);
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      setTimeout(() => {
        inFlight--;
        delivered.add(JSON.parse(Buffer.concat(chunks).toString('utf8')).messageId);
        res.writeHead(200).end('ok');
        if (waiter !== undefined && delivered.size >= waiter.count) waiter.resolve();
      }, DELAY);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    most: () => most,
    all: (count) => new Promise((resolve) => (delivered.size >= count ? resolve() : (waiter = { count, resolve }))),
    close: () => (server.closeAllConnections(), server.close()),
  };
}

async function database() {
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  const name = `eventrelay_share_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const a = new pg.Client({ connectionString: ADMIN });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}

/** One forwarder process; resolves with its URL and a stop function once it listens. */
function serve(dbUrl, receiverUrl) {
  const config = {
    storage: { type: 'postgres', url: dbUrl, poolSize: 4 },
    delivery: { concurrency: CONCURRENCY },
    sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url: receiverUrl }] } } }],
  };
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=eventrelay-source', 'packages/forwarder/test/fixtures/serve-in-child.ts', JSON.stringify(config)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve({ url: m[1], stop: () => new Promise((done) => (child.once('exit', done), child.kill('SIGTERM'))) });
    });
    child.once('exit', (code) => reject(new Error(`forwarder exited with ${code}`)));
  });
}

async function send(urls, prefix) {
  const batches = MESSAGES / BATCH;
  let next = 0;
  const auth = `Basic ${Buffer.from('k:').toString('base64')}`;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < batches) {
        const b = next++;
        const batch = Array.from({ length: BATCH }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'Share', messageId: `${prefix}-${b}-${i}` }));
        const response = await fetch(`${urls[b % urls.length]}/v1/batch`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: auth }, body: JSON.stringify({ batch }) });
        if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
      }
    }),
  );
}

/** Seconds until `instances` forwarders deliver the backlog. */
async function run(instances, round) {
  const db = await database();
  const rcv = await receiver();
  const forwarders = [];
  try {
    for (let i = 0; i < instances; i++) forwarders.push(await serve(db.url, rcv.url));
    // Warm: a few messages through each, so that compiling the code is not timed.
    await send(forwarders.map((f) => f.url), `warm-${round}`).catch(() => {});
    await rcv.all(MESSAGES);
    const started = performance.now();
    await send(forwarders.map((f) => f.url), `run-${round}`);
    const acknowledged = performance.now();
    await rcv.all(2 * MESSAGES);
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `  ${instances} instance(s): ${seconds.toFixed(2)} s (acknowledged in ${((acknowledged - started) / 1000).toFixed(2)} s), most requests in flight ${rcv.most()}`,
    );
    return seconds;
  } finally {
    for (const f of forwarders) await f.stop();
    rcv.close();
    await db.drop();
  }
}

console.log(`${MESSAGES} messages, receiver answers in ${DELAY} ms, delivery.concurrency ${CONCURRENCY}`);
const ratios = [];
for (let round = 1; round <= ROUNDS; round++) {
  console.log(`round ${round}`);
  const one = await run(1, round);
  const two = await run(2, round);
  ratios.push(two / one);
  console.log(`  two / one: ${(two / one).toFixed(3)}`);
}
console.log(`ratio two / one, by round: ${ratios.map((r) => r.toFixed(3)).join(', ')}`);
