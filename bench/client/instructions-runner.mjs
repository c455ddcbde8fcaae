// One client, one call pattern, run under `valgrind --tool=callgrind --instr-atstart=no` by
// ../client-instructions.mjs. The calls are those of run.mjs (the same adapters and properties);
// their pace is not the clock's, which valgrind slows fifty-fold, but a fixed number of calls
// per turn of the event loop, so that two runs make the same calls in the same turns:
//
//   burst: chunks of 1,000 calls with a setImmediate between chunks (as run.mjs's burst);
//   paced: 10 calls per wake-up of a 2 ms timer (run.mjs's 5,000/s, woken every 2 ms).
//
// First `warm` calls, uncounted, in rounds of `calls`, until V8 has compiled the code the calls
// run; then, between
// "warm" and "done" on stdout, `calls` more, which the parent counts: it switches callgrind's
// instrumentation on when it reads "warm" and then creates `<flag>.go`, and off when it reads
// "done", then creates `<flag>.exit`.
// Both phases end once every call is delivered (the adapter's flush), so that the counted one
// holds whole batches, their requests and answers.
//
//   node bench/client/instructions-runner.mjs <client> <burst|paced> <warm> <calls> <endpoint> <run> <flag>
import { existsSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { BURST_CHUNK, properties } from './scenarios.mjs';

/** Calls per wake-up in the paced pattern: 5,000 calls/s with a wake-up every 2 ms. */
export const PACED_CHUNK = 10;

const [client, pattern, warmText, callsText, endpoint, run, flag] = process.argv.slice(2);
const warm = Number(warmText);
const calls = Number(callsText);
if (!['burst', 'paced'].includes(pattern) || !(warm >= 0) || !(calls > 0) || !endpoint || !run || !flag) {
  console.error('usage: instructions-runner.mjs <client> <burst|paced> <warm> <calls> <endpoint> <run> <flag>');
  process.exit(2);
}

// The parent's word is a file it creates (`<flag>.go`, then `<flag>.exit`), waited for by a
// synchronous loop that sleeps in Atomics.wait; the child's, a line written straight to fd 1. No
// stream, signal or listener of this process's own: Node shares their code with the HTTP
// sockets, and V8 would recompile it in the counted phase.
const nap = new Int32Array(new SharedArrayBuffer(4));
function waitFor(file) {
  while (!existsSync(file)) Atomics.wait(nap, 0, 0, 5);
}
const say = (line) => writeSync(1, `${line}\n`);

const state = { errors: 0, throws: 0, firstError: undefined };
const adapter = await import(`./adapters/${client}.mjs`);
const instance = await adapter.create({
  endpoint,
  writeKey: 'bench-write-key',
  flushAt: 20,
  flushInterval: 1000,
  maxQueueSize: 150_000,
  closeTimeout: 600_000,
  // Under valgrind a chunk of 1,000 calls takes seconds: no request may time out meanwhile.
  timeout: 600_000,
  onError: (error) => {
    state.errors++;
    state.firstError ??= String(error?.message ?? error).slice(0, 300);
  },
});

const chunk = pattern === 'paced' ? PACED_CHUNK : BURST_CHUNK;

async function callsFrom(first, count) {
  const last = first + count;
  for (let seq = first; seq < last;) {
    const end = Math.min(last, seq + chunk);
    for (; seq < end; seq++) {
      try {
        instance.track(`user-${seq % 5000}`, 'Order Completed', properties(run, seq));
      } catch {
        state.throws++;
      }
    }
    if (pattern === 'paced') await sleep(2);
    else await new Promise((resolve) => setImmediate(resolve));
  }
  await instance.flush();
}

// The warm-up in rounds like the counted one: each round ends idle, every call delivered, and
// V8 has had the code that resumes after it to optimize (Node's sockets and streams deoptimize
// the first time their objects change shape between rounds).
for (let seq = 0; seq < warm; seq += calls) await callsFrom(seq, Math.min(calls, warm - seq));
say('warm');
waitFor(`${flag}.go`);
await callsFrom(warm, calls);
say('done');
waitFor(`${flag}.exit`);
await instance.close();
say(JSON.stringify({ calls: warm + calls, ...state }));
process.exit(0);
