#!/usr/bin/env node
// The client's guard: instructions per message of `Analytics` and of the hand-written floor
// (client/floor.mjs), counted by `valgrind --tool=callgrind`, for the paced and burst calls of
// run.mjs. CPU time on this shared machine moves by a tenth from run to run; an instruction
// count moves by a few thousandths, so that a change of 1% shows. Run it before a change to the
// client lands, and after (`npm run build` first: it runs dist/):
//
//   node bench/client-instructions.mjs [--scenario paced,burst] [--warm 20000] [--calls 4000]
//                                      [--repeat 1] [--jobs 2] [--base <dir>] [--node-args "..."] [--keep]
//   node bench/client-instructions.mjs --cold [--calls 10000] [--base <dir>]
//
// --cold: a process's start instead of its steady state: no warm-up, V8's own tiering (no
// --interrupt-budget), 10,000 counted calls. What run.mjs pays beyond the steady count is there:
// V8 compiling the client's code (TurboFan, on its helper threads) and the garbage collector's
// helpers, so the figure to compare is "all threads"; the columns "TurboFan" and "GC" split it
// (callgrind_annotate's function names, every thread).
//
// Each run is a process of its own under callgrind (client/instructions-runner.mjs) sending to a
// sink (client/sink.mjs) in another, outside valgrind; `--jobs` runs that many at once. A run
// makes `--warm` calls uncounted (V8 compiles the code they run), then `--calls` counted ones:
// `callgrind_control --instr on` before them, `off` once they are all delivered. The figure is
// the counted instructions over the counted calls: the calls, their batches, requests and
// answers, garbage collection and what V8 still compiles. Every run must deliver each call once,
// or the script says so and exits 1.
//
// --keep: keeps callgrind's files, for `callgrind_annotate` (V8's builtins and the garbage
// collector are named there; JavaScript compiled by V8 is not).
// --base <dir>: also runs eventrelay from another build, <dir>/packages/eventrelay/dist (a
// worktree of main after `npm run build`), and prints the ratio of this build to it.
//
// Only user-space instructions are counted: system calls are one instruction each. A change that
// adds requests, writes or timers shows in run.mjs's CPU figures (user + system) better than here.
// With BENCH_WRITE_RESULTS=1 the figures go to results.json under `client-instructions`.
import { execFileSync, fork, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { commandLine, recordResult, rounded } from './results.mjs';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

const { values: args } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'paced,burst' },
    warm: { type: 'string', default: '20000' },
    calls: { type: 'string', default: '4000' },
    repeat: { type: 'string', default: '1' },
    jobs: { type: 'string', default: '2' },
    base: { type: 'string' },
    'node-args': { type: 'string', default: '--interrupt-budget=8192' },
    keep: { type: 'boolean', default: false },
    cold: { type: 'boolean', default: false },
  },
});
if (args.cold) {
  const given = (name) => process.argv.some((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`));
  if (!given('warm')) args.warm = '0';
  if (!given('calls')) args.calls = '10000';
  if (!given('node-args')) args['node-args'] = '';
}

const scenarios = args.scenario.split(',').map((s) => s.trim()).filter(Boolean);
for (const s of scenarios) if (!['paced', 'burst'].includes(s)) throw new Error(`Unknown scenario "${s}"; expected paced, burst`);
const warm = Number(args.warm);
const calls = Number(args.calls);
// Whole chunks of the burst, whole batches of 20.
if (!Number.isInteger(warm) || warm < 0 || warm % 1000 !== 0) throw new Error('--warm must be a multiple of 1000');
if (!Number.isInteger(calls) || calls < 1000 || calls % 1000 !== 0) throw new Error('--calls must be a multiple of 1000');
const repeat = Math.max(1, Number(args.repeat) || 1);
const jobs = Math.max(1, Number(args.jobs) || 1);
const nodeArgs = args['node-args'].split(' ').filter(Boolean);

/** The builds measured: the floor, this worktree's eventrelay, and eventrelay from --base. */
const clients = [
  { name: 'floor', label: 'floor (hand-written)', adapter: 'floor' },
  { name: 'eventrelay', label: 'eventrelay', adapter: 'eventrelay' },
];
if (args.base !== undefined) {
  const dist = resolve(args.base, 'packages/eventrelay/dist/index.js');
  if (!existsSync(dist)) throw new Error(`--base: ${dist} does not exist; run \`npm run build\` in ${args.base}`);
  // The label names no path: it goes to results.json, which the command line (with the path) goes to as well.
  clients.push({ name: 'base', label: 'eventrelay, the --base build', adapter: 'eventrelay', dist });
}
if (!existsSync(here('../packages/eventrelay/dist/index.js'))) throw new Error('No packages/eventrelay/dist: run `npm run build` first');

/** A sink process of its own for one run: runs in parallel cannot share one. */
async function startSink() {
  const child = fork(here('./client/sink.mjs'), [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const waiters = [];
  child.on('message', (message) => {
    const index = waiters.findIndex((w) => w.type === message.type);
    if (index >= 0) waiters.splice(index, 1)[0].resolve(message);
  });
  const next = (type) => new Promise((done) => waiters.push({ type, resolve: done }));
  const ask = (message, answer) => {
    const reply = next(answer);
    child.send(message);
    return reply;
  };
  const { port } = await next('listening');
  return { child, port, ask };
}

const workDir = mkdtempSync(join(os.tmpdir(), 'client-instructions-'));
let counter = 0;

/** Lines a child wrote on stdout, awaited one by one. */
function lines(stream) {
  let text = '';
  const waiting = [];
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    text += chunk;
    for (const w of [...waiting]) if (text.split('\n').includes(w.line)) waiting.splice(waiting.indexOf(w), 1)[0].resolve();
  });
  return {
    wait: (line) => new Promise((resolve) => (text.split('\n').includes(line) ? resolve() : waiting.push({ line, resolve }))),
    last: () => text.trim().split('\n').at(-1),
  };
}

function callgrindControl(pid, setting) {
  execFileSync('callgrind_control', ['--instr', setting, String(pid)], { stdio: 'ignore' });
}

/** One process under callgrind; resolves with the instructions of its counted calls and what the sink got. */
async function measure(client, pattern) {
  const run = `i${++counter}`;
  const sink = await startSink();
  await sink.ask({ type: 'reset', run, expected: warm + calls, outageMs: 0 }, 'reset-ok');
  const log = join(workDir, `${run}.log`);
  const flag = join(workDir, run);
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      // A file per thread: the main thread's count is the figure (see above).
      '--separate-threads=yes',
      `--callgrind-out-file=${join(workDir, `${run}.out`)}`,
      `--log-file=${log}`,
      // V8 writes and rewrites machine code: valgrind must notice code changed outside the stack.
      '--smc-check=all-non-file',
      process.execPath,
      ...nodeArgs,
      here('./client/instructions-runner.mjs'),
      client.adapter,
      pattern,
      String(warm),
      String(calls),
      `http://127.0.0.1:${sink.port}`,
      run,
      flag,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...(client.dist ? { BENCH_EVENTRELAY_DIST: client.dist } : {}), DEBUG: '' },
    },
  );
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise((done) => child.on('exit', done));
  const out = lines(child.stdout);
  const step = (line) => Promise.race([out.wait(line), exited.then(() => Promise.reject(new Error(`exited before "${line}"`)))]);
  try {
    await step('warm');
    callgrindControl(child.pid, 'on');
    writeFileSync(`${flag}.go`, '');
    await step('done');
    callgrindControl(child.pid, 'off');
    writeFileSync(`${flag}.exit`, '');
  } catch (error) {
    child.kill();
    throw new Error(`${client.name} ${pattern}: ${error.message}; ${err.trim().split('\n').slice(-3).join(' | ')}`);
  }
  const code = await exited;
  const stats = await sink.ask({ type: 'stats' }, 'stats');
  sink.child.kill();
  const collected = /Collected : (\d+)/.exec(readFileSync(log, 'utf8'));
  const main = /^totals: (\d+)/m.exec(readFileSync(`${join(workDir, `${run}.out`)}-01`, 'utf8'));
  if (code !== 0 || !collected || !main) {
    throw new Error(`${client.name} ${pattern}: exit ${code}; ${err.trim().split('\n').slice(-3).join(' | ')}`);
  }
  const result = JSON.parse(out.last());
  const split = args.cold ? threadSplit(join(workDir, `${run}.out`)) : undefined;
  return {
    turbofan: split?.turbofan,
    gc: split?.gc,
    instructions: Number(main[1]),
    allThreads: Number(collected[1]),
    lost: warm + calls - stats.unique,
    duplicates: stats.duplicates,
    requests: stats.accepted,
    errors: result.errors + result.throws,
    firstError: result.firstError,
    file: `${join(workDir, `${run}.out`)}-01`,
  };
}

