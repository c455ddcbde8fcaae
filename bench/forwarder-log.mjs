// The delivery log alone: eventrelay's (SqliteDeliveryLog, PostgresDeliveryLog, run by their own
// code) against the least log a forwarder can keep with the same promises (least-log.mjs), fed
// the same calls and attempts in the same flushes, each on a database of its own with the store's
// settings. It says what any such log costs per message on this machine, apart from the rest of
// the forwarder, so that the forwarder benchmark's "delivery log on / off" can be set against it.
//
//   node --import tsx --conditions=eventrelay-source bench/forwarder-log.mjs [messages per round=20000] [rounds=5] [sqlite,postgres] [calls per flush=600]
//   BENCH_WRITE_RESULTS=1: each store's row recorded in bench/results.json (`forwarder-log`)
//
// Each flush writes 600 calls (what 50 ms bring at the forwarder benchmark's 12,000 messages/s;
// 50 at its 1,000 messages/s) and the attempts on the previous flush's calls: the pattern of a forwarder whose deliveries lag its
// acceptance, where every line is inserted pending and updated later (the least log always works
// so: an attempt needs its line's id). eventrelay's log is also run with each call's attempt in
// the flush that writes the call (deliveries within 50 ms), where it inserts the line finished.
// The variants run in turn, round after round, and each ratio is taken within a round: the
// tables grow alike. CPU: this process (user + system, which includes SQLite's own work), plus
// PostgreSQL's processes for this database, the WAL writer, checkpointer and background writer
// (from /proc). PostgreSQL at EVENTRELAY_BENCH_PG_URL, as for forwarder.mjs (skipped when it does
// not answer); databases of its own, dropped after.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { SqliteStore } from '../packages/forwarder/src/store/sqlite/sqlite.ts';
import { SqliteDeliveryLog } from '../packages/forwarder/src/store/sqlite/sqlite-log.ts';
import { PostgresStore } from '../packages/forwarder/src/store/postgres/postgres.ts';
import { PostgresDeliveryLog } from '../packages/forwarder/src/store/postgres/postgres-log.ts';
import { postgresLog, sqliteLog } from './least-log.mjs';
import { cpuMs } from './proc-cpu.mjs';
import { commandLine, recordResult } from './results.mjs';

const MESSAGES = Number(process.argv[2] ?? 20_000);
const ROUNDS = Number(process.argv[3] ?? 5);
const STORES = (process.argv[4] ?? 'sqlite,postgres').split(',');
const FLUSH = Number(process.argv[5] ?? 600);
const ADMIN = process.env.EVENTRELAY_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = Date.now();
let sequence = 0;
/** A flush's calls, as the forwarder logs them: a track call with its webhook body. */
function calls() {
  const out = [];
  for (let i = 0; i < FLUSH; i++) {
    const n = sequence++;
    const messageId = `${n.toString(36)}-${((n * 2654435761) % 4294967296).toString(16)}`;
    const body = JSON.stringify({
      version: 1,
      type: 'track',
      userId: `user-${(n * 7919) % 5000}`,
      timestamp: new Date(now + n).toISOString(),
      event: 'Bench Event',
      properties: { index: n, plan: 'pro', amount: 19.99, tags: ['a', 'b'] },
      context: { library: { name: 'bench', version: '0' } },
      messageId,
    });
    out.push({ source: 'bench', kind: 'message', messageId, type: 'track', userId: `user-${(n * 7919) % 5000}`, receivedAt: now + n, body, state: 'pending' });
  }
  return out;
}
const record = (call) => ({
  source: call.source,
  messageId: call.messageId,
  attempt: 1,
  at: call.receivedAt + 3,
  outcome: 'delivered',
  urls: [{ url: 'http://127.0.0.1/hook', status: 200, error: null, durationMs: 3 }],
});

/** eventrelay's log: `folded` puts each call's attempt in the flush that writes the call. */
function eventrelay(log, folded) {
  let previous = [];
  return async () => {
    const batch = calls();
    log.add(batch);
    for (const c of folded ? batch : previous) log.attempt(record(c));
    previous = batch;
    await log.flush();
  };
}

/** The least log: this flush's lines, and the attempts on the previous flush's lines. */
function least(write) {
  let previous = [];
  return async () => {
    const batch = calls();
    const lines = batch.map((c) => ({ messageId: c.messageId, userId: c.userId, at: c.receivedAt, body: c.body }));
    const attempts = previous.map((p) => ({ lineId: p.id, at: p.at + 3, status: 200, duration: 3 }));
    const ids = await write(lines, attempts);
    previous = ids.map((id, i) => ({ id, at: lines[i].at }));
  };
}

