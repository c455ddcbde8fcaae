// A client process for the spool's process tests, on the built package (dist/). It calls track()
// with messageIds of its own and tells the parent on stdout, synchronously, in lines:
//   A <id> <id> ...   accepted: the calls of a turn, written after that turn's spool write
//   X <id> <id> ...   refused: calls of a turn whose callback got ERR_SPOOL_WRITE (the disk did not take them)
//   D <id> <id> ...   delivered: callbacks without error, written after the turn that acked them
//   R <count>         the client took over <count> messages of processes that were gone
//   E <code>          an error event (spool and delivery errors)
//   F                 every call of the scenario was made
// Environment: DIST (file URL of dist/index.js), URL (the sink), DIR, PREFIX (of the ids),
// MODE burst | paced | idle | crash | exit (COUNT calls in one turn, then an uncaught exception or
// process.exit(3) in a later turn) | exit-now | crash-now (COUNT calls, reported, then process.exit(3)
// or an uncaught exception in the same turn) | script (COUNT calls, then nothing: the process ends when the client is done), COUNT (calls),
// SCAN (ms between takeover scans), SYNC none | always,
// KEY (the write key: the sink tells the processes apart by it), DISK_BYTES (a disk that takes
// this many bytes of writes, then answers ENOSPC: an fs seam), ON_WRITE_ERROR refuse | memory.
// SIGTERM: closeAndFlush, then exit 0.
import * as nodeFs from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

const { writeSync } = nodeFs;

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
/** The spool's runtime seam over node:fs, on a disk of `bytes`: past them, every write answers ENOSPC. */
function smallDisk(bytes) {
  let used = 0;
  const full = (syscall) => Object.assign(new Error(`ENOSPC: no space left on device, ${syscall} (test seam)`), { code: 'ENOSPC', syscall });
  const fs = {
    ...nodeFs,
    writeSync(fd, buffer, offset, length, position) {
      if (used + length > bytes) throw full('write');
      used += length;
      return nodeFs.writeSync(fd, buffer, offset, length, position);
    },
    writeFileSync(path, data, options) {
      if (used + data.length > bytes) {
        // As a real full disk does with O_CREAT|O_EXCL: the file is created, its bytes are not written.
        nodeFs.writeFileSync(path, '', options);
        throw full('write');
      }
      used += data.length;
      nodeFs.writeFileSync(path, data, options);
    },
  };
  const host = {
    pid: process.pid,
    hostname: hostname(),
    isRunning(pid) {
      try {
        process.kill(pid, 0);
        return true;
      } catch (error) {
        return error.code !== 'ESRCH';
      }
    },
    startOf(pid) {
      try {
        const stat = nodeFs.readFileSync(`/proc/${pid}/stat`, 'latin1');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
      } catch {
        return undefined;
      }
    },
  };
  return { fs, host, join };
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
    spool: { dir: env.DIR, sync: env.SYNC ?? 'none', onWriteError: env.ON_WRITE_ERROR ?? 'refuse' },
  },
  { spool: { scanInterval: Number(env.SCAN ?? 10_000), runtime: env.DISK_BYTES ? smallDisk(Number(env.DISK_BYTES)) : undefined } },
);
client.on('error', (error) => say(`E ${error.code}`));
client.on('recover', (info) => say(`R ${info.messages}`));

let accepted = [];
let delivered = [];
const refused = new Set();
let reporting = false;
/** After the current turn (and its spool write, a microtask) is over. */
function report() {
  if (reporting) return;
  reporting = true;
  setImmediate(() => {
    reporting = false;
    // A call is accepted when track() did not refuse it: its refusal came in its turn's write.
    const gone = accepted.filter((id) => refused.has(id));
    accepted = accepted.filter((id) => !refused.has(id));
    refused.clear();
    if (gone.length > 0) say(`X ${gone.join(' ')}`);
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
    if (error?.code === 'ERR_SPOOL_WRITE') refused.add(id);
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
