// Batched delivery (issue 45) against the unbatched path: `eventrelay serve` on one store, its
// source's one URL at a receiver that answers every request after 50 ms, the default delivery
// concurrency. A backlog of calls is sent as fast as the ingestion API takes it; measured: calls
// delivered a second (from the first call sent to the last one at the receiver) and the
// forwarder's CPU per delivered call (user + system from /proc; on PostgreSQL, plus the database
// connections' CPU). Modes run in turn, round after round, and the ratios are taken within a round.
//
//   node bench/batched.mjs [sqlite|postgres] [calls=3000] [rounds=3] [batch maxEvents=100]
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
const DELAY_MS = 50;
const here = dirname(fileURLToPath(import.meta.url));
const CLI = process.env.BENCH_CLI ?? join(here, '..', 'packages', 'forwarder', 'dist', 'cli.js');
const ADMIN = process.env.EVENTRELAY_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const MODES = [
  { id: 'single', name: 'one call per request (no batch)', batch: undefined },
  { id: 'batched', name: `batch: { maxEvents: ${MAX_EVENTS} }`, batch: { maxEvents: MAX_EVENTS } },
];

/** A receiver answering 200 after DELAY_MS; counts calls (an array body's elements). */
async function receiver() {
  let calls = 0;
  let requests = 0;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
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
  return { url: `http://127.0.0.1:${server.address().port}/hook`, calls: () => calls, requests: () => requests, close: () => (server.closeAllConnections(), server.close()) };
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
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
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

const auth = `Basic ${Buffer.from('k:').toString('base64')}`;
const call = (i) => ({ type: 'track', userId: `user-${i % 1000}`, event: 'Bench Event', messageId: `c-${i}`, properties: { index: i, plan: 'pro', amount: 19.99 }, timestamp: new Date().toISOString() });

/** Sends `CALLS` calls in requests of 100, 8 at a time. */
async function load(url) {
  let next = 0;
  const worker = async () => {
    while (next < CALLS) {
      const from = next;
      next += 100;
      const batch = Array.from({ length: Math.min(100, CALLS - from) }, (_, j) => call(from + j));
      const r = await fetch(`${url}/v1/batch`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify({ batch }) });
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`ingestion answered ${r.status}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

async function run(mode) {
  const dir = mkdtempSync(join(tmpdir(), 'batched-'));
  const rcv = await receiver();
  const db = STORE === 'postgres' ? await database() : undefined;
  const storage = STORE === 'sqlite' ? { type: 'sqlite' } : { type: 'postgres', url: { env: 'DATABASE_URL' }, poolSize: 10 };
  const webhook = { url: rcv.url, ...(mode.batch === undefined ? {} : { batch: mode.batch }) };
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ storage, sources: [{ name: 'bench', writeKey: 'k', destinations: { Webhooks: { sharedSecret: 's', webhooks: [webhook] } } }] }));
  const f = await serve(['serve', '--config', join(dir, 'config.json'), '--data', join(dir, 'data'), '--port', '0'], db ? { DATABASE_URL: db.url } : {});
  try {
    const cpu0 = cpuMs(f.pid) + (db ? await db.cpu() : 0);
    const t0 = performance.now();
    await load(f.url);
    while (rcv.calls() < CALLS) await new Promise((r) => setTimeout(r, 10));
    const seconds = (performance.now() - t0) / 1000;
    const cpu = cpuMs(f.pid) + (db ? await db.cpu() : 0) - cpu0;
    return { callsPerSecond: CALLS / seconds, cpuUsPerCall: (cpu * 1000) / CALLS, requests: rcv.requests() };
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
  const ratio = { speed: row.batched.callsPerSecond / row.single.callsPerSecond, cpu: row.batched.cpuUsPerCall / row.single.cpuUsPerCall };
  rounds.push({ row, ratio });
  console.log(
    `round ${round + 1}: ${MODES.map((m) => `${m.id} ${row[m.id].callsPerSecond.toFixed(0)} calls/s, ${row[m.id].cpuUsPerCall.toFixed(0)} µs CPU/call, ${row[m.id].requests} requests`).join('; ')}; batched/single: ${ratio.speed.toFixed(1)}× calls/s, ${ratio.cpu.toFixed(2)}× CPU/call`,
  );
}
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
  setup: `${CALLS} calls sent in requests of 100 (8 in flight) to one source whose one URL answers after ${DELAY_MS} ms; default delivery concurrency; ${STORE}; ${ROUNDS} rounds, medians`,
  rows,
  ratios,
});
