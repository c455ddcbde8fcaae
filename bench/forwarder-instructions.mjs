// Instructions per message of the forwarder's whole path (ingest, store, deliver, record), counted by
// valgrind's callgrind on a fixed amount of work driven one step at a time on a fake clock, so that
// a build counts the same twice, on a quiet or a busy machine (issue 42's guard: bench/README.md,
// "Forwarder: the instruction count, before a change lands").
//
//   node bench/forwarder-instructions.mjs [build=packages/forwarder/dist/cli.js][:variant] ...
//
// Each argument is a build's dist/cli.js with an optional feature setting after a colon (the names
// of forwarder-ab.mjs: `nolog`, `ordered`, `schema`, `filter`, `traced`, `ingest`, `transform`; none: every feature at its
// default). The first is the reference the others are divided by.
//
// What makes the count steady:
//   - time: `eventrelay serve` runs with bench/fake-clock.mjs, a clock that moves only when this
//     script says (SIGUSR2, IR_STEP_MS a step). No timer of the forwarder (its delivery loop, the
//     delivery log's and the outcomes' write delays, samplers, polls, undici's) fires on the real
//     clock, which valgrind slows fifty-fold and a busy machine slows more;
//   - order: one request of 20 track calls at a time, on a connection of its own, sent when the
//     forwarder is quiet (every thread asleep, no CPU time added, at 3 polls 20 ms apart); then the
//     clock moves IR_STEPS steps, each once the forwarder is quiet again, and every delivery must
//     have reached the receiver by then. No group commit, hand-over or batch of outcomes depends on
//     how requests happened to overlap;
//   - V8: `--single-threaded` (no background compilation or GC threads, whose timing varies),
//     `--predictable-gc-schedule`, `--interrupt-budget=8192` (most of the path is optimized
//     within the warm-up);
//   - what is counted: instrumentation off (`--instr-atstart=no`) through start-up and IR_WARM
//     warm-up messages, then on (`callgrind_control --instr=on`, `--zero`) for IR_CALLS messages,
//     then dumped. The figure is the main thread's instructions of that dump over IR_CALLS, less
//     V8's optimizing compiler (`Runtime_CompileOptimized`, inclusive, from callgrind_annotate),
//     which is still compiling then, moves by a fifth from run to run, and is printed apart.
//     One build counted twice: within 1%.
// It measures the path one request at a time: no group commit gathers two requests, so the figure
// is above what a message costs under load; compare builds and feature settings with it, not
// figures of another script. System calls count one instruction each (the fsyncs are in the CPU
// figures of forwarder-ab.mjs).
//
// IR_WARM (default 400), IR_CALLS (200), IR_STEP_MS (25), IR_STEPS (12), IR_V8_FLAGS (the V8 flags
// above), IR_ANSWER: the receiver's answer body (default none), IR_KEEP=1: keep the dumps,
// IR_VALGRIND_ARGS: more callgrind options (to find the callers of a slow path).
// BENCH_WRITE_RESULTS=1 records the rows in bench/results.json (`forwarder-instructions`, or
// BENCH_RESULTS_KEY), named by IR_ROWS.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandLine, recordResult } from './results.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const WARM = Number(process.env.IR_WARM ?? 400);
const CALLS = Number(process.env.IR_CALLS ?? 200);
/** The fake clock's step (ms), and how many steps each request is given. */
const STEP_MS = Number(process.env.IR_STEP_MS ?? 25);
const STEPS = Number(process.env.IR_STEPS ?? 12);
const QUIET_POLLS = 3;
const PER_REQUEST = 20;
/** V8 without background threads or a GC schedule driven by time (see the header). */
const V8_FLAGS = (process.env.IR_V8_FLAGS ?? '--interrupt-budget=8192 --single-threaded --predictable-gc-schedule').split(' ').filter(Boolean);
const ANSWER = process.env.IR_ANSWER;
/** More callgrind options, for a closer look (`--separate-callers6=Builtins_LoadIC`, say); the figures are then not comparable. */
const VALGRIND_ARGS = (process.env.IR_VALGRIND_ARGS ?? '').split(' ').filter(Boolean);
const builds = process.argv.slice(2);
if (builds.length === 0) builds.push(join(here, '..', 'packages', 'forwarder', 'dist', 'cli.js'));

if (spawnSync('valgrind', ['--version']).status !== 0) {
  console.error('valgrind is not installed (apt-get install -y valgrind)');
  process.exit(2);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function receiver() {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      if (ANSWER === undefined) res.writeHead(200).end();
      else res.writeHead(200, { 'content-type': 'application/json' }).end(ANSWER);
    });
  });
  // No keep-alive timeout: an idle connection is never closed on the real clock.
  server.keepAliveTimeout = 0;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    count: () => count,
    close: () => (server.closeAllConnections(), server.close()),
  };
}