/**
 * Instructions of every thread of a run (callgrind's files `<prefix>-01`, `-02`, ...) in V8's
 * optimizing compiler and in the garbage collector, by the C++ function names callgrind_annotate prints.
 */
function threadSplit(prefix) {
  const split = { turbofan: 0, gc: 0 };
  // Thread numbers have gaps (threads that ran nothing while counting write no file).
  const files = readdirSync(dirname(prefix)).filter((name) => name.startsWith(`${basename(prefix)}-`));
  for (const file of files) {
    const text = execFileSync('callgrind_annotate', ['--threshold=100', join(dirname(prefix), file)], {
      encoding: 'utf8',
      maxBuffer: 256 * 2 ** 20,
    });
    for (const line of text.split('\n')) {
      const match = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
      if (!match || match[2].startsWith('PROGRAM TOTALS')) continue;
      const count = Number(match[1].replaceAll(',', ''));
      if (/v8::internal::compiler::/.test(match[2])) split.turbofan += count;
      else if (/v8::internal::(Scaveng|ConcurrentMarking|Marking|MarkCompact|Sweeper|Heap::|Evacuat|MinorMarkCompact)|heap::base::/.test(match[2])) split.gc += count;
    }
  }
  return split;
}

/** Runs `tasks` (functions returning promises) `jobs` at a time, in order. */
async function pool(tasks) {
  const results = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, tasks.length) }, worker));
  return results;
}

