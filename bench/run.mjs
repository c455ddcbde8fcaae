#!/usr/bin/env node
// Client benchmark of eventrelay: `npm run bench` at the package root (it builds, installs
// this folder's competitors with `npm ci`, then runs this file).
//
// For each scenario and each client, a fresh process (client/runner.mjs) makes the track
// calls against a sink in another process (client/sink.mjs) on 127.0.0.1, which counts the
// messages it gets. Every figure is reported beside its ratio to the hand-written floor
// (client/floor.mjs) measured in the same run.
//
//   node bench/run.mjs [--scenario burst,paced,outage] [--clients floor,eventrelay,...]
//                      [--quick] [--repeat 1] [--timeout ms] [--quiet 5000] [--profile]
//
// --repeat N runs every client N times (interleaved) and reports the median of each figure.
// --profile writes a V8 CPU profile per client run to bench/results/profiles/ and prints
// the functions with the most self time (client/profile-summary.mjs).
// --threads prints each run's CPU (Linux) of the main thread and of the others (V8's compiler
// and GC helpers, libuv's pool).
//
// enqueue ms:  time the caller spent inside track() calls (the loop's blocked time)
// total ms:    from the first track call until the sink had counted every message once
// CPU µs/msg:  user + system CPU of the client's process, from creating the client until
//              delivery (or giving up), divided by the messages of the scenario
// peak RSS MB: the process's high-water mark (VmHWM), module loading included
// delivered / lost / dup: distinct messages the sink got, messages it never got, and
//              extra copies; only bodies answered 200 count
// requests / mean batch: requests answered 200, and messages per such request
import { fork } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { scenarioFor } from './client/scenarios.mjs';
import { notes, resultRows, scenarioTable, targetChecks, TARGETS } from './client/report.mjs';
import { commandLine, recordResult } from './results.mjs';
import { summarizeProfile } from './client/profile-summary.mjs';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

const ALL_CLIENTS = [
  'floor',
  'eventrelay',
  'eventrelay-base',
  'eventrelay-spool',
  'eventrelay-spool-sync',
  'eventrelay-segment',
  'eventrelay-classic',
  'segment',
  'classic',
  'posthog',
  'rudderstack',
];
const ALL_SCENARIOS = ['burst', 'paced', 'outage'];
/** The same batching settings for every client. */
const CLIENT_SETTINGS = { flushAt: 20, flushInterval: 1000, maxQueueSize: 150_000 };

const { values: args } = parseArgs({
  options: {
    scenario: { type: 'string', default: ALL_SCENARIOS.join(',') },
    // eventrelay-base only when asked for (it needs BENCH_BASE_DIST).
    clients: { type: 'string', default: ALL_CLIENTS.filter((client) => client !== 'eventrelay-base').join(',') },
    quick: { type: 'boolean', default: false },
    timeout: { type: 'string' },
    quiet: { type: 'string', default: '5000' },
    repeat: { type: 'string', default: '1' },
    profile: { type: 'boolean', default: false },
    threads: { type: 'boolean', default: false },
  },
});

function list(value, allowed, what) {
  const items = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of items) {
    if (!allowed.includes(item)) throw new Error(`Unknown ${what} "${item}"; expected some of ${allowed.join(', ')}`);
  }
  return items;
}

const scenarios = list(args.scenario, ALL_SCENARIOS, 'scenario').map((name) => scenarioFor(name, args.quick));
const clients = list(args.clients, ALL_CLIENTS, 'client');
// The floor runs first in every scenario: the others are measured against it.
if (!clients.includes('floor')) clients.unshift('floor');
else clients.sort((a, b) => (a === 'floor' ? -1 : b === 'floor' ? 1 : 0));
const quietMs = Number(args.quiet);
const repeat = Math.max(1, Number(args.repeat) || 1);