const TRANSFORM_CODE = 'function transform(m) { const { event, userId, timestamp, ...rest } = m; return { ...rest, name: event, user: userId, at: timestamp }; }';

function config(variant, url) {
  const storage = { type: 'sqlite' };
  if (variant === 'nolog') storage.deliveryLog = false;
  const webhooks = { sharedSecret: 's', webhooks: [{ url }], ...(variant === 'ordered' ? { ordering: 'user' } : {}) };
  const source = { name: 'bench', writeKey: 'k', destinations: { Webhooks: webhooks } };
  if (variant === 'schema' || variant === 'filter') source.schema = { blockedEvents: ['Never Sent'], allowedEvents: ['Bench Event', 'Other Event'], blockedTypes: ['alias'] };
  if (variant === 'filter') webhooks.webhooks[0].filter = { types: ['track', 'identify'], events: ['Bench Event'] };
  // Ingestion alone: no destination; the calls are checked, stored and logged, and wait.
  if (variant === 'ingest') source.destinations = {};
  // The transform of forwarder-ab.mjs: three fields renamed, the rest kept (issue 44's cost).
  if (variant === 'transform') webhooks.webhooks[0].transform = { code: TRANSFORM_CODE };
  return { storage, log: { level: 'warn' }, sources: [source] };
}

const auth = `Basic ${Buffer.from('k:').toString('base64')}`;
function body(prefix, from) {
  const batch = [];
  for (let j = 0; j < PER_REQUEST; j++) {
    batch.push({
      type: 'track',
      userId: `user-${(from + j) % 1000}`,
      event: 'Bench Event',
      messageId: `${prefix}-${from + j}`,
      properties: { index: from + j, plan: 'pro', amount: 19.99, tags: ['a', 'b'] },
      context: { library: { name: 'bench', version: '0' } },
      timestamp: '2026-11-28T12:00:00.000Z',
    });
  }
  return JSON.stringify({ batch, sentAt: '2026-11-28T12:00:00.000Z' });
}

function control(pid, ...args) {
  const r = spawnSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`callgrind_control ${args.join(' ')} failed: ${r.stderr}`);
}

/** The inclusive instructions of the functions whose names match `pattern` in one callgrind dump. */
function inclusive(file, pattern) {
  const r = spawnSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], { encoding: 'utf8', maxBuffer: 1 << 28 });
  let sum = 0;
  for (const line of r.stdout.split('\n')) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+\S*?:(.*)$/.exec(line);
    if (m !== null && pattern.test(m[2])) sum += Number(m[1].replaceAll(',', ''));
  }
  return sum;
}

/**
 * V8's optimizing compiler, run on the main thread (`--single-threaded`): what it compiles after
 * the warm-up depends on the shape of the code, not on what a message costs, so it is counted apart.
 */
const COMPILER = /^v8::internal::Runtime_CompileOptimized\(/;

/** Instructions of each thread in the dump files numbered `part`: { main, all, compiler }. */
function dumped(dir, part) {
  let main = 0;
  let all = 0;
  let compiler = 0;
  for (const name of readdirSync(dir)) {
    const m = /^cg\.out\.(\d+)(?:-(\d+))?$/.exec(name);
    if (m === null || Number(m[1]) !== part) continue;
    const text = readFileSync(join(dir, name), 'utf8');
    const t = /^totals: (\d+)/m.exec(text) ?? /^summary: (\d+)/m.exec(text);
    if (t === null) continue;
    const n = Number(t[1]);
    all += n;
    if (m[2] === undefined || Number(m[2]) === 1) {
      main += n;
      compiler += inclusive(join(dir, name), COMPILER);
    }
  }
  return { main, all, compiler };
}

/** Whether the process is quiet: every thread asleep, and no CPU time added since `last` (its value). */
function quiet(pid, last) {
  let ticks = 0;
  let running = false;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'R') running = true;
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return { ticks, quiet: !running && ticks === last };
}

/** Resolves once the process was quiet at QUIET_POLLS polls in a row, 20 ms apart. */
async function settled(pid) {
  let last = -1;
  for (let calm = 0; calm < QUIET_POLLS;) {
    await sleep(20);
    const q = quiet(pid, last);
    calm = q.quiet ? calm + 1 : 0;
    last = q.ticks;
  }
}

