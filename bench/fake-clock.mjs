// A clock that moves only when told: loaded before `eventrelay serve` (`node --import
// bench/fake-clock.mjs ...`) by forwarder-instructions.mjs, so that the forwarder does the same work
// however slowly valgrind and a busy machine make it run. Date.now() and performance.now() return
// the fake time; setTimeout and setInterval (the global ones, which the forwarder, its clock and
// undici use) wait for it. Each SIGUSR2 moves the time FAKE_CLOCK_STEP ms (default 10) on and runs
// the timers due by then, in the order of their due time, each in its own turn of the event loop.
// Everything else (sockets, setImmediate, SQLite) runs as usual.
//
// Not a general fake: node's own internal timers (an HTTP server's keep-alive and header timeouts)
// stay on the real clock; the harness avoids them (a connection per request, receivers without a
// keep-alive timeout).
const STEP = Number(process.env.FAKE_CLOCK_STEP ?? 10);
const realNow = Date.now;
const realSetImmediate = setImmediate;
const origin = performance.now();
let now = realNow();
const start = now;
let sequence = 0;
/** The armed timers, by id. */
const armed = new Map();

class FakeTimeout {
  constructor(callback, ms, args, repeat) {
    this.callback = callback;
    this.args = args;
    this.ms = Math.max(1, Number(ms) || 1);
    this.repeat = repeat;
    this.id = ++sequence;
    this.refed = true;
    this.arm();
  }

  arm() {
    this.due = now + this.ms;
    this.order = ++sequence;
    armed.set(this.id, this);
  }

  ref() {
    this.refed = true;
    return this;
  }

  unref() {
    this.refed = false;
    return this;
  }

  hasRef() {
    return this.refed;
  }

  refresh() {
    if (armed.has(this.id)) this.arm();
    return this;
  }

  close() {
    armed.delete(this.id);
    return this;
  }

  [Symbol.toPrimitive]() {
    return this.id;
  }
}

const cancel = (timer) => {
  if (timer instanceof FakeTimeout) armed.delete(timer.id);
  else if (typeof timer === 'number') armed.delete(timer);
};

globalThis.setTimeout = (callback, ms, ...args) => new FakeTimeout(callback, ms, args, false);
globalThis.setInterval = (callback, ms, ...args) => new FakeTimeout(callback, ms, args, true);
globalThis.clearTimeout = cancel;
globalThis.clearInterval = cancel;
Date.now = () => now;
performance.now = () => origin + (now - start);

/** Runs the timers due by `until`, earliest first, one per turn of the event loop. */
function runDue(until) {
  let next;
  for (const t of armed.values()) if (t.due <= until && (next === undefined || t.due < next.due || (t.due === next.due && t.order < next.order))) next = t;
  if (next === undefined) {
    now = until;
    return;
  }
  if (next.due > now) now = next.due;
  if (next.repeat) next.arm();
  else armed.delete(next.id);
  try {
    next.callback(...next.args);
  } finally {
    realSetImmediate(() => runDue(until));
  }
}

process.on('SIGUSR2', () => runDue(now + STEP));
