// Batched delivery (issue 45) against the unbatched path: `eventrelay serve` on one store, its
// source's one URL at a receiver that answers every request after 50 ms, the default delivery
// concurrency. A backlog is stored while the URL is disabled (the receiver answered a first call
// 410 Gone), then the URL is enabled again (admin API); measured over the drain: calls delivered a second (from switching
// on to the last call at the receiver) and the forwarder's CPU per delivered call (user + system
// from /proc; on PostgreSQL, plus the database connections' CPU). Ingestion is not measured: it is
// the same for both. Modes run in turn, round after round, and the ratios are taken within a round.
//
//   node bench/batched.mjs [sqlite|postgres] [calls=3000] [rounds=3] [batch maxEvents=100] [batched calls=30000]
//
// The batched mode is sent ten times the calls (its rate is ten times more and more): each mode
// runs for seconds, so that the last batch's wait (maxWaitMs) and the start weigh little.
//   BENCH_WRITE_RESULTS=1: the medians recorded in bench/results.json (`batched/<store>`).
//
// Needs `npm run build` first.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { cpuMs } from './proc-cpu.mjs';
import { commandLine, recordResult, rounded } from './results.mjs';

const STORE = process.argv[2] ?? 'sqlite';
const CALLS = Number(process.argv[3] ?? 3000);
const ROUNDS = Number(process.argv[4] ?? 3);
const MAX_EVENTS = Number(process.argv[5] ?? 100);
const BATCHED_CALLS = Number(process.argv[6] ?? 10 * CALLS);
const DELAY_MS = 50;
const here = dirname(fileURLToPath(import.meta.url));
const CLI = process.env.BENCH_CLI ?? join(here, '..', 'packages', 'forwarder', 'dist', 'cli.js');
const ADMIN = process.env.EVENTRELAY_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ALL_MODES = [
  { id: 'single', name: 'one call per request (no batch)', batch: undefined, calls: CALLS },
  { id: 'batched', name: `batch: { maxEvents: ${MAX_EVENTS} }`, batch: { maxEvents: MAX_EVENTS }, calls: BATCHED_CALLS },
];
// BENCH_MODES=batched runs one mode alone (to profile it); the ratios then need both.
const MODES = ALL_MODES.filter((m) => process.env.BENCH_MODES === undefined || process.env.BENCH_MODES.split(',').includes(m.id));

