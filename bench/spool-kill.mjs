#!/usr/bin/env node
// What the client's disk spool survives, measured: processes that track() with `spool` on are
// killed with SIGKILL at random points, one after the other on one directory (in bursts of 500
// calls a turn and in a paced loop, the sink alternately down and up), then a last process with
// the sink up sends what they left. Every call a process reported accepted (after its turn's
// write) must arrive; repeats can only come from batches in flight at a kill.
//
//   npm run build && node bench/spool-kill.mjs [--kills 40] [--sync none,always] [--seed N]
//   BENCH_WRITE_RESULTS=1: the table recorded in bench/results.json (`spool-kill`)
//
// The processes are the spool tests' own client (packages/eventrelay/test/integration/spool/child.mjs)
// on the build (dist/). Bounded: each kill comes after at most 4,000 calls; the last process gets 60 s.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { commandLine, recordResult } from './results.mjs';
import { seeded } from '../test/helpers/seeded.mjs';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const CHILD = here('../packages/eventrelay/test/integration/spool/child.mjs');
const DIST = pathToFileURL(here('../packages/eventrelay/dist/index.js')).href;

const { values: args } = parseArgs({
  options: {
    kills: { type: 'string', default: '40' },
    sync: { type: 'string', default: 'none,always' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
  },
});

async function startSink() {
  const state = { up: false, counts: new Map(), arrivals: 0 };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (!state.up) return res.writeHead(503).end();
      for (const { messageId } of JSON.parse(Buffer.concat(chunks).toString()).batch) {
        state.counts.set(messageId, (state.counts.get(messageId) ?? 0) + 1);
        state.arrivals++;
      }
      res.writeHead(200).end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${server.address().port}`;
  state.close = () => new Promise((resolve) => server.close(resolve));
  return state;
}

function client(env) {
  const child = spawn(process.execPath, [CHILD], { env: { PATH: process.env.PATH, DIST, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const state = { child, accepted: new Set(), torn: 0, finished: false };
  state.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  let buffered = '';
  child.stdout.on('data', (chunk) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop();
    for (const line of lines) {
      const [kind, ...words] = line.split(' ');
      if (kind === 'A') for (const id of words) state.accepted.add(id);
      else if (kind === 'E' && words[0] === 'ERR_SPOOL_CORRUPT') state.torn++;
      else if (kind === 'F') state.finished = true;
    }
  });
  return state;
}

async function until(condition, ms) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(5);
  }
  return true;
}

async function run(sync, kills, random) {
  const dir = mkdtempSync(join(os.tmpdir(), 'eventrelay-spool-kill-'));
  const sink = await startSink();
  const accepted = new Set();
  let torn = 0;
  const started = Date.now();
  for (let k = 0; k < kills; k++) {
    sink.up = k % 2 === 0;
    const burst = k % 4 < 2;
    const count = burst ? 4000 : 1500;
    const c = client({ URL: sink.url, DIR: dir, PREFIX: `k${k}`, MODE: burst ? 'burst' : 'paced', COUNT: String(count), SYNC: sync });
    const threshold = 1 + Math.floor(random() * count * 0.9);
    await until(() => c.accepted.size >= threshold || c.finished, 30_000);
    await sleep(Math.floor(random() * 20));
    c.child.kill('SIGKILL');
    await c.exited;
    // Let the pipe's last lines in: a line is written only after the turn's spool write.
    await sleep(20);
    for (const id of c.accepted) accepted.add(id);
    torn += c.torn;
  }
  sink.up = true;
  const last = client({ URL: sink.url, DIR: dir, PREFIX: 'last', MODE: 'idle', SYNC: sync });
  const complete = await until(() => [...accepted].every((id) => sink.counts.has(id)), 60_000);
  last.child.kill('SIGTERM');
  await last.exited;
  torn += last.torn;
  const lost = [...accepted].filter((id) => !sink.counts.has(id)).length;
  const repeats = sink.arrivals - sink.counts.size;
  const left = readdirSync(dir).length;
  await sink.close();
  rmSync(dir, { recursive: true, force: true });
  return { sync, kills, accepted: accepted.size, lost, repeats, torn, left, complete, seconds: (Date.now() - started) / 1000 };
}

const seed = Number(args.seed);
const random = seeded(seed);
console.log(`# Spool under SIGKILL\n\n${new Date().toISOString().slice(0, 10)}, Node.js ${process.version}, ${os.platform()} ${os.arch()}, ${os.cpus().length} cores; seed ${seed}\n`);
console.log('| sync | kills | calls accepted before a kill | lost | delivered twice | torn records skipped | files left | seconds |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
const rows = {};
for (const sync of args.sync.split(',')) {
  const r = await run(sync, Number(args.kills), random);
  rows[sync] = {
    kills: r.kills,
    accepted: r.accepted,
    lost: r.lost,
    deliveredTwice: r.repeats,
    tornSkipped: r.torn,
    filesLeft: r.left,
    seconds: Math.round(r.seconds),
    complete: r.complete,
  };
  const fmt = (n) => n.toLocaleString('en-US');
  console.log(`| \`${r.sync}\` | ${r.kills} | ${fmt(r.accepted)} | ${fmt(r.lost)} | ${fmt(r.repeats)} | ${r.torn} | ${r.left} | ${r.seconds.toFixed(0)} |`);
  if (!r.complete) console.log(`(the last process did not deliver everything within 60 s)`);
}
recordResult('spool-kill', { script: 'bench/spool-kill.mjs', command: commandLine(), setup: { kills: Number(args.kills), seed }, rows });
