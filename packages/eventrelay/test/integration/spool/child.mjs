// A client process for the spool's process tests, on the built package (dist/). It calls track()
// with messageIds of its own and tells the parent on stdout, synchronously, in lines:
//   A <id> <id> ...   accepted: the calls of a turn, written after that turn's spool write
//   D <id> <id> ...   delivered: callbacks without error, written after the turn that acked them
//   R <count>         the client took over <count> messages of processes that were gone
//   E <code>          an error event (spool and delivery errors)
//   F                 every call of the scenario was made
// Environment: DIST (file URL of dist/index.js), URL (the sink), DIR, PREFIX (of the ids),
// MODE burst | paced | idle | crash | exit (COUNT calls in one turn, then an uncaught exception or
// process.exit(3) in a later turn) | exit-now | crash-now (COUNT calls, reported, then process.exit(3)
// or an uncaught exception in the same turn) | script (COUNT calls, then nothing: the process ends when the client is done), COUNT (calls),
// SCAN (ms between takeover scans), SYNC none | always,
// KEY (the write key: the sink tells the processes apart by it).
// SIGTERM: closeAndFlush, then exit 0.
import { writeSync } from 'node:fs';

const env = process.env;
const { Analytics } = await import(env.DIST);

/** Writes a whole line to stdout now; a full pipe (EAGAIN) is waited out, never a reason to crash. */
function say(line) {
  const bytes = Buffer.from(`${line}\n`);
  for (let done = 0; done < bytes.length;) {
    try {
      done += writeSync(1, bytes, done);
    } catch (error) {
      if (error.code !== 'EAGAIN') throw error;
    }
  }
}
const client = new Analytics(
  {
    writeKey: env.KEY ?? 'spool-test-key',
    endpoint: env.URL,
    flushAt: 20,
    flushInterval: 20,
    maxRetries: 100_000,
    minRetryDelay: 20,
    maxRetryDelay: 100,
    spool: { dir: env.DIR, sync: env.SYNC ?? 'none' },
  },
  { spool: { scanInterval: Number(env.SCAN ?? 10_000) } },
);
client.on('error', (error) => say(`E ${error.code}`));
client.on('recover', (info) => say(`R ${info.messages}`));

let accepted = [];
let delivered = [];
let reporting = false;
/** After the current turn (and its spool write, a microtask) is over. */
function report() {
  if (reporting) return;
  reporting = true;
  setImmediate(() => {
    reporting = false;
    if (accepted.length > 0) say(`A ${accepted.join(' ')}`);
    if (delivered.length > 0) say(`D ${delivered.join(' ')}`);
    accepted = [];
    delivered = [];
  });
}

let made = 0;
function call() {
  const id = `${env.PREFIX}-${made++}`;
  client.track({ userId: `user-${made % 7}`, event: 'Spool Test', messageId: id, properties: { n: made } }, (error) => {
    if (error) return;
    delivered.push(id);
    report();
  });
  accepted.push(id);
}

const count = Number(env.COUNT ?? 0);
if (env.MODE === 'burst') {
  // 500 calls a turn, as fast as the loop turns.
  const chunk = () => {
    for (let i = 0; i < 500 && made < count; i++) call();
    report();
    if (made < count) setImmediate(chunk);
    else setImmediate(() => say('F'));
  };
  chunk();
} else if (env.MODE === 'crash' || env.MODE === 'exit') {
  for (let i = 0; i < count; i++) call();
  report();
  // Two turns later: after the turn's write and after the report.
  setImmediate(() =>
    setImmediate(() => {
      if (env.MODE === 'exit') process.exit(3);
      throw new Error('a crash in a later turn');
    }),
  );
} else if (env.MODE === 'exit-now' || env.MODE === 'crash-now') {
  for (let i = 0; i < count; i++) call();
  say(`A ${accepted.join(' ')}`);
  if (env.MODE === 'exit-now') process.exit(3);
  throw new Error('a crash in the turn of the calls');
} else if (env.MODE === 'script') {
  for (let i = 0; i < count; i++) call();
  report();
} else if (env.MODE === 'paced') {
  // 5 calls every 2 ms.
  const tick = () => {
    for (let i = 0; i < 5 && made < count; i++) call();
    report();
    if (made < count) setTimeout(tick, 2);
    else setImmediate(() => say('F'));
  };
  tick();
}

// Stay up until killed or told to end (a script ends by itself).
const alive = env.MODE === 'script' ? undefined : setInterval(() => {}, 60_000);
process.on('SIGTERM', () => {
  client.closeAndFlush({ timeout: 20_000 }).then(() => {
    clearInterval(alive);
    report();
    setImmediate(() => process.exit(0));
  });
});
