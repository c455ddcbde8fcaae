// Two forwarders side by side: two builds of `eventrelay serve` (or one and the floor), each with
// its own receiver (and database), given the same paced load at the same time, so that whatever
// else loads the machine weighs on both alike; the sequential rounds of forwarder.mjs see the
// machine change between modes. Prints each one's CPU per message (forwarder, plus its
// database's connections on PostgreSQL) and their ratio, round by round, the two started in
// alternate order. What the commits of issue 22 quote as "side by side".
//
//   node bench/forwarder-ab.mjs <A> <B> <sqlite|postgres> [msg/s each=1000] [seconds=10] [rounds=3] [warm-up s=3]
//
// A and B: a build's dist/cli.js (`<path>:nolog` turns its delivery log off; `<path>:ordered`
// sets the source's `ordering: "user"`, deliveries in order per user over the load's 1,000 users;
// `<path>:traced` runs it with OpenTelemetry set up, tracing-setup.mjs; `<path>:ingest` (on both sides) ingestion alone, no destination; `<path>:schema` gives
// the source schema controls, `<path>:filter` those and a per-URL filter: builds of issue 31 on; `<path>:transform` a
// transform renaming three fields on its URL: issue 44 on), or `floor`
// (bench/forwarder-floor.mjs; `floor:log`, `floor:log,kept`: with its least delivery log, and
// messageIds kept). AB_DELAY=<ms>: the receivers answer after it; AB_ANSWER: the body they answer with (default none); AB_CONCURRENCY:
// delivery.concurrency (default 64); AB_STATS=1: row writes per message (PostgreSQL); AB_THREADS=1:
// each forwarder's CPU per message on its main thread and on the others (V8's compiler and GC, libuv's pool), and each database connection's;
// AB_TRACEPARENT=1: each message carries a `context.traceparent`, as from a client called inside a span; AB_NODE_ARGS:
// options for node before each forwarder's script (`--cpu-prof --cpu-prof-dir=/tmp/prof`, say).
// BENCH_WRITE_RESULTS=1: the medians recorded in bench/results.json (`forwarder-ab/<store>`), as the
// row AB_ROW names ("eventrelay / floor, fresh"; default "<A> / <B>"); the other rows stay.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { cpuMs, threadCpuMs } from './proc-cpu.mjs';
import { commandLine, recordResult } from './results.mjs';