async function run(name, variants, databaseCpu) {
  console.log(`\n${name}: the delivery log alone, ${MESSAGES} calls per round, ${ROUNDS} rounds, µs of CPU per call (this process + the database)`);
  const figures = new Map(variants.map((v) => [v.label, []]));
  const warm = Math.max(FLUSH, Math.round(MESSAGES / 4 / FLUSH) * FLUSH);
  for (const v of variants) for (let i = 0; i < warm; i += FLUSH) await v.step();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) {
      const db = databaseCpu === undefined ? undefined : await databaseCpu(v);
      const own = process.cpuUsage();
      for (let i = 0; i < MESSAGES; i += FLUSH) await v.step();
      const spent = process.cpuUsage(own);
      // The WAL writer catches up after the last commit.
      if (db !== undefined) await new Promise((r) => setTimeout(r, 200));
      const dbMs = db === undefined ? 0 : await db();
      figures.get(v.label).push({ own: (spent.user + spent.system) / MESSAGES, db: (dbMs * 1000) / MESSAGES });
    }
  }
  console.log('\n| log | this process | database | total |\n|---|---:|---:|---:|');
  for (const [label, rows] of figures) {
    const own = median(rows.map((r) => r.own));
    const db = median(rows.map((r) => r.db));
    const total = median(rows.map((r) => r.own + r.db));
    console.log(`| ${label} | ${own.toFixed(1)} µs | ${databaseCpu ? `${db.toFixed(1)} µs` : '—'} | ${total.toFixed(1)} µs |`);
  }
  const base = figures.get(variants.at(-1).label);
  const ratioOf = new Map();
  for (const v of variants.slice(0, -1)) {
    const ratios = figures.get(v.label).map((r, i) => (r.own + r.db) / (base[i].own + base[i].db));
    ratioOf.set(v.label, median(ratios));
    console.log(`- ${v.label} / ${variants.at(-1).label}: ${median(ratios).toFixed(2)}× (rounds: ${ratios.map((r) => r.toFixed(2)).join(', ')})`);
  }
  const total = (label) => Number(median(figures.get(label).map((r) => r.own + r.db)).toFixed(1));
  const [later, same, leastLog] = variants.map((v) => v.label);
  return {
    laterFlushUsPerCall: total(later),
    sameFlushUsPerCall: total(same),
    leastLogUsPerCall: total(leastLog),
    laterFlushVsLeast: Number(ratioOf.get(later).toFixed(2)),
    sameFlushVsLeast: Number(ratioOf.get(same).toFixed(2)),
  };
}

/** One store's row of `forwarder-log` in bench/results.json; the other store's row stays. */
function recordRow(store, row) {
  recordResult(
    'forwarder-log',
    { script: 'bench/forwarder-log.mjs', command: commandLine(), setup: { messages: MESSAGES, rounds: ROUNDS, callsPerFlush: FLUSH }, rows: { [store]: row } },
    { merge: true },
  );
}

if (STORES.includes('sqlite')) {
  const dirs = [];
  const open = () => {
    const dir = mkdtempSync(join(tmpdir(), 'eventrelay-logbench-'));
    dirs.push(dir);
    return new SqliteStore({ dataDir: dir });
  };
  const stores = [open(), open(), open()];
  const logs = [0, 1].map((i) => new SqliteDeliveryLog(stores[i].database, { keepDelivered: 0 }, () => stores[i].scrubSoon()));
  const row = await run('SQLite (the store\'s settings: WAL, secure_delete, synchronous=full for the queue)', [
    { label: 'eventrelay, attempts in a later flush', step: eventrelay(logs[0], false) },
    { label: 'eventrelay, attempts in the same flush', step: eventrelay(logs[1], true) },
    { label: 'the least log', step: least(sqliteLog(stores[2].database)) },
  ]);
  recordRow('sqlite', row);
  for (const log of logs) await log.close();
  for (const s of stores) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}

if (STORES.includes('postgres')) {
  const admin = new pg.Client({ connectionString: ADMIN, connectionTimeoutMillis: 3000 });
  let reachable = true;
  await admin.connect().catch((error) => {
    reachable = false;
    console.log(`\nPostgreSQL at ${ADMIN} did not answer (${error.code ?? error.message}): skipped`);
  });
  if (reachable) {
    const names = ['a', 'b', 'c'].map((x) => `eventrelay_logcost_${x}_${process.pid}`);
    const urlOf = (name) => {
      const url = new URL(ADMIN);
      url.pathname = `/${name}`;
      return url.toString();
    };
    for (const name of names) await admin.query(`CREATE DATABASE ${name}`);
    const databaseCpu = async (v) => {
      const pids = async () =>
        (
          await admin.query(
            `SELECT pid FROM pg_stat_activity WHERE datname = $1 OR backend_type IN ('walwriter', 'checkpointer', 'background writer')`,
            [v.database],
          )
        ).rows.map((r) => r.pid);
      const before = new Map((await pids()).map((p) => [p, cpuMs(p)]));
      return async () => (await pids()).reduce((sum, p) => sum + cpuMs(p) - (before.get(p) ?? 0), 0);
    };
    const stores = [await PostgresStore.open({ url: urlOf(names[0]) }), await PostgresStore.open({ url: urlOf(names[1]) })];
    const logs = stores.map((s) => new PostgresDeliveryLog(s.logConnections, { keepDelivered: 0 }));
    const pool = new pg.Pool({ connectionString: urlOf(names[2]), max: 4 });
    const row = await run(
      'PostgreSQL',
      [
        { label: 'eventrelay, attempts in a later flush', step: eventrelay(logs[0], false), database: names[0] },
        { label: 'eventrelay, attempts in the same flush', step: eventrelay(logs[1], true), database: names[1] },
        { label: 'the least log', step: least(await postgresLog(pool)), database: names[2] },
      ],
      databaseCpu,
    );
    recordRow('postgres', row);
    for (const log of logs) await log.close();
    for (const s of stores) await s.close();
    await pool.end();
    for (const name of names) await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
  }
}