/** A receiver answering 200 after DELAY_MS (410 while `gone`); counts calls (an array body's elements). */
async function receiver() {
  let calls = 0;
  let requests = 0;
  let gone = true;
  let inFlight = 0;
  let inFlightSum = 0;
  let samples = 0;
  const sampler = setInterval(() => {
    if (!gone) {
      inFlightSum += inFlight;
      samples++;
    }
  }, 5);
  const server = createServer((req, res) => {
    inFlight++;
    res.on('finish', () => inFlight--);
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (gone) {
        res.writeHead(410).end();
        return;
      }
      setTimeout(() => {
        const body = Buffer.concat(chunks).toString('utf8');
        // Counted by the messageIds in it: cheaper than parsing, and the same for both shapes.
        calls += body.split('"messageId":"c-').length - 1;
        requests++;
        res.writeHead(200).end();
      }, DELAY_MS);
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    calls: () => calls,
    requests: () => requests,
    back: () => (gone = false),
    /** Requests at the receiver at once, on average while it answers 200. */
    meanInFlight: () => inFlightSum / Math.max(1, samples),
    close: () => (clearInterval(sampler), server.closeAllConnections(), server.close()),
  };
}

async function database() {
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  const name = `eventrelay_batched_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  const query = async (sql, values) => {
    const c = new pg.Client({ connectionString: ADMIN });
    await c.connect();
    try {
      return (await c.query(sql, values)).rows;
    } finally {
      await c.end();
    }
  };
  return {
    url: url.toString(),
    cpu: async () => (await query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name])).reduce((sum, r) => sum + cpuMs(r.pid), 0),
    drop: () => query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

function serve(args, env) {
  const child = spawn(process.execPath, [...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), CLI, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ url: m[1], pid: child.pid, stop: () => new Promise((d) => (child.once('exit', d), child.kill('SIGTERM'))) });
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
}

const call = (i) => ({ type: 'track', userId: `user-${i % 1000}`, event: 'Bench Event', messageId: `c-${i}`, properties: { index: i, plan: 'pro', amount: 19.99 }, timestamp: new Date().toISOString() });

/** Sends `count` calls in requests of 100, 8 at a time. */
async function load(url, writeKey, count) {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const from = next;
      next += 100;
      await send(url, writeKey, Array.from({ length: Math.min(100, count - from) }, (_, j) => call(from + j)));
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

async function send(url, writeKey, batch) {
  const auth = `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`;
  const r = await fetch(`${url}/v1/batch`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify({ batch }) });
  await r.arrayBuffer();
  if (r.status !== 200) throw new Error(`ingestion answered ${r.status}`);
}

const ADMIN_TOKEN = 'bench-admin-token';

async function admin(url, method, path, body) {
  const r = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return text === '' ? {} : JSON.parse(text);
}

async function run(mode) {
  const dir = mkdtempSync(join(tmpdir(), 'batched-'));
  const rcv = await receiver();
  const db = STORE === 'postgres' ? await database() : undefined;
  const storage = STORE === 'sqlite' ? { type: 'sqlite' } : { type: 'postgres', url: { env: 'DATABASE_URL' }, poolSize: 10 };
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ storage, adminToken: ADMIN_TOKEN }));
  const f = await serve(['serve', '--config', join(dir, 'config.json'), '--data', join(dir, 'data'), '--port', '0'], db ? { DATABASE_URL: db.url } : {});
  try {
    const { writeKey } = await admin(f.url, 'POST', '/admin/sources', { name: 'bench' });
    const webhook = { url: rcv.url, ...(mode.batch === undefined ? {} : { batch: mode.batch }) };
    await admin(f.url, 'PUT', '/admin/sources/bench/destinations/Webhooks', { sharedSecret: 'a-bench-shared-secret', webhooks: [webhook] });
    // A first call answered 410: the URL is disabled, and what comes next waits in the store.
    await send(f.url, writeKey, [{ ...call(0), messageId: 'probe' }]);
    const endpoints = '/admin/sources/bench/destinations/Webhooks/endpoints';
    while (!(await admin(f.url, 'GET', endpoints)).endpoints[0].disabled) await new Promise((r) => setTimeout(r, 20));
    await load(f.url, writeKey, mode.calls);
    rcv.back();
    const own0 = cpuMs(f.pid);
    const cpu0 = own0 + (db ? await db.cpu() : 0);
    const t0 = performance.now();
    await admin(f.url, 'POST', `${endpoints}/enable`, { url: rcv.url });
    for (let waited = 0; rcv.calls() < mode.calls; waited += 10) {
      if (process.env.BENCH_VERBOSE && waited % 2000 === 0) console.log(`  ${mode.id}: ${rcv.calls()} of ${mode.calls} delivered`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const seconds = (performance.now() - t0) / 1000;
    const own = cpuMs(f.pid) - own0;
    const cpu = own + own0 + (db ? await db.cpu() : 0) - cpu0;
    return {
      callsPerSecond: mode.calls / seconds,
      cpuUsPerCall: (cpu * 1000) / mode.calls,
      forwarderUsPerCall: (own * 1000) / mode.calls,
      requests: rcv.requests(),
      inFlight: rcv.meanInFlight(),
    };
  } finally {
    await f.stop();
    rcv.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (values) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)];
const rounds = [];
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? MODES : [...MODES].reverse();
  const row = {};
  for (const mode of order) row[mode.id] = await run(mode);
  const described = MODES.map((m) => {
    const r = row[m.id];
    return `${m.id} ${r.callsPerSecond.toFixed(0)} calls/s, ${r.cpuUsPerCall.toFixed(0)} µs CPU/call (forwarder ${r.forwarderUsPerCall.toFixed(0)}), ${r.requests} requests, ${r.inFlight.toFixed(1)} at once`;
  }).join('; ');
  if (MODES.length < ALL_MODES.length) {
    console.log(`round ${round + 1}: ${described}`);
    continue;
  }
  const ratio = { speed: row.batched.callsPerSecond / row.single.callsPerSecond, cpu: row.batched.cpuUsPerCall / row.single.cpuUsPerCall };
  rounds.push({ row, ratio });
  console.log(`round ${round + 1}: ${described}; batched/single: ${ratio.speed.toFixed(1)}× calls/s, ${ratio.cpu.toFixed(2)}× CPU/call`);
}
if (rounds.length === 0) process.exit(0);
const rows = {};
for (const mode of MODES) {
  rows[mode.name] = {
    callsPerSecond: rounded(median(rounds.map((r) => r.row[mode.id].callsPerSecond))),
    cpuUsPerCall: rounded(median(rounds.map((r) => r.row[mode.id].cpuUsPerCall))),
  };
}
const ratios = { 'calls/s, batched / single': rounded(median(rounds.map((r) => r.ratio.speed)), 1), 'CPU per call, batched / single': rounded(median(rounds.map((r) => r.ratio.cpu)), 2) };
console.log('medians', JSON.stringify({ rows, ratios }));
recordResult(`batched/${STORE}`, {
  script: 'bench/batched.mjs',
  command: commandLine(),
  setup: `a backlog of ${CALLS} calls (${BATCHED_CALLS} batched) stored with Webhooks off, then drained to one URL answering after ${DELAY_MS} ms; default delivery concurrency; ${STORE}; ${ROUNDS} rounds, medians`,
  rows,
  ratios,
  'calls/s, batched / single, per round': rounds.map((r) => rounded(r.ratio.speed, 1)),
});