const [A, B, STORE = 'sqlite'] = process.argv.slice(2);
const RATE = Number(process.argv[5] ?? 1000);
const SECONDS = Number(process.argv[6] ?? 10);
const ROUNDS = Number(process.argv[7] ?? 3);
const WARM = Number(process.argv[8] ?? 3);
const here = dirname(fileURLToPath(import.meta.url));
const ADMIN = process.env.EVENTRELAY_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function receiver() {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const answer = () => {
        count++;
        if (process.env.AB_ANSWER === undefined) res.writeHead(200).end();
        else res.writeHead(200, { 'content-type': 'application/json' }).end(process.env.AB_ANSWER);
      };
      if (process.env.AB_DELAY) setTimeout(answer, Number(process.env.AB_DELAY));
      else answer();
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/hook`, count: () => count, close: () => (server.closeAllConnections(), server.close()) };
}

async function database() {
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  const name = `eventrelay_ab_${process.pid}_${Math.floor(Math.random() * 1e9)}`;
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    pids: async () => {
      const c = new pg.Client({ connectionString: ADMIN });
      await c.connect();
      const { rows } = await c.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name]);
      await c.end();
      return rows.map((r) => r.pid);
    },
    drop: async () => {
      const c = new pg.Client({ connectionString: ADMIN });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

function spawnListening(args, env) {
  const child = spawn(process.execPath, [...(process.env.AB_NODE_ARGS?.split(' ').filter(Boolean) ?? []), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
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

async function start(snap, rcv, db) {
  const dir = mkdtempSync(join(tmpdir(), 'ab-'));
  if (snap === 'floor' || snap.startsWith('floor:')) {
    const storeArg = STORE === 'sqlite' ? `sqlite:${join(dir, 'floor.db')}` : `postgres:${db.url}`;
    const features = snap.slice('floor:'.length);
    const f = await spawnListening([join(here, 'forwarder-floor.mjs'), rcv.url, 'k', 's', storeArg, '64', ...(features === '' ? [] : [features])]);
    return { ...f, dir };
  }
  const [cli, variant] = snap.split(':');
  const storage = STORE === 'sqlite' ? { type: 'sqlite' } : { type: 'postgres', url: { env: 'DATABASE_URL' }, poolSize: 10 };
  if (variant === 'nolog') storage.deliveryLog = false;
  const webhooks = { sharedSecret: 's', webhooks: [{ url: rcv.url }], ...(variant === 'ordered' ? { ordering: 'user' } : {}) };
  const source = { name: 'bench', writeKey: 'k', destinations: { Webhooks: webhooks } };
  // A source's schema (issue 31): controls every call is checked against (none of them blocks the
  // load), and with `filter` a per-URL filter every attempt reads the body's type and event for.
  if (variant === 'schema' || variant === 'filter') source.schema = { blockedEvents: ['Never Sent'], allowedEvents: ['Bench Event', 'Other Event'], blockedTypes: ['alias'] };
  if (variant === 'filter') source.destinations.Webhooks.webhooks[0].filter = { types: ['track', 'identify'], events: ['Bench Event'] };
  // A transform that renames three fields and keeps the rest (docs/transformations.md; builds of issue 44 on).
  // Ingestion alone (issue 41's "ingestion CPU per message"): a source without a destination, whose
  // calls are checked, stored and logged, and wait; CPU counted until every request was answered and
  // one second more (what is written behind the answers).
  if (variant === 'ingest') source.destinations = {};
  if (variant === 'transform') source.destinations.Webhooks.webhooks[0].transform = { code: 'function transform(m) { const { event, userId, timestamp, ...rest } = m; return { ...rest, name: event, user: userId, at: timestamp }; }' };
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ storage, delivery: { concurrency: Number(process.env.AB_CONCURRENCY ?? 64) }, sources: [source] }));
  const preload = variant === 'traced' ? ['--import', join(here, 'tracing-setup.mjs')] : [];
  const f = await spawnListening([...preload, cli, 'serve', '--config', join(dir, 'config.json'), '--data', join(dir, 'data'), '--port', '0'], db ? { DATABASE_URL: db.url } : {});
  return { ...f, dir };
}

const auth = `Basic ${Buffer.from('k:').toString('base64')}`;
/** A W3C traceparent per message (a trace per 20), as a client called inside a span stamps it. */
const traceparent = (i) => `00-${(Math.floor(i / 20) + 1).toString(16).padStart(32, '0')}-${(i + 1).toString(16).padStart(16, '0')}-01`;
function batch(prefix, from, n) {
  return Array.from({ length: n }, (_, j) => ({
    type: 'track',
    userId: `user-${(from + j) % 1000}`,
    event: 'Bench Event',
    messageId: `${prefix}-${from + j}`,
    properties: { index: from + j, plan: 'pro', amount: 19.99, tags: ['a', 'b'] },
    context: { library: { name: 'bench', version: '0' }, ...(process.env.AB_TRACEPARENT ? { traceparent: traceparent(from + j) } : {}) },
    timestamp: new Date().toISOString(),
  }));
}

/** Paced load on both at once: `rate` msg/s each for `seconds`. */
async function load(targets, prefix, seconds) {
  const perTick = 20;
  const ticks = Math.round((RATE * seconds) / perTick);
  const t0 = performance.now();
  const pending = [];
  for (let k = 0; k < ticks; k++) {
    const wait = t0 + (k * 1000 * perTick) / RATE - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    for (const t of targets) {
      const body = JSON.stringify({ batch: batch(prefix, k * perTick, perTick), sentAt: new Date().toISOString() });
      pending.push(fetch(`${t.url}/v1/batch`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body }).then((r) => r.arrayBuffer()));
    }
  }
  await Promise.all(pending);
  return ticks * perTick;
}

/** `ingest` on both sides: nothing is delivered, and the answers to the load are the end of its work. */
const INGEST = [A, B].every((snap) => snap.split(':')[1] === 'ingest');
if (!INGEST && [A, B].some((snap) => snap.split(':')[1] === 'ingest')) throw new Error('`:ingest` goes on both builds or neither');
/** Whether side `s` has had `n` calls: delivered at its receiver, or (ingest) answered. */
const reached = (s, n) => INGEST || s.rcv.count() >= n;

const results = [];
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? ['A', 'B'] : ['B', 'A'];
  const sides = [];
  for (const label of order) {
    const snap = label === 'A' ? A : B;
    const rcv = await receiver();
    const db = STORE === 'postgres' ? await database() : undefined;
    const f = await start(snap, rcv, db);
    sides.push({ snap: label, rcv, db, f });
  }
  const sent0 = await load(sides.map((s) => s.f), 'warm', WARM);
  while (sides.some((s) => !reached(s, sent0))) await new Promise((r) => setTimeout(r, 20));
  if (INGEST) await new Promise((r) => setTimeout(r, 1000));
  const before = [];
  for (const s of sides) {
    before.push({ threads: threadCpuMs(s.f.pid), f: cpuMs(s.f.pid), db: s.db ? new Map((await s.db.pids()).map((p) => [p, cpuMs(p)])) : new Map() });
  }
  const t = performance.now();
  const mono = () => (Number(process.hrtime.bigint() / 1000n) / 1e6).toFixed(6);
  const phaseStart = mono();
  const sent = await load(sides.map((s) => s.f), 'max', SECONDS);
  const done = new Map();
  while (sides.some((s) => !reached(s, sent0 + sent))) {
    for (const s of sides) if (!done.has(s.snap) && reached(s, sent0 + sent)) done.set(s.snap, performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  if (INGEST) await new Promise((r) => setTimeout(r, 1000));
  for (const s of sides) if (!done.has(s.snap)) done.set(s.snap, performance.now() - t);
  const wall = performance.now() - t;
  console.log(`  done after: ${[...done].map(([k, v]) => `${k} ${v.toFixed(0)} ms`).join(', ')}`);
  const row = { round, wall };
  console.log(`  wall ${wall.toFixed(0)} ms for ${SECONDS} s of load`);
  console.log(`  phase ${phaseStart},${mono()} pids ${sides.map((s, i) => `${s.snap}=${s.f.pid}${s.db ? `/db=${s.db.name}/${[...before[i].db.keys()].join('+')}` : ''}`).join(' ')}`);
  for (let i = 0; i < sides.length; i++) {
    const s = sides[i];
    const fwd = ((cpuMs(s.f.pid) - before[i].f) * 1000) / sent;
    let db = 0;
    if (s.db) {
      const after = await s.db.pids();
      const each = [];
      for (const p of after) {
        const used = cpuMs(p) - (before[i].db.get(p) ?? 0);
        db += used;
        each.push(((used * 1000) / sent).toFixed(1));
      }
      if (process.env.AB_THREADS) console.log(`  ${s.snap}: database connections, µs per message each: ${each.join(', ')}`);
      const added = after.filter((p) => !before[i].db.has(p));
      if (added.length > 0) console.log(`  ${s.snap}: connections opened during the phase: ${added.join('+')}`);
    }
    row[s.snap] = { fwd, db: (db * 1000) / sent };
    if (process.env.AB_THREADS) {
      const parts = [...threadCpuMs(s.f.pid)].map(([kind, ms]) => `${kind} ${(((ms - (before[i].threads.get(kind) ?? 0)) * 1000) / sent).toFixed(1)}`);
      console.log(`  ${s.snap}: forwarder threads, µs per message: ${parts.join(', ')}`);
    }
  }
  if (process.env.AB_STATS) {
    for (const s of sides) {
      if (!s.db) continue;
      const c = new pg.Client({ connectionString: s.db.url });
      await c.connect();
      const { rows } = await c.query('SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY relname');
      const x = await c.query('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()');
      await c.end();
      const n = sent0 + sent;
      console.log(`  ${s.snap}: xact/msg ${(x.rows[0].xact_commit / n).toFixed(3)} ` + rows.map((r) => `${r.relname} i${(r.n_tup_ins / n).toFixed(2)} u${(r.n_tup_upd / n).toFixed(2)} (hot ${(r.n_tup_hot_upd / n).toFixed(2)}) d${(r.n_tup_del / n).toFixed(2)}`).join(', '));
    }
  }
  for (const s of sides) {
    await s.f.stop();
    s.rcv.close();
    await s.db?.drop();
    rmSync(s.f.dir, { recursive: true, force: true });
  }
  const tot = (x) => x.fwd + x.db;
  console.log(
    `round ${round + 1}: A ${row.A.fwd.toFixed(0)} + ${row.A.db.toFixed(0)} µs, B ${row.B.fwd.toFixed(0)} + ${row.B.db.toFixed(0)} µs, ratio ${(tot(row.A) / tot(row.B)).toFixed(3)} (forwarder ${(row.A.fwd / row.B.fwd).toFixed(3)}${STORE === 'postgres' ? `, db ${(row.A.db / row.B.db).toFixed(3)}` : ''})`,
  );
  results.push(row);
}
const med = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const tot = (x) => x.fwd + x.db;
console.log(`A: ${A}, B: ${B}; A - B: ${med(results.map((r) => tot(r.A) - tot(r.B))).toFixed(1)} µs per message`);
console.log(`median ratio A/B: total ${med(results.map((r) => tot(r.A) / tot(r.B))).toFixed(3)}, forwarder ${med(results.map((r) => r.A.fwd / r.B.fwd)).toFixed(3)}${STORE === 'postgres' ? `, db ${med(results.map((r) => r.A.db / r.B.db)).toFixed(3)}` : ''}; A ${med(results.map((r) => tot(r.A))).toFixed(0)} µs, B ${med(results.map((r) => tot(r.B))).toFixed(0)} µs`);
recordResult(
  `forwarder-ab/${STORE}`,
  {
    script: 'bench/forwarder-ab.mjs',
    command: commandLine(['AB_ROW', 'AB_DELAY', 'AB_CONCURRENCY', 'AB_TRACEPARENT', 'BENCH_RESULTS_KEY']),
    setup: { perSecondEach: RATE, seconds: SECONDS, warmupSeconds: WARM },
    rows: {
      [process.env.AB_ROW ?? `${A} / ${B}`]: {
        rounds: ROUNDS,
        total: Number(med(results.map((r) => tot(r.A) / tot(r.B))).toFixed(3)),
        forwarder: Number(med(results.map((r) => r.A.fwd / r.B.fwd)).toFixed(3)),
        ...(STORE === 'postgres' ? { database: Number(med(results.map((r) => r.A.db / r.B.db)).toFixed(3)) } : {}),
        aCpuUsPerMsg: Math.round(med(results.map((r) => tot(r.A)))),
        bCpuUsPerMsg: Math.round(med(results.map((r) => tot(r.B)))),
        // What A costs more than B per message, µs: the median of the rounds' differences.
        aMinusBUsPerMsg: Number(med(results.map((r) => tot(r.A) - tot(r.B))).toFixed(1)),
        // Each round's ratio, in the order they ran (A first in the odd ones).
        roundTotals: results.map((r) => Number((tot(r.A) / tot(r.B)).toFixed(3))),
      },
    },
  },
  { merge: true },
);
