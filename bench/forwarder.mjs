// Forwarder benchmark: messages per second through `eventrelay serve` (ingest over HTTP, store,
// deliver to one local receiver), the CPU each message costs the forwarder and its database, and
// the latency from sending a message to its webhook arriving. Stores: SQLite (synchronous=full,
// then normal), memory, PostgreSQL with one and with two forwarder processes on one database;
// and what a Node team would build instead: Express + BullMQ on Redis with appendfsync always
// (bench/forwarder-bullmq.mjs, queueing a batch with addBulk or with one queue.add per message);
// and the floor, the least a correct durable forwarder does, written by hand on SQLite and on
// PostgreSQL (bench/forwarder-floor.mjs). Forwarders run as their own processes; the load
// generator and the receiver share this one. 127.0.0.1 only; bounded in count and time.
//
//   node bench/forwarder.mjs [messages=20000] [batch=20] [requestsInFlight=8] [paced msg/s=1000]
//   BENCH_MODES=sqlite-full,pg-1 node bench/forwarder.mjs     (a subset; names below)
//   BENCH_PROFILE=/tmp/prof node bench/forwarder.mjs             (CPU profiles of the forwarders)
//   BENCH_NODE_ARGS="--log-code --logfile-per-isolate" node bench/forwarder.mjs   (flags for the forwarder processes)
//   BENCH_ROUNDS=3 node bench/forwarder.mjs                      (every mode 3 times, alternating; medians)
//   BENCH_WARMUP=5000 node bench/forwarder.mjs                   (messages sent and delivered first, not measured; PostgreSQL then vacuumed)
//   BENCH_CLI=<a build's dist/cli.js> node bench/forwarder.mjs    (that build instead of packages/forwarder/dist)
//   BENCH_BASE_CLI=<another build's dist/cli.js>                 (also runs each eventrelay mode on it, as <mode>-base)
//   BENCH_JSON=<file>                                            (every round's figures, as JSON)
//   BENCH_WRITE_RESULTS=1                                        (the medians and ratios recorded in bench/results.json, `forwarder`;
//                                                                 BENCH_RESULTS_KEY=forwarder/warmup-5000 records another entry)
//
// A shared 2-core machine's speed drifts by a third from one minute to the next, so compare modes
// with BENCH_ROUNDS: the modes run in turn, round after round, and each ratio is taken within a
// round (the same minutes), then the median of the rounds is shown.
//
// The "slow receiver" modes answer each webhook after 50 ms: an instance's attempts in flight
// (delivery.concurrency, 64) are then its limit, not the CPU, which is when a second instance helps.
//
// Two phases per mode: (1) throughput: `messages` sent as fast as `requestsInFlight` batch requests
// allow, until the last webhook arrives, with the CPU time (user + system, from /proc) of the
// forwarder processes and of the database server over that phase; (2) latency at a steady rate the
// forwarder keeps up with: `paced` messages per second for 5 s, p50/p99 from sending to the webhook.
//
// PostgreSQL: EVENTRELAY_BENCH_PG_URL (a database to CREATE/DROP DATABASE from), default
// postgres://postgres@127.0.0.1:5432/postgres; when the server runs here, its CPU is read from the
// processes serving the benchmark's database (pg_stat_activity) and its WAL writer, checkpointer
// and background writer. Redis at 127.0.0.1:6379: `appendonly yes` and `appendfsync
// always` are set for the BullMQ run and restored after it.
//
// Needs `npm run build` first and `npm --prefix bench ci` (bullmq, express).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { cpuMs } from './proc-cpu.mjs';
import { commandLine, recordResult } from './results.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const CLI = process.env.BENCH_CLI ?? join(root, 'packages', 'forwarder', 'dist', 'cli.js');
const MESSAGES = Number(process.argv[2] ?? 20_000);
const BATCH = Number(process.argv[3] ?? 20);
const IN_FLIGHT = Number(process.argv[4] ?? 8);
const PACED_RATE = Number(process.argv[5] ?? 1000);
const PACED_SECONDS = 5;
/** Messages sent and delivered before the measured phases (BENCH_WARMUP; 0 for none). */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 0);
const RUN_TIMEOUT = 180_000;
const WRITE_KEY = 'bench-write-key';
const SECRET = 'bench-secret';
const PG_ADMIN_URL = process.env.EVENTRELAY_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const allModes = [
  { id: 'sqlite-full', name: 'SQLite, synchronous=full (default)', storage: { type: 'sqlite', synchronous: 'full' } },
  { id: 'sqlite-normal', name: 'SQLite, synchronous=normal', storage: { type: 'sqlite', synchronous: 'normal' } },
  { id: 'memory', name: 'in memory (no durability)', storage: { type: 'memory' } },
  // The delivery log's cost: the same stores with the log off (storage.deliveryLog: false).
  { id: 'sqlite-full-nolog', name: 'SQLite, synchronous=full, delivery log off', storage: { type: 'sqlite', synchronous: 'full', deliveryLog: false } },
  { id: 'memory-nolog', name: 'in memory, delivery log off', storage: { type: 'memory', deliveryLog: false } },
  { id: 'pg-1', name: 'PostgreSQL, 1 instance', storage: { type: 'postgres' }, instances: 1 },
  { id: 'pg-2', name: 'PostgreSQL, 2 instances', storage: { type: 'postgres' }, instances: 2 },
  { id: 'pg-1-nolog', name: 'PostgreSQL, 1 instance, no delivery log', storage: { type: 'postgres', deliveryLog: false }, instances: 1 },
  { id: 'pg-1-slow', name: 'PostgreSQL, 1 instance, receiver answering in 50 ms', storage: { type: 'postgres' }, instances: 1, receiverDelay: 50 },
  { id: 'pg-2-slow', name: 'PostgreSQL, 2 instances, receiver answering in 50 ms', storage: { type: 'postgres' }, instances: 2, receiverDelay: 50 },
  { id: 'bullmq', name: 'Express + BullMQ (addBulk per batch), Redis appendfsync always', bullmq: 'bulk' },
  { id: 'bullmq-add', name: 'Express + BullMQ (queue.add per message), Redis appendfsync always', bullmq: 'add' },
  // The floor: a hand-written durable forwarder (bench/forwarder-floor.mjs), on each database.
  { id: 'floor-sqlite', name: 'floor (hand-written), SQLite synchronous=full', floor: 'sqlite' },
  { id: 'floor-pg', name: 'floor (hand-written), PostgreSQL', floor: 'postgres', storage: { type: 'postgres' } },
  // The floor with the least delivery log (a line per call, a row per attempt, written every 50 ms): what such a log costs.
  { id: 'floor-sqlite-log', name: 'floor (hand-written) with the least delivery log, SQLite synchronous=full', floor: 'sqlite', floorLog: true },
  { id: 'floor-pg-log', name: 'floor (hand-written) with the least delivery log, PostgreSQL', floor: 'postgres', floorLog: true, storage: { type: 'postgres' } },
  // And with every messageId kept for the retention window, as eventrelay promises (a batch sent
  // again a day later is known): the floor of those two guarantees.
  { id: 'floor-sqlite-kept', name: 'floor (hand-written) with the least delivery log and messageIds kept, SQLite synchronous=full', floor: 'sqlite', floorLog: true, floorKept: true },
  // And every other promise of eventrelay's that costs a message something on the way: delivered
  // bodies erased from the data directory (secure_delete, the WAL truncated within a second) and
  // the specification's message checks (2.4). The least forwarder that keeps what eventrelay keeps.
  {
    id: 'floor-sqlite-same',
    name: 'floor (hand-written) with eventrelay\'s promises: the least delivery log, messageIds kept, delivered bodies erased from disk, spec 2.4 checks, SQLite synchronous=full',
    floor: 'sqlite',
    floorLog: true,
    floorKept: true,
    floorErase: true,
    floorValid: true,
  },
  {
    id: 'floor-pg-kept',
    name: 'floor (hand-written) with the least delivery log and messageIds kept, PostgreSQL',
    floor: 'postgres',
    floorLog: true,
    floorKept: true,
    storage: { type: 'postgres' },
  },
  // And what several instances on one database need, as eventrelay promises them: messageIds per
  // source, rows leased to the instance that took them and taken over when it dies, counters every
  // instance reads; with the message checks. The least PostgreSQL forwarder that keeps what eventrelay keeps.
  {
    id: 'floor-pg-same',
    name: 'floor (hand-written) with eventrelay\'s promises: the least delivery log, messageIds kept per source, leases and takeover, shared counters, spec 2.4 checks, PostgreSQL',
    floor: 'postgres',
    floorLog: true,
    floorKept: true,
    floorValid: true,
    floorShared: true,
    storage: { type: 'postgres' },
  },
];
// BENCH_BASE_CLI=<another build's dist/cli.js>: every eventrelay mode also runs on that build, as <mode>-base right
// after it in each round, to compare a change with the code before it in the same minutes.
const wanted = process.env.BENCH_MODES?.split(',');
let modes = wanted === undefined ? allModes : wanted.map((id) => allModes.find((m) => m.id === id)).filter((m) => m !== undefined);
if (process.env.BENCH_BASE_CLI) {
  modes = modes.flatMap((m) => (m.storage === undefined || m.floor ? [m] : [m, { ...m, id: `${m.id}-base`, name: `${m.name} (base build)`, cli: process.env.BENCH_BASE_CLI }]));
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function pidsOf(user) {
  try {
    return execFileSync('ps', ['-u', user, '-o', 'pid=']).toString().split('\n').map((s) => Number(s.trim())).filter((n) => n > 0);
  } catch {
    return [];
  }
}

/** CPU of a changing set of processes (database backends come and go): sum of their growth. */
async function cpuMeter(listPids) {
  const start = new Map((await listPids()).map((pid) => [pid, cpuMs(pid)]));
  return async () => (await listPids()).reduce((sum, pid) => sum + cpuMs(pid) - (start.get(pid) ?? 0), 0);
}

/**
 * The PostgreSQL processes that work for one database: its connections, and the server's WAL
 * writer, checkpointer and background writer (they write its commits). Other databases' sessions
 * on a shared server are left out.
 */
function postgresPids(adminUrl, database) {
  const local = pidsOf('postgres');
  return async () => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    const { rows } = await client.query(
      `SELECT pid FROM pg_stat_activity WHERE (datname = $1 AND pid <> pg_backend_pid())
         OR backend_type IN ('walwriter', 'checkpointer', 'background writer')`,
      [database],
    );
    await client.end();
    return rows.map((r) => r.pid).filter((pid) => local.length === 0 || pidsOf('postgres').includes(pid));
  };
}