function fmt(n, digits = 0) {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

async function main() {
  const started = Date.now();
  const plan = [];
  for (let round = 0; round < repeat; round++) {
    for (const client of clients) for (const pattern of scenarios) plan.push({ round, client, pattern });
  }
  process.stderr.write(`${plan.length} runs under callgrind, ${jobs} at a time: ${fmt(warm)} calls to warm up, ${fmt(calls)} counted ...\n`);
  const measured = await pool(
    plan.map((step) => async () => {
      const figures = await measure(step.client, step.pattern);
      const file = args.keep ? ` (${figures.file})` : '';
      process.stderr.write(`  #${step.round + 1} ${step.client.name} ${step.pattern}: ${fmt(figures.instructions / calls)} instructions per message${file}\n`);
      return { ...step, ...figures };
    }),
  );
  if (args.keep) process.stderr.write(`callgrind's files are kept in ${workDir} (callgrind_annotate <file>)\n`);
  else rmSync(workDir, { recursive: true, force: true });

  const find = (round, name, scenario) => measured.find((m) => m.round === round && m.client.name === name && m.pattern === scenario);
  const perMessage = (round, name, scenario) => find(round, name, scenario).instructions / calls;
  const failures = measured.filter((m) => m.lost !== 0 || m.duplicates !== 0 || m.errors !== 0);
  const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
  const rounds = Array.from({ length: repeat }, (_, round) => round);

  const out = [
    `# Client instructions per message (callgrind): ${fmt(calls)} calls counted after ${fmt(warm)}`,
    '',
    `| scenario | client | instructions per message | ratio to the floor${repeat > 1 ? ' (per repetition)' : ''} | all threads, per message | all threads, ratio |${args.cold ? ' TurboFan, per message | GC, per message |' : ''}`,
    `|---|---|---:|---|---:|---|${args.cold ? '---:|---:|' : ''}`,
  ];
  const rows = {};
  for (const scenario of scenarios) {
    for (const client of clients) {
      const values = rounds.map((round) => perMessage(round, client.name, scenario));
      const ratios = rounds.map((round) => values[round] / perMessage(round, 'floor', scenario));
      const allValues = rounds.map((round) => find(round, client.name, scenario).allThreads / calls);
      const all = mean(allValues);
      const allRatios = rounds.map((round) => allValues[round] / (find(round, 'floor', scenario).allThreads / calls));
      const turbofan = args.cold ? mean(rounds.map((round) => find(round, client.name, scenario).turbofan / calls)) : undefined;
      const gc = args.cold ? mean(rounds.map((round) => find(round, client.name, scenario).gc / calls)) : undefined;
      out.push(
        `| ${scenario} | ${client.label} | ${fmt(mean(values))} | ${ratios.map((r) => r.toFixed(3)).join(', ')} | ${fmt(all)} | ${allRatios.map((r) => r.toFixed(3)).join(', ')} |` +
        (args.cold ? ` ${fmt(turbofan)} | ${fmt(gc)} |` : ''),
      );
      rows[`${scenario}: ${client.label}`] = {
        turbofanPerMessage: rounded(turbofan),
        gcPerMessage: rounded(gc),
        instructionsPerMessage: rounded(mean(values)),
        ratioToFloor: rounded(mean(ratios), 3),
        ratios: ratios.map((r) => rounded(r, 3)),
        allThreadsPerMessage: rounded(all),
        allThreadsRatios: allRatios.map((r) => rounded(r, 3)),
      };
    }
    if (args.base !== undefined) {
      const ab = rounds.map((round) => perMessage(round, 'eventrelay', scenario) / perMessage(round, 'base', scenario));
      const allAb = rounds.map((round) => find(round, 'eventrelay', scenario).allThreads / find(round, 'base', scenario).allThreads);
      out.push(`| ${scenario} | this build / --base | | ${ab.map((r) => r.toFixed(3)).join(', ')} | | ${allAb.map((r) => r.toFixed(3)).join(', ')} |${args.cold ? ' | |' : ''}`);
      rows[`${scenario}: this build / the --base build`] = { ratio: rounded(mean(ab), 3), ratios: ab.map((r) => rounded(r, 3)), allThreadsRatios: allAb.map((r) => rounded(r, 3)) };
    }
  }
  out.push('', `${((Date.now() - started) / 1000).toFixed(0)} s; load average ${os.loadavg()[0].toFixed(1)}`);
  console.log(out.join('\n'));
  for (const f of failures) {
    console.log(`FAIL ${f.client.name} ${f.pattern} #${f.round + 1}: lost ${f.lost}, duplicated ${f.duplicates}, errors ${f.errors} (${f.firstError})`);
  }
  if (failures.length > 0) process.exitCode = 1;
  else {
    recordResult(args.cold ? 'client-instructions/cold' : 'client-instructions', {
      script: 'bench/client-instructions.mjs',
      command: commandLine(),
      setup: {
        warmUpCalls: warm,
        countedCalls: calls,
        repeat,
        flushAt: 20,
        paced: '10 calls per 2 ms timer wake-up',
        burst: 'chunks of 1,000 calls, setImmediate between',
        ...(nodeArgs.length ? { nodeArgs: nodeArgs.join(' ') } : {}),
      },
      rows,
    });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
