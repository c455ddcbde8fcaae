// One client, one scenario, in a fresh process (forked by ../run.mjs), so that CPU time and
// peak RSS belong to this client alone. Protocol over IPC:
//   parent -> { type: 'go', client, scenario, run, endpoint, flushAt, flushInterval, maxQueueSize, closeTimeout }
//   child  -> { type: 'enqueued', startedAt, enqueueMs }   after the last track call returned
//   child  -> { type: 'settled', closeMs, closeError }      when the client's flush/close promise settled
//   parent -> { type: 'stop' }                               when the sink has everything, or gave up
//   child  -> { type: 'result', cpuUs, peakRssBytes, errors, firstError, throws }, then exits
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { BURST_CHUNK, properties } from './scenarios.mjs';

const state = { cpuStart: undefined, errors: 0, firstError: undefined, throws: 0 };

function onError(error) {
  state.errors++;
  state.firstError ??= String(error?.message ?? error).slice(0, 200);
}

/** Peak resident set size of this process: the kernel's high-water mark where there is one. */
function kernelPeakRss() {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

// Elsewhere (not Linux), sample the RSS every 5 ms instead.
if (kernelPeakRss() === undefined) {
  state.sampledPeak = process.memoryUsage.rss();
  setInterval(() => {
    state.sampledPeak = Math.max(state.sampledPeak, process.memoryUsage.rss());
  }, 5).unref();
}

/**
 * CPU ticks ([user, system], 1/100 s) of each of this process's threads: `main`, and the others
 * by thread id (V8's compiler and GC helpers, libuv's pool, which Node 20 does not name): where
 * run.mjs's CPU goes besides the main thread. Linux only; undefined elsewhere.
 */
function threadTicks() {
  try {
    const byThread = {};
    for (const tid of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byThread[Number(tid) === process.pid ? 'main' : tid] = [Number(fields[11]), Number(fields[12])];
    }
    return byThread;
  } catch {
    return undefined;
  }
}

function peakRssBytes() {
  return kernelPeakRss() ?? state.sampledPeak;
}

function call(client, run, seq) {
  try {
    client.track(`user-${seq % 5000}`, 'Order Completed', properties(run, seq));
  } catch (error) {
    state.throws++;
    onError(error);
  }
}

/** Calls in chunks; returns the milliseconds spent inside the chunks (the caller's blocked time). */
async function burst(client, run, count) {
  let blocked = 0;
  for (let seq = 0; seq < count;) {
    const t0 = performance.now();
    const end = Math.min(count, seq + BURST_CHUNK);
    for (; seq < end; seq++) call(client, run, seq);
    blocked += performance.now() - t0;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return blocked;
}

/** Calls at `rate` per second, catching up on every wake-up; returns the blocked milliseconds. */
async function paced(client, run, count, rate) {
  let blocked = 0;
  const start = performance.now();
  for (let seq = 0; seq < count;) {
    const due = Math.min(count, Math.floor(((performance.now() - start) * rate) / 1000));
    const t0 = performance.now();
    for (; seq < due; seq++) call(client, run, seq);
    blocked += performance.now() - t0;
    if (seq < count) await sleep(2);
  }
  return blocked;
}

async function go(message) {
  const { scenario, run } = message;
  const adapter = await import(`./adapters/${message.client}.mjs`);
  state.threadsStart = threadTicks();
  state.cpuStart = process.cpuUsage();
  const client = await adapter.create({ ...message, onError });
  const startedAt = Date.now();
  const enqueueMs =
    scenario.rate > 0 ? await paced(client, run, scenario.count, scenario.rate) : await burst(client, run, scenario.count);
  process.send({ type: 'enqueued', startedAt, enqueueMs });
  const t0 = performance.now();
  let closeError;
  try {
    await client.close();
  } catch (error) {
    closeError = String(error?.message ?? error).slice(0, 200);
  }
  process.send({ type: 'settled', closeMs: performance.now() - t0, closeError });
}

/** Milliseconds of CPU since `start` (threadTicks()), user and system: the main thread's, and the other threads' together. */
function threadsSince(start) {
  const now = threadTicks();
  if (now === undefined || start === undefined) return undefined;
  const ms = { mainUser: 0, mainSystem: 0, othersUser: 0, othersSystem: 0 };
  for (const [name, [user, system]] of Object.entries(now)) {
    const [user0, system0] = start[name] ?? [0, 0];
    ms[name === 'main' ? 'mainUser' : 'othersUser'] += (user - user0) * 10;
    ms[name === 'main' ? 'mainSystem' : 'othersSystem'] += (system - system0) * 10;
  }
  return ms;
}

function stop() {
  const cpu = process.cpuUsage(state.cpuStart);
  const result = {
    type: 'result',
    cpuUs: state.cpuStart ? cpu.user + cpu.system : undefined,
    peakRssBytes: peakRssBytes(),
    errors: state.errors,
    firstError: state.firstError,
    throws: state.throws,
    threads: threadsSince(state.threadsStart),
  };
  process.send(result, () => process.exit(0));
}

process.on('message', (message) => {
  if (message.type === 'go') {
    go(message).catch((error) => {
      process.send({ type: 'crashed', error: String(error?.stack ?? error).slice(0, 500) });
    });
  } else if (message.type === 'stop') stop();
});
// Clients that reject a promise nobody awaits must not end the run: count it as an error.
process.on('unhandledRejection', onError);
process.send({ type: 'ready' });