function redis(...args) {
  return execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', '6379', ...args]).toString().trim();
}

async function startReceiver(delay = 0) {
  const arrivals = new Map(); // messageId -> time of arrival (performance.now)
  let onArrival = () => {};
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const id = JSON.parse(Buffer.concat(chunks).toString()).messageId;
      if (!arrivals.has(id)) arrivals.set(id, performance.now());
      const answer = () => {
        res.writeHead(200).end();
        onArrival();
      };
      if (delay > 0) setTimeout(answer, delay);
      else answer();
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

function spawnListening(args, env = {}) {
  // BENCH_PROFILE=<dir>: each forwarder writes a V8 CPU profile there (bench/client/profile-summary.mjs reads it).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  // BENCH_NODE_ARGS: Node or V8 flags for the forwarder processes (those NODE_OPTIONS refuses, such as --log-code).
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const child = spawn(process.execPath, [...nodeArgs, ...profile, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (c) => {
      out += c;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve({ url: match[1], pid: child.pid, stop: () => new Promise((done) => (child.once('exit', done), child.kill('SIGTERM'))) });
    });
    child.once('exit', (code) => reject(new Error(`process exited with ${code}`)));
  });
}

async function startForwarders(mode, receiverUrl, dir, databaseUrl) {
  if (mode.bullmq) {
    const queue = `eventrelay-bench-${process.pid}`;
    return [await spawnListening([join(here, 'forwarder-bullmq.mjs'), receiverUrl, WRITE_KEY, SECRET, queue, '64', mode.bullmq])];
  }
  if (mode.floor) {
    const store = mode.floor === 'sqlite' ? `sqlite:${join(dir, 'floor.db')}` : `postgres:${databaseUrl}`;
    const features = Object.entries({ log: mode.floorLog, kept: mode.floorKept, erase: mode.floorErase, valid: mode.floorValid, shared: mode.floorShared })
      .filter(([, on]) => on === true)
      .map(([name]) => name)
      .join(',');
    return [await spawnListening([join(here, 'forwarder-floor.mjs'), receiverUrl, WRITE_KEY, SECRET, store, '64', ...(features === '' ? [] : [features])])];
  }
  const configPath = join(dir, 'config.json');
  const storage = mode.storage.type === 'postgres' ? { ...mode.storage, url: { env: 'DATABASE_URL' }, poolSize: 10 } : mode.storage;
  writeFileSync(
    configPath,
    JSON.stringify({
      storage,
      delivery: { concurrency: 64 },
      sources: [{ name: 'bench', writeKey: WRITE_KEY, destinations: { Webhooks: { sharedSecret: SECRET, webhooks: [{ url: receiverUrl }] } } }],
    }),
  );
  const args = [mode.cli ?? CLI, 'serve', '--config', configPath, '--data', join(dir, 'data'), '--port', '0'];
  const env = databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl };
  const out = [];
  // One after the other: the first one migrates the schema.
  for (let i = 0; i < (mode.instances ?? 1); i++) out.push(await spawnListening(args, env));
  return out;
}

