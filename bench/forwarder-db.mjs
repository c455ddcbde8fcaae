// What each store operation costs PostgreSQL, alone: the CPU time of the database's processes
// (its connections, the WAL writer, checkpointer and background writer, from /proc) per message
// for each step the forwarder takes, one step after the other, run by the store's and the
// delivery log's own code in the batch sizes the forwarder benchmark sees; and this process's
// CPU per message for the same step (the driver and the code that builds the statements). The
// forwarder benchmark measures all steps at once; this says which part is which.
//
//   node --import tsx --conditions=eventrelay-source bench/forwarder-db.mjs [messages=20000] [batch=20] [group=3]
//
// batch: messages per request, claims and outcomes per statement; group: requests per group
// commit, and the delivery log flushes every batch * group calls. PostgreSQL at
// EVENTRELAY_BENCH_PG_URL, as for forwarder.mjs; a database of its own, dropped after.
import pg from 'pg';
import { PostgresStore } from '../packages/forwarder/src/store/postgres/postgres.ts';
import { PostgresDeliveryLog } from '../packages/forwarder/src/store/postgres/postgres-log.ts';
import { cpuMs } from './proc-cpu.mjs';

const MESSAGES = Number(process.argv[2] ?? 20_000);
const BATCH = Number(process.argv[3] ?? 20);
const GROUP = Number(process.argv[4] ?? 3);
const ADMIN = process.env.EVENTRELAY_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const LEASE = { owner: 'bench', ms: 30_000 };

const admin = new pg.Client({ connectionString: ADMIN });
await admin.connect();
const name = `eventrelay_dbcost_${process.pid}`;
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(ADMIN);
url.pathname = `/${name}`;
async function dbPids() {
  const { rows } = await admin.query(
    `SELECT pid FROM pg_stat_activity WHERE datname = $1 OR backend_type IN ('walwriter', 'checkpointer', 'background writer')`,
    [name],
  );
  return rows.map((r) => r.pid);
}

/** Runs `fn`; prints the database's and this process's CPU per message. */
async function measure(label, fn) {
  const before = new Map((await dbPids()).map((p) => [p, cpuMs(p)]));
  const own = process.cpuUsage();
  await fn();
  const client = process.cpuUsage(own);
  // The WAL writer catches up after the last commit.
  await new Promise((r) => setTimeout(r, 200));
  const db = (await dbPids()).reduce((sum, p) => sum + cpuMs(p) - (before.get(p) ?? 0), 0);
  console.log(`| ${label} | ${((db * 1000) / MESSAGES).toFixed(1)} µs | ${((client.user + client.system) / MESSAGES).toFixed(1)} µs |`);
}

const store = await PostgresStore.open({ url: url.toString(), poolSize: 10 });
const log = new PostgresDeliveryLog(store.logConnections, { keepDelivered: 0 });
const now = Date.now();
const body = (id) =>
  JSON.stringify({
    version: 1,
    type: 'track',
    userId: `user-${id % 1000}`,
    timestamp: new Date(now).toISOString(),
    event: 'Bench Event',
    properties: { index: id, plan: 'pro', amount: 19.99, tags: ['a', 'b'] },
    context: { library: { name: 'bench', version: '0' } },
    messageId: `m-${id}`,
  });
function requests(prefix, count = MESSAGES) {
  const out = [];
  for (let i = 0; i < count; i += BATCH) {
    out.push(
      Array.from({ length: Math.min(BATCH, count - i) }, (_, j) => {
        const messageId = `${prefix}-${i + j}`;
        return { source: 'bench', messageId, receivedAt: now, deliveries: [{ source: 'bench', destination: 'Webhooks', kind: 'message', messageId, body: body(i + j), createdAt: now }] };
      }),
    );
  }
  return out;
}
async function acceptAll(reqs, lease) {
  const leased = [];
  for (let i = 0; i < reqs.length; i += GROUP) {
    const results = await Promise.all(reqs.slice(i, i + GROUP).map((r) => store.accept(r, lease)));
    for (const r of results) leased.push(...(r.leased ?? []));
  }
  return leased;
}
async function recordAll(deliveries) {
  for (let i = 0; i < deliveries.length; i += BATCH) {
    await store.record(deliveries.slice(i, i + BATCH).map((d) => ({ id: d.id, lease: d.lease, status: 'delivered', attempts: 1, firstAttemptAt: now, at: now + 1 })));
  }
}

console.log(`PostgreSQL, CPU per message of each step alone: ${MESSAGES} messages, requests of ${BATCH}, ${GROUP} requests per group commit, claims and outcomes by ${BATCH}`);
console.log('');
console.log('| step | database | this process (driver, statements) |');
console.log('|---|---:|---:|');
// Warm-up, not measured: the statements prepared, this process's code compiled.
await recordAll(await acceptAll(requests('w', 3000), { ...LEASE, now }));
await acceptAll(requests('v', 3000));
for (let due = await store.claim('bench', now, BATCH, LEASE); due.length > 0; due = await store.claim('bench', now, BATCH, LEASE)) await recordAll(due);
let leased = [];
await measure('accept: messages, deliveries leased to the instance (group commit)', async () => {
  leased = await acceptAll(requests('h'), { ...LEASE, now });
});
await measure('outcome: delivered (row deleted)', () => recordAll(leased));
const claimed = [];
await measure('accept: messages, deliveries unleased (group commit)', () => acceptAll(requests('c')));
await measure('claim (a lease per delivery, the row read back), then its outcome (delivered)', async () => {
  for (;;) {
    const due = await store.claim('bench', now, BATCH, LEASE);
    if (due.length === 0) break;
    claimed.push(...due);
    // Delivered as the forwarder would, so that the next claim does not walk over leased rows.
    await recordAll(due);
  }
});
const calls = requests('h').flat().map((m) => ({ source: 'bench', kind: 'message', messageId: m.messageId, type: 'track', userId: 'user-1', receivedAt: now, body: m.deliveries[0].body, state: 'pending' }));
const attempt = (messageId) => ({ source: 'bench', messageId, attempt: 1, at: now + 2, outcome: 'delivered', urls: [{ url: 'http://127.0.0.1/hook', status: 200, error: null, durationMs: 1 }] });
await measure('delivery log: lines written pending', async () => {
  for (let i = 0; i < calls.length; i += BATCH) {
    log.add(calls.slice(i, i + BATCH));
    if ((i / BATCH) % GROUP === GROUP - 1) await log.flush();
  }
  await log.flush();
});
await measure('delivery log: attempts (the line updated, its attempts appended to it)', async () => {
  for (let i = 0; i < calls.length; i++) {
    log.attempt(attempt(calls[i].messageId));
    if (i % (BATCH * GROUP) === BATCH * GROUP - 1) await log.flush();
  }
  await log.flush();
});
const folded = calls.map((c) => ({ ...c, messageId: `f-${c.messageId}` }));
await measure('delivery log: lines attempted before their flush (written finished, with their attempts)', async () => {
  for (let i = 0; i < folded.length; i += BATCH) {
    log.add(folded.slice(i, i + BATCH));
    for (const c of folded.slice(i, i + BATCH)) log.attempt(attempt(c.messageId));
    if ((i / BATCH) % GROUP === GROUP - 1) await log.flush();
  }
  await log.flush();
});
await log.close();
await store.close();
await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
await admin.end();