/** POST one batch on a connection of its own (no keep-alive timer on either side). */
function post(url, payload) {
  return new Promise((resolvePost, reject) => {
    const req = request(`${url}/v1/batch`, { method: 'POST', agent: false, headers: { authorization: auth, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolvePost() : reject(new Error(`ingestion answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** One `serve` under callgrind: instructions of the counted steps, per message. */
async function count(build, variant) {
  const dir = mkdtempSync(join(tmpdir(), 'ir-'));
  const rcv = await receiver();
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config(variant, rcv.url)));
  // Builds before `--log-level` (3227e60) print their address at their default level, and know no `log` key.
  const levels = spawnSync(process.execPath, [build, '--help'], { encoding: 'utf8' }).stdout.includes('--log-level');
  if (!levels) writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config(variant, rcv.url), log: undefined }));
  const preload = ['--import', join(here, 'fake-clock.mjs'), ...(variant === 'traced' ? ['--import', join(here, 'tracing-setup.mjs')] : [])];
  const child = spawn(
    'valgrind',
    ['--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${join(dir, 'cg.out')}`, '--quiet', ...VALGRIND_ARGS,
      process.execPath, ...V8_FLAGS, ...preload, build, 'serve', '--config', join(dir, 'config.json'), '--data', join(dir, 'data'), '--port', '0', ...(levels ? ['--log-level', 'info'] : [])],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, FAKE_CLOCK_STEP: String(STEP_MS) } },
  );
  const url = await new Promise((resolveUrl, reject) => {
    let text = '';
    child.stdout.on('data', (chunk) => {
      text += chunk;
      const m = /listening on (http:\/\/[^\s"]+)/.exec(text) ?? /"url":"(http:\/\/[^"]+)"/.exec(text);
      if (m) resolveUrl(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code} before listening`)));
  });
  let delivered = 0;
  // One request: sent when the forwarder is quiet, then the clock moved on STEPS times, each once
  // the forwarder is quiet again; every delivery must have reached the receiver by the last.
  const step = async (prefix, from) => {
    await post(url, body(prefix, from));
    delivered += PER_REQUEST;
    for (let i = 0; i < STEPS; i++) {
      await settled(child.pid);
      child.kill('SIGUSR2');
    }
    await settled(child.pid);
    if (variant !== 'ingest' && rcv.count() < delivered) throw new Error(`${rcv.count()} of ${delivered} delivered after ${STEPS} steps of the clock: raise IR_STEPS`);
  };
  await settled(child.pid);
  for (let i = 0; i < WARM; i += PER_REQUEST) await step('warm', i);
  control(child.pid, '--instr=on');
  control(child.pid, '--zero');
  for (let i = 0; i < CALLS; i += PER_REQUEST) await step('ir', i);
  control(child.pid, '--dump=work');
  control(child.pid, '--instr=off');
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  rcv.close();
  const work = dumped(dir, 1);
  // IR_KEEP=1: the dumps stay, for callgrind_annotate (their directory is printed).
  if (process.env.IR_KEEP === '1') console.log(`callgrind dumps of ${build}${variant ? `:${variant}` : ''}: ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
  if (work.main === 0) throw new Error('no counts in the callgrind dumps');
  return { main: (work.main - work.compiler) / CALLS, all: (work.all - work.compiler) / CALLS, compiler: work.compiler / CALLS };
}

const rows = [];
for (const arg of builds) {
  const colon = arg.lastIndexOf(':');
  const [build, variant] = colon > 1 ? [arg.slice(0, colon), arg.slice(colon + 1)] : [arg, ''];
  const r = await count(resolve(build), variant);
  rows.push({ arg, ...r });
  console.log(
    `${arg}: ${Math.round(r.main).toLocaleString('en')} instructions per message on the main thread, ${Math.round(r.all).toLocaleString('en')} all threads; ` +
    `V8's optimizing compiler apart: ${Math.round(r.compiler).toLocaleString('en')}`,
  );
}
for (const row of rows.slice(1)) console.log(`${row.arg} / ${rows[0].arg}: ${(row.main / rows[0].main).toFixed(3)} main thread, ${(row.all / rows[0].all).toFixed(3)} all threads`);
// IR_ROWS: the rows' names in bench/results.json, comma-separated, in the order of the arguments
// (default: the arguments, relative to the working directory).
const names = process.env.IR_ROWS?.split(',');
const label = (arg, i) => names?.[i] ?? relative(process.cwd(), arg);
recordResult(
  'forwarder-instructions',
  {
    script: 'bench/forwarder-instructions.mjs',
    command: commandLine(['IR_WARM', 'IR_CALLS', 'IR_STEP_MS', 'IR_STEPS', 'IR_V8_FLAGS', 'IR_ANSWER', 'IR_ROWS', 'BENCH_RESULTS_KEY']),
    setup: { warm: WARM, calls: CALLS, perRequest: PER_REQUEST, clockStepMs: STEP_MS, clockSteps: STEPS, store: 'sqlite' },
    rows: Object.fromEntries(rows.map((r, i) => [label(r.arg, i), {
      mainPerMsg: Math.round(r.main),
      allThreadsPerMsg: Math.round(r.all),
      compilerPerMsg: Math.round(r.compiler),
      ratioToFirst: Number((r.main / rows[0].main).toFixed(3)),
    }])),
  },
  { merge: true },
);
