// Instructions per message of the forwarder's whole path (ingest, store, deliver, record), counted by
// valgrind's callgrind. Not yet the steady guard issue 42 asks for: the forwarder's time-driven work
// (its timers, and how many calls each background write gathers) is counted too, and under callgrind
// a run lasts 50 times longer, so the count moves with the machine's load (1.69 and 1.71 million per
// message on a machine at load 12, 2.8 million at load 19, for the same build). Compare two builds
// on a quiet machine, alternating (A B A B), and read the ratio, not the count.
//
//   node bench/forwarder-instructions.mjs [build=packages/forwarder/dist/cli.js][:variant] ...
//
// Each argument is a build's dist/cli.js with an optional feature setting after a colon (the same
// names as forwarder-ab.mjs: `nolog`, `ordered`, `schema`, `filter`; none: every feature at its
// default). Each runs `eventrelay serve` on SQLite under callgrind twice, with FEW and MANY track calls
// (in batches of 20, 8 requests in flight, to a receiver that answers 200 at once), and reports
// (I(MANY) - I(FEW)) / (MANY - FEW): the instructions one more message costs, start-up and shutdown
// cancelled out. The first argument is the reference the others are divided by.
//
// Before a change lands: build main into a worktree and compare, e.g.
//   node bench/forwarder-instructions.mjs ../main-build/packages/forwarder/dist/cli.js packages/forwarder/dist/cli.js
// IR_FEW / IR_MANY set the two loads (default 200 / 1,200 messages); IR_ANSWER the receiver's answer body.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const FEW = Number(process.env.IR_FEW ?? 200);
const MANY = Number(process.env.IR_MANY ?? 1200);
// IR_ANSWER: the body the receiver answers with (default none), as most receivers send a short one.
const ANSWER = process.env.IR_ANSWER;
const builds = process.argv.slice(2);
if (builds.length === 0) builds.push(join(here, '..', 'packages', 'forwarder', 'dist', 'cli.js'));

if (spawnSync('valgrind', ['--version']).status !== 0) {
  console.error('valgrind is not installed (apt-get install -y valgrind)');
  process.exit(2);
}

async function receiver() {
  let count = 0;
  let waiting;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      if (ANSWER === undefined) res.writeHead(200).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER);
      if (waiting !== undefined && count >= waiting.n) waiting.resolve();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    reached: (n) => (count >= n ? Promise.resolve() : new Promise((r) => (waiting = { n, resolve: r }))),
    close: () => (server.closeAllConnections(), server.close()),
  };
}

function config(variant, url) {
  const storage = { type: 'sqlite' };
  if (variant === 'nolog') storage.deliveryLog = false;
  const webhooks = { sharedSecret: 's', webhooks: [{ url }], ...(variant === 'ordered' ? { ordering: 'user' } : {}) };
  const source = { name: 'bench', writeKey: 'k', destinations: { Webhooks: webhooks } };
  if (variant === 'schema' || variant === 'filter') source.schema = { blockedEvents: ['Never Sent'], allowedEvents: ['Bench Event'], blockedTypes: ['alias'] };
  if (variant === 'filter') webhooks.webhooks[0].filter = { types: ['track'], events: ['Bench Event'] };
  return { storage, log: { level: 'warn' }, sources: [source] };
}

const auth = `Basic ${Buffer.from('k:').toString('base64')}`;
function body(from) {
  const batch = [];
  for (let j = 0; j < 20; j++) {
    batch.push({
      type: 'track',
      userId: `user-${(from + j) % 1000}`,
      event: 'Bench Event',
      messageId: `ir-${from + j}`,
      properties: { index: from + j, plan: 'pro', amount: 19.99, tags: ['a', 'b'] },
      context: { library: { name: 'bench', version: '0' } },
      timestamp: '2026-11-28T12:00:00.000Z',
    });
  }
  return JSON.stringify({ batch, sentAt: '2026-11-28T12:00:00.000Z' });
}

/** One `serve` under callgrind with `n` messages: its total instruction count. */
async function count(build, variant, n) {
  const dir = mkdtempSync(join(tmpdir(), 'ir-'));
  const rcv = await receiver();
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config(variant, rcv.url)));
  const out = join(dir, 'callgrind.out');
  const child = spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${out}`, '--quiet', process.execPath, build, 'serve', '--config', join(dir, 'config.json'), '--data', join(dir, 'data'), '--port', '0', '--log-level', 'info'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolveUrl, reject) => {
    let text = '';
    child.stdout.on('data', (chunk) => {
      text += chunk;
      const m = /listening on (http:\/\/[^\s"]+)/.exec(text) ?? /"url":"(http:\/\/[^"]+)"/.exec(text);
      if (m) resolveUrl(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code} before listening`)));
  });
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const from = next;
      next += 20;
      const res = await fetch(`${url}/v1/batch`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: body(from) });
      if (res.status !== 200) throw new Error(`ingestion answered ${res.status}`);
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  await rcv.reached(n);
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  rcv.close();
  const text = readFileSync(out, 'utf8');
  rmSync(dir, { recursive: true, force: true });
  const m = /^totals: (\d+)/m.exec(text) ?? /^summary: (\d+)/m.exec(text);
  if (m === null) throw new Error('no totals in the callgrind output');
  return Number(m[1]);
}

const rows = [];
for (const arg of builds) {
  const colon = arg.lastIndexOf(':');
  const [build, variant] = colon > 1 ? [arg.slice(0, colon), arg.slice(colon + 1)] : [arg, ''];
  const few = await count(resolve(build), variant, FEW);
  const many = await count(resolve(build), variant, MANY);
  const perMessage = (many - few) / (MANY - FEW);
  rows.push({ arg, perMessage });
  console.log(`${arg}: ${Math.round(perMessage).toLocaleString('en')} instructions per message (${FEW}: ${few.toLocaleString('en')}, ${MANY}: ${many.toLocaleString('en')})`);
}
for (const row of rows.slice(1)) console.log(`${row.arg} / ${rows[0].arg}: ${(row.perMessage / rows[0].perMessage).toFixed(3)}`);