/** A database of its own for a PostgreSQL mode; dropped after it. */
async function createDatabase() {
  const name = `eventrelay_bench_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/**
 * Transactions and row writes per message in the store's tables over the whole mode (both phases),
 * to stderr, with how many updates were HOT (in place, no index entries). The statistics arrive
 * within a second.
 */
async function tableWrites(databaseUrl, messages) {
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client.query(
    "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, seq_scan, seq_tup_read FROM pg_stat_user_tables WHERE relname IN ('deliveries', 'messages', 'counters', 'log_messages', 'log_attempts') ORDER BY relname",
  );
  const xact = await client.query('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()');
  // Every message was delivered: a line still open would be a log that lost an attempt.
  const open = await client.query("SELECT count(*)::int AS n FROM log_messages WHERE state IN ('pending', 'retrying')").catch(() => ({ rows: [{ n: 0 }] }));
  await client.end();
  console.error(`    delivery log lines not finished after every message was delivered: ${open.rows[0].n}`);
  const per = (n) => (Number(n) / messages).toFixed(2);
  console.error(`    transactions (statements of the store) per message: ${per(xact.rows[0].xact_commit)}`);
  for (const r of rows) {
    console.error(`    ${r.relname}: per message ${per(r.n_tup_ins)} inserts, ${per(r.n_tup_upd)} updates (${per(r.n_tup_hot_upd)} HOT), ${per(r.n_tup_del)} deletes; ${r.seq_scan} sequential scans reading ${per(r.seq_tup_read)} rows per message`);
  }
}

/** Redis durable like the forwarder's stores for the run: every write fsynced before it answers. */
async function durableRedis() {
  const before = { appendonly: redis('config', 'get', 'appendonly').split('\n')[1], appendfsync: redis('config', 'get', 'appendfsync').split('\n')[1] };
  redis('config', 'set', 'appendonly', 'yes');
  redis('config', 'set', 'appendfsync', 'always');
  // Turning AOF on rewrites it in the background: wait, so that the rewrite is not measured.
  for (;;) {
    const info = redis('info', 'persistence');
    if (/aof_rewrite_in_progress:0/.test(info) && /aof_rewrite_scheduled:0/.test(info)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return () => {
    redis('config', 'set', 'appendfsync', before.appendfsync);
    redis('config', 'set', 'appendonly', before.appendonly);
  };
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
  const cleanups = [() => rmSync(dir, { recursive: true, force: true })];
  try {
    let databaseUrl;
    let dbPids = async () => [];
    if (mode.storage?.type === 'postgres') {
      const db = await createDatabase();
      cleanups.unshift(db.drop);
      databaseUrl = db.url;
      // The server's CPU can be read only when it runs on this machine.
      if (['127.0.0.1', 'localhost'].includes(new URL(PG_ADMIN_URL).hostname) && pidsOf('postgres').length > 0) dbPids = postgresPids(PG_ADMIN_URL, db.name);
    }
    if (mode.bullmq) {
      cleanups.unshift(await durableRedis());
      const pid = Number(/process_id:(\d+)/.exec(redis('info', 'server'))[1]);
      dbPids = async () => [pid];
    }
    const receiver = await startReceiver(mode.receiverDelay);
    cleanups.unshift(receiver.close);
    const forwarders = await startForwarders(mode, receiver.url, dir, databaseUrl);
    // For profilers (perf record -a) that pick the processes of one mode out of the machine's.
    console.error(`    pids: forwarders ${forwarders.map((f) => f.pid).join(' ')}${databaseUrl === undefined ? '' : `, database ${new URL(databaseUrl).pathname.slice(1)}`}`);
    cleanups.unshift(() => Promise.all(forwarders.map((f) => f.stop())));
    const auth = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`;
    let turn = 0;
    const send = async (batch) => {
      // A load balancer's round robin over the instances.
      const target = forwarders[turn++ % forwarders.length];
      const response = await fetch(`${target.url}/v1/batch`, {
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

    /** Sends `count` messages as fast as IN_FLIGHT requests allow; resolves when all are acknowledged, with that time. */
    async function blast(prefix, count, sentAt) {
      const batches = [];
      for (let i = 0; i < count; i += BATCH) batches.push(makeBatch(prefix, i, Math.min(BATCH, count - i)));
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
      return ackedAt;
    }

    // Phase 0: warm-up, not measured (a service runs for days: its JIT compilation, connections
    // and caches are in place before the figures that matter).
    if (WARMUP > 0) {
      await blast('warm', WARMUP, new Map());
      await receiver.waitFor(WARMUP);
    }

    // The warm-up's dead rows (delivered rows deleted, lines updated) are vacuumed now, as
    // autovacuum would within its next minute: whether its worker would otherwise run inside the
    // measured seconds, on the CPU the forwarder needs, is chance, and made rounds differ by 2x.
    if (databaseUrl !== undefined && WARMUP > 0) {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query('VACUUM (ANALYZE)').catch((error) => console.error(`    VACUUM after the warm-up failed: ${error.message}`));
      await client.end();
    }
    // A checkpoint now writes out what earlier modes left in the server's buffers, and the next
    // one is due minutes later (checkpoint_timeout): no mode's phase pays for another's pages.
    if (databaseUrl !== undefined) {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      await client.query('CHECKPOINT').catch((error) => console.error(`    CHECKPOINT before the phase failed: ${error.message}`));
      await client.end();
    }

    // Phase 1: throughput, and CPU per message.
    const sentAt = new Map();
    const forwarderCpu = await cpuMeter(async () => forwarders.map((f) => f.pid));
    const dbCpu = await cpuMeter(dbPids);
    const ownCpu = process.cpuUsage();
    const startClock = process.hrtime.bigint();
    const start = performance.now();
    const ackedAt = await blast('max', MESSAGES, sentAt);
    await receiver.waitFor(WARMUP + MESSAGES);
    const end = performance.now();
    // CLOCK_MONOTONIC, as `perf record -k mono` stamps its samples: `perf script --time` takes this range.
    const seconds = (ns) => (Number(ns / 1000n) / 1e6).toFixed(6);
    // Writes a forwarder makes after the last webhook (its delivery log's last flush, 50 ms
    // later; the floor's likewise) belong to the phase: CPU is read 250 ms on.
    await new Promise((resolve) => setTimeout(resolve, 250));
    console.error(`    throughput phase (monotonic clock, s): ${seconds(startClock)},${seconds(process.hrtime.bigint())}`);
    const cpuForwarder = await forwarderCpu();
    const cpuDb = await dbCpu();
    const own = process.cpuUsage(ownCpu);
    console.error(`    this process (load generator and receiver): ${Math.round((own.user + own.system) / MESSAGES)} µs of CPU per message`);
    const backlog = latencies(receiver, sentAt);

    // Phase 2: latency at a steady rate.
    const pacedSent = new Map();
    const perTick = Math.max(1, Math.round(PACED_RATE / 50));
    const ticks = Math.round((PACED_RATE * PACED_SECONDS) / perTick);
    const pending = [];
    const pacedForwarderCpu = await cpuMeter(async () => forwarders.map((f) => f.pid));
    const pacedDbCpu = await cpuMeter(dbPids);
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
    await receiver.waitFor(WARMUP + MESSAGES + ticks * perTick);
    const pacedCpu = { forwarder: (await pacedForwarderCpu()) * 1000 / (ticks * perTick), db: (await pacedDbCpu()) * 1000 / (ticks * perTick) };
    console.error(`    at ${PACED_RATE} msg/s: ${Math.round(pacedCpu.forwarder)} µs + ${Math.round(pacedCpu.db)} µs of CPU per message (forwarder + database)`);
    clearTimeout(timeout);
    const steady = latencies(receiver, pacedSent);
    if (databaseUrl !== undefined && !mode.floor) await tableWrites(databaseUrl, WARMUP + MESSAGES + ticks * perTick);
    return {
      id: mode.id,
      name: mode.name,
      endToEnd: MESSAGES / ((end - start) / 1000),
      ingest: MESSAGES / ((ackedAt - start) / 1000),
      backlogP50: percentile(backlog, 50),
      p50: percentile(steady, 50),
      p99: percentile(steady, 99),
      cpuForwarderUs: (cpuForwarder * 1000) / MESSAGES,
      cpuDbUs: (cpuDb * 1000) / MESSAGES,
      pacedForwarderUs: pacedCpu.forwarder,
      pacedDbUs: pacedCpu.db,
      measuredDb: (await dbPids()).length > 0,
    };
  } finally {
    for (const cleanup of cleanups) await cleanup();
  }
}

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
console.error(`forwarder benchmark: ${MESSAGES} track messages, batches of ${BATCH}, ${IN_FLIGHT} requests in flight, ${ROUNDS} round(s), Node ${process.version}`);
const rounds = [];
for (let round = 0; round < ROUNDS; round++) {
  const results = {};
  for (const mode of modes) {
    console.error(`  round ${round + 1}: ${mode.name}...`);
    results[mode.id] = await runMode(mode);
  }
  rounds.push(results);
}
if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify(rounds, null, 1));
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const fmt = (n) => Math.round(n).toLocaleString('en-US');
const ms = (n) => `${n.toFixed(1)} ms`;
const us = (n) => `${Math.round(n)} µs`;
/** The median of a figure over the rounds. */
const med = (id, key) => median(rounds.map((r) => r[id][key]));
console.log(
  `\n| mode | messages/s end to end | messages/s acknowledged | CPU per message: forwarder + database (= total) | p50 send → webhook at ${fmt(PACED_RATE)} msg/s | p99 |`,
);
console.log(`|---|---:|---:|---:|---:|---:|`);
for (const mode of modes) {
  const r = rounds[0][mode.id];
  const f = med(mode.id, 'cpuForwarderUs');
  const d = med(mode.id, 'cpuDbUs');
  const cpu = r.measuredDb ? `${us(f)} + ${us(d)} (= ${us(median(rounds.map((x) => x[mode.id].cpuForwarderUs + x[mode.id].cpuDbUs)))})` : `${us(f)}`;
  console.log(`| ${r.name} | ${fmt(med(mode.id, 'endToEnd'))} | ${fmt(med(mode.id, 'ingest'))} | ${cpu} | ${ms(med(mode.id, 'p50'))} | ${ms(med(mode.id, 'p99'))} |`);
}
const total = (r) => r.cpuForwarderUs + (r.measuredDb ? r.cpuDbUs : 0);
const ratios = {};
/** A ratio taken within each round; the median, and each round's value when there are several. */
function ratio(label, a, b, of) {
  if (rounds[0][a] === undefined || rounds[0][b] === undefined) return;
  const values = rounds.map((r) => of(r[a]) / of(r[b]));
  ratios[label] = Number(median(values).toFixed(2));
  const each = values.length > 1 ? ` (rounds: ${values.map((v) => v.toFixed(2)).join(', ')})` : '';
  console.log(`- ${label}: ${median(values).toFixed(2)}×${each}`);
}
console.log(`\nRatios${ROUNDS > 1 ? ', each within a round, median of the rounds' : ' from this run'}:`);
const rate = (r) => r.endToEnd;
ratio('PostgreSQL (1 instance) / SQLite (full), end to end', 'pg-1', 'sqlite-full', rate);
ratio('PostgreSQL (1 instance) / Express + BullMQ, end to end', 'pg-1', 'bullmq', rate);
ratio('CPU per message, PostgreSQL (1 instance) / Express + BullMQ (each with its database)', 'pg-1', 'bullmq', total);
ratio('SQLite (full) / Express + BullMQ, end to end', 'sqlite-full', 'bullmq', rate);
ratio('CPU per message, SQLite (full) / Express + BullMQ with Redis', 'sqlite-full', 'bullmq', total);
ratio('PostgreSQL (1 instance) / Express + BullMQ with queue.add per message, end to end', 'pg-1', 'bullmq-add', rate);
ratio('CPU per message, PostgreSQL (1 instance) / Express + BullMQ with queue.add per message', 'pg-1', 'bullmq-add', total);
ratio('CPU per message, SQLite (full) / the floor on SQLite', 'sqlite-full', 'floor-sqlite', total);
ratio('SQLite (full) / the floor on SQLite, end to end', 'sqlite-full', 'floor-sqlite', rate);
ratio('CPU per message, PostgreSQL (1 instance) / the floor on PostgreSQL', 'pg-1', 'floor-pg', total);
ratio('PostgreSQL (1 instance) / the floor on PostgreSQL, end to end', 'pg-1', 'floor-pg', rate);
ratio('CPU per message, Express + BullMQ / the floor on PostgreSQL', 'bullmq', 'floor-pg', total);
ratio('CPU per message, the floor with the least delivery log / without, SQLite', 'floor-sqlite-log', 'floor-sqlite', total);
ratio('CPU per message, the floor with the least delivery log / without, PostgreSQL (database counted)', 'floor-pg-log', 'floor-pg', total);
ratio('CPU per message, SQLite (full) / the floor with the least delivery log on SQLite', 'sqlite-full', 'floor-sqlite-log', total);
ratio('CPU per message, PostgreSQL (1 instance) / the floor with the least delivery log on PostgreSQL', 'pg-1', 'floor-pg-log', total);
ratio('CPU per message, the floor with the least delivery log and messageIds kept / without either, SQLite', 'floor-sqlite-kept', 'floor-sqlite', total);
ratio('CPU per message, the floor with the least delivery log and messageIds kept / without either, PostgreSQL (database counted)', 'floor-pg-kept', 'floor-pg', total);
ratio('CPU per message, SQLite (full) / the floor with the least delivery log and messageIds kept', 'sqlite-full', 'floor-sqlite-kept', total);
ratio('CPU per message, PostgreSQL (1 instance) / the floor with the least delivery log and messageIds kept', 'pg-1', 'floor-pg-kept', total);
ratio('SQLite (full) / the floor with the least delivery log and messageIds kept, end to end', 'sqlite-full', 'floor-sqlite-kept', rate);
ratio('PostgreSQL (1 instance) / the floor with the least delivery log and messageIds kept, end to end', 'pg-1', 'floor-pg-kept', rate);
ratio("CPU per message, the floor with eventrelay's promises / the floor, SQLite", 'floor-sqlite-same', 'floor-sqlite', total);
ratio("CPU per message, SQLite (full) / the floor with eventrelay's promises", 'sqlite-full', 'floor-sqlite-same', total);
ratio("SQLite (full) / the floor with eventrelay's promises, end to end", 'sqlite-full', 'floor-sqlite-same', rate);
ratio("The floor with eventrelay's promises / the floor, SQLite, end to end", 'floor-sqlite-same', 'floor-sqlite', rate);
ratio("CPU per message, the floor with eventrelay's promises / the floor, PostgreSQL (database counted)", 'floor-pg-same', 'floor-pg', total);
ratio("The floor with eventrelay's promises / the floor, PostgreSQL, end to end", 'floor-pg-same', 'floor-pg', rate);
ratio("CPU per message, PostgreSQL (1 instance) / the floor with eventrelay's promises", 'pg-1', 'floor-pg-same', total);
ratio("PostgreSQL (1 instance) / the floor with eventrelay's promises, end to end", 'pg-1', 'floor-pg-same', rate);
ratio('PostgreSQL, 2 instances / 1 instance, end to end', 'pg-2', 'pg-1', rate);
ratio('PostgreSQL with a receiver answering in 50 ms, 2 instances / 1 instance, end to end', 'pg-2-slow', 'pg-1-slow', rate);
ratio('PostgreSQL (1 instance), delivery log on / off, end to end', 'pg-1', 'pg-1-nolog', rate);
ratio('CPU per message, SQLite (full), delivery log on / off', 'sqlite-full', 'sqlite-full-nolog', total);
ratio('CPU per message, PostgreSQL (1 instance), delivery log on / off (database counted)', 'pg-1', 'pg-1-nolog', total);
const pacedTotal = (r) => r.pacedForwarderUs + (r.measuredDb ? r.pacedDbUs : 0);
for (const mode of modes.filter((m) => m.id.endsWith('-base'))) {
  const id = mode.id.slice(0, -'-base'.length);
  ratio(`${rounds[0][id]?.name}: this build / the base build, CPU per message`, id, mode.id, total);
  ratio(`${rounds[0][id]?.name}: this build / the base build, end to end`, id, mode.id, rate);
  ratio(`${rounds[0][id]?.name}: this build / the base build, CPU per message at ${fmt(PACED_RATE)} msg/s`, id, mode.id, pacedTotal);
}
ratio(`CPU per message at ${fmt(PACED_RATE)} msg/s, PostgreSQL (1 instance) / Express + BullMQ`, 'pg-1', 'bullmq', pacedTotal);
for (const id of ['pg-1', 'pg-2']) {
  const r = rounds[0][id];
  if (r?.measuredDb && r.cpuDbUs > 0) {
    const db = med(id, 'cpuDbUs');
    console.log(`- ${r.name}: the database spent ${us(db)} of CPU per message: one core of PostgreSQL carries about ${fmt(1e6 / db)} messages/s`);
  }
}
const resultRows = {};
for (const mode of modes) {
  const r = rounds[0][mode.id];
  resultRows[mode.id] = {
    msgPerSec: Math.round(med(mode.id, 'endToEnd')),
    ackPerSec: Math.round(med(mode.id, 'ingest')),
    cpuUsPerMsg: Math.round(median(rounds.map((x) => total(x[mode.id])))),
    ...(r.measuredDb
      ? { forwarderCpuUsPerMsg: Math.round(med(mode.id, 'cpuForwarderUs')), databaseCpuUsPerMsg: Math.round(med(mode.id, 'cpuDbUs')) }
      : {}),
    p50Ms: Number(med(mode.id, 'p50').toFixed(1)),
    p99Ms: Number(med(mode.id, 'p99').toFixed(1)),
  };
}
recordResult('forwarder', {
  script: 'bench/forwarder.mjs',
  command: commandLine(['BENCH_RESULTS_KEY', 'BENCH_ROUNDS', 'BENCH_WARMUP', 'BENCH_MODES', 'BENCH_CLI', 'BENCH_BASE_CLI', 'BENCH_NODE_ARGS']),
  setup: {
    messages: MESSAGES,
    batch: BATCH,
    requestsInFlight: IN_FLIGHT,
    warmup: WARMUP,
    rounds: ROUNDS,
    pacedPerSecond: PACED_RATE,
    pacedSeconds: PACED_SECONDS,
  },
  rows: resultRows,
  ratios,
});
console.log(
  `\nThroughput: ${MESSAGES} track messages in batches of ${BATCH}, ${IN_FLIGHT} batch requests in flight, until the last webhook arrived ` +
  `("acknowledged": until the last 200 from the ingestion API); CPU is user + system time over that phase from /proc. ` +
  `Latency: ${fmt(PACED_RATE)} msg/s for ${PACED_SECONDS} s in batches of ${Math.max(1, Math.round(PACED_RATE / 50))}, ` +
  `from sending the batch to the webhook's arrival. One receiver answering 200 at once (unless the mode says otherwise), signing on, ` +
  `forwarders in their own processes; ${ROUNDS} round(s), medians; Node ${process.version}, 127.0.0.1.`,
);