/** Hard limit of one client run: the burst gets 60 s, the others their calling time plus 30 s. */
function hardTimeoutOf(scenario) {
  if (args.timeout !== undefined) return Number(args.timeout);
  if (scenario.rate === 0) return 60_000;
  return Math.ceil((scenario.count / scenario.rate) * 1000) + scenario.outageMs + 30_000;
}

/** The sink process, with a request/answer helper over IPC. */
async function startSink() {
  const child = fork(here('./client/sink.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiters = [];
  const sink = { child, completeAt: undefined, port: undefined };
  child.on('message', (message) => {
    if (message.type === 'complete') sink.completeAt = message.at;
    const index = waiters.findIndex((w) => w.type === message.type);
    if (index >= 0) waiters.splice(index, 1)[0].resolve(message);
  });
  sink.next = (type) => new Promise((resolve) => waiters.push({ type, resolve }));
  sink.ask = (message, answer) => {
    const reply = sink.next(answer);
    child.send(message);
    return reply;
  };
  sink.port = (await sink.next('listening')).port;
  return sink;
}

/** CPU and peak RSS of another process, from /proc, for a child that no longer answers. */
function procFigures(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { cpuUs: (ticks * 1e6) / 100, peakRssBytes: hwm ? Number(hwm[1]) * 1024 : undefined };
  } catch {
    return {};
  }
}

function keepTail(stream, tail) {
  stream.setEncoding('utf8');
  stream.on('data', (text) => {
    tail.push(...text.split('\n').filter(Boolean));
    if (tail.length > 20) tail.splice(0, tail.length - 20);
  });
}

let runCounter = 0;

async function runOne(sink, client, scenario) {
  const run = `r${++runCounter}`;
  const hardTimeoutMs = hardTimeoutOf(scenario);
  sink.completeAt = undefined;
  await sink.ask({ type: 'reset', run, expected: scenario.count, outageMs: scenario.outageMs }, 'reset-ok');
  const profileDir = here(`./results/profiles/${scenario.name}-${client}-${run}`);
  const execArgv = args.profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  const child = fork(here('./client/runner.mjs'), [], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'], execArgv });
  const tail = [];
  keepTail(child.stdout, tail);
  keepTail(child.stderr, tail);
  const got = {};
  let exited = false;
  child.on('message', (message) => {
    got[message.type] = { ...message, receivedAt: Date.now() };
  });
  child.on('exit', () => {
    exited = true;
  });
  const started = Date.now();
  while (!got.ready && !exited && Date.now() - started < 10_000) await sleep(10);

  const goAt = Date.now();
  child.send({
    type: 'go',
    client,
    scenario,
    run,
    endpoint: `http://127.0.0.1:${sink.port}`,
    writeKey: 'bench-write-key',
    ...CLIENT_SETTINGS,
    closeTimeout: hardTimeoutMs,
  });

  let status;
  let reason;
  let completeSeenAt;
  for (;;) {
    await sleep(25);
    const now = Date.now();
    if (sink.completeAt !== undefined) {
      // Everything arrived: give the client's own close/flush up to 2 s to settle, so that
      // late duplicates and the cost of closing are counted too.
      completeSeenAt ??= now;
      if (got.settled || now - completeSeenAt > 2000) {
        status = 'ok';
        break;
      }
    } else if (got.crashed || exited) {
      status = 'crashed';
      reason = got.crashed?.error?.split('\n')[0] ?? `process exited; last output: ${tail.slice(-3).join(' | ')}`;
      break;
    } else if (got.settled) {
      const stats = await sink.ask({ type: 'stats' }, 'stats');
      if (now - Math.max(stats.lastProgressAt, got.settled.receivedAt) > quietMs) {
        status = 'incomplete';
        reason = `close/flush settled and nothing more arrived for ${quietMs / 1000} s`;
        break;
      }
    }
    if (now - goAt > hardTimeoutMs) {
      status = 'timeout';
      reason = `${hardTimeoutMs / 1000} s; ${got.enqueued ? 'all calls made' : 'still making calls'}`;
      break;
    }
  }

  let figures;
  if (!exited) {
    const fallback = procFigures(child.pid);
    child.send({ type: 'stop' });
    const asked = Date.now();
    while (!got.result && !exited && Date.now() - asked < 3000) await sleep(10);
    figures = got.result ?? { ...fallback, approximate: true };
    if (!exited) child.kill('SIGKILL');
  }
  while (!exited) await sleep(10);
  await sleep(100);
  const stats = await sink.ask({ type: 'stats' }, 'stats');
  const count = scenario.count;
  return {
    client,
    label: (await labelOf(client)) ?? client,
    scenario: scenario.name,
    status,
    reason,
    enqueueMs: got.enqueued?.enqueueMs,
    totalMs: status === 'ok' && got.enqueued ? sink.completeAt - got.enqueued.startedAt : undefined,
    cpuUsPerMsg: figures?.cpuUs !== undefined ? figures.cpuUs / count : undefined,
    peakRssMB: figures?.peakRssBytes !== undefined ? figures.peakRssBytes / 2 ** 20 : undefined,
    approximate: figures?.approximate && figures.cpuUs !== undefined,
    delivered: stats.unique,
    lost: count - stats.unique,
    duplicates: stats.duplicates,
    requests: stats.accepted,
    rejected: stats.rejected,
    meanBatch: stats.accepted ? stats.occurrences / stats.accepted : undefined,
    malformed: stats.malformed,
    stray: stats.stray,
    paths: stats.paths,
    errors: figures?.errors,
    firstError: figures?.firstError,
    throws: figures?.throws,
    threads: figures?.threads,
    closeError: got.settled?.closeError,
    closeMs: got.settled?.closeMs,
    output: status === 'ok' ? undefined : tail.slice(-5),
    profileDir: args.profile ? profileDir : undefined,
  };
}

const MEDIAN_FIELDS = ['enqueueMs', 'totalMs', 'cpuUsPerMsg', 'peakRssMB', 'requests', 'rejected', 'meanBatch'];

function median(values) {
  const sorted = values.filter((v) => v !== undefined).sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** One row from several runs of a client: medians of the figures, the worst of losses and duplicates. */
function combine(runs) {
  if (runs.length === 1) return runs[0];
  const worst = runs.find((r) => r.status !== 'ok') ?? runs[0];
  const row = { ...worst, runs: runs.length };
  for (const field of MEDIAN_FIELDS) row[field] = median(runs.map((r) => r[field]));
  if (worst.status !== 'ok') row.totalMs = undefined;
  row.lost = Math.max(...runs.map((r) => r.lost));
  row.delivered = Math.min(...runs.map((r) => r.delivered));
  row.duplicates = Math.max(...runs.map((r) => r.duplicates));
  row.errors = runs.reduce((sum, r) => sum + (r.errors ?? 0), 0);
  return row;
}

/** Each repetition's CPU per message over the floor's of the same repetition (interleaved, so under the same load). */
function roundRatios(runs, floorRuns) {
  if (runs.length < 2) return undefined;
  return runs.map((r, i) => {
    const floor = floorRuns[i];
    return r.cpuUsPerMsg !== undefined && floor?.cpuUsPerMsg ? r.cpuUsPerMsg / floor.cpuUsPerMsg : undefined;
  });
}

const labels = {};
async function labelOf(client) {
  try {
    labels[client] ??= (await import(`./client/adapters/${client}.mjs`)).label;
  } catch {
    return undefined;
  }
  return labels[client];
}

/** eventrelay is measured from its build; say so plainly when there is none yet. */
async function eventrelayBuilt() {
  try {
    const built = await import('../packages/eventrelay/dist/index.js');
    return typeof built.Analytics === 'function';
  } catch {
    return false;
  }
}

function machine() {
  const cpus = os.cpus();
  return `${new Date().toISOString().slice(0, 10)}, Node.js ${process.version}, ${os.platform()} ${os.arch()}, ${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'})`;
}

async function main() {
  const built = clients.includes('eventrelay') ? await eventrelayBuilt() : true;
  const sink = await startSink();
  const settings = [
    `flushAt ${CLIENT_SETTINGS.flushAt}, flushInterval ${CLIENT_SETTINGS.flushInterval} ms for every client`,
    ...(args.quick ? ['--quick (counts / 10)'] : []),
    ...(repeat > 1 ? [`median of ${repeat} runs per client (lost and dup: the worst run)`] : []),
  ];
  const out = [`# Client benchmark`, '', machine(), settings.join('; '), ''];
  const all = [];
  console.log(out.join('\n'));
  for (const scenario of scenarios) {
    const runsOf = new Map(clients.map((client) => [client, []]));
    for (let round = 0; round < repeat; round++) {
      for (const client of clients) {
        if (client === 'eventrelay' && !built) continue;
        process.stderr.write(`  ${scenario.name}${repeat > 1 ? ` #${round + 1}` : ''}: ${client} ... `);
        const result = await runOne(sink, client, scenario);
        process.stderr.write(`${result.status}${result.totalMs !== undefined ? ` ${result.totalMs} ms` : ''}, lost ${result.lost}, dup ${result.duplicates}\n`);
        runsOf.get(client).push(result);
        all.push(result);
        if (args.profile) console.error(await summarizeProfile(result.profileDir));
        if (args.threads && result.threads) console.error(`    CPU ms (user + system): main thread ${result.threads.mainUser} + ${result.threads.mainSystem}, other threads ${result.threads.othersUser} + ${result.threads.othersSystem}`);
        await sleep(300);
      }
    }
    const results = clients.map((client) =>
      client === 'eventrelay' && !built
        ? { client, label: 'eventrelay', scenario: scenario.name, status: 'skipped', reason: 'dist/index.js has no Analytics: run `npm run build`' }
        : { ...combine(runsOf.get(client)), cpuRatios: roundRatios(runsOf.get(client), runsOf.get('floor')) },
    );
    const section = [`## ${scenario.name}: ${scenario.describe(scenario)}`, '', scenarioTable(scenario, results), ''];
    const checks = targetChecks(scenario, results);
    if (checks.length) {
      section.push(`eventrelay targets: ${checks.map((c) => `${c.ok ? 'PASS' : 'FAIL'} ${c.what} ${c.shown}`).join('; ')}`, '');
    }
    if (repeat > 1) {
      const perRound = results
        .filter((r) => r.client !== 'floor' && r.cpuRatios)
        .map((r) => `${r.label} ${r.cpuRatios.map((v) => (v === undefined ? '—' : v.toFixed(2))).join(', ')}`);
      if (perRound.length) section.push(`CPU per message / the floor's, each repetition: ${perRound.join('; ')}`, '');
    }
    const extra = notes(results);
    if (extra.length) section.push(...extra, '');
    console.log(section.join('\n'));
    out.push(...section);
    // A --quick run counts a tenth of the calls: not figures to record.
    if (!args.quick) {
      recordResult(`client/${scenario.name}`, {
        script: 'bench/run.mjs',
        command: commandLine(['BENCH_RESULTS_KEY', 'BENCH_BASE_DIST']),
        versions: JSON.parse(readFileSync(here('./package.json'), 'utf8')).dependencies,
        setup: {
          ...CLIENT_SETTINGS,
          calls: scenario.count,
          ...(scenario.rate ? { perSecond: scenario.rate } : {}),
          ...(scenario.outageMs ? { outageSeconds: scenario.outageMs / 1000, refusedWith: 503 } : {}),
          repeat,
          targets: TARGETS,
        },
        rows: resultRows(results),
      });
    }
  }
  sink.child.disconnect();
  mkdirSync(here('./results'), { recursive: true });
  writeFileSync(here('./results/latest.md'), `${out.join('\n')}\n`);
  writeFileSync(here('./results/latest.json'), `${JSON.stringify({ machine: machine(), args, results: all }, null, 2)}\n`);
  console.log(`Written to bench/results/latest.md and latest.json`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
