// Where one forwarder process spent its CPU during a measured phase, per message, from a
// system-wide `perf record` of a forwarder.mjs run: the samples of one process (every thread) in
// one time range, charged by category (JavaScript and Node, SQLite, other system calls, GC, the
// optimizing compiler on the main thread or V8's helper threads), by the nearest frame of
// eventrelay's or the floor's own code, and inclusively by function.
//
//   NODE_OPTIONS=--perf-basic-prof BENCH_MODES=floor-sqlite,sqlite-full node bench/forwarder.mjs &
//   perf record -a -g -k mono -F 1999 -o /tmp/perf.data -- sleep 120
//   node bench/perf-profile.mjs /tmp/perf.data <pid> <start,end> [messages=20000] [rows=30]
//
// forwarder.mjs prints each mode's pids and its throughput phase on the monotonic clock that
// `perf record -k mono` stamps samples with. FOCUS=<text>: also the leaf functions under the own
// frames whose name contains it.
import { execFileSync } from 'node:child_process';

const [data, pid, range, messagesArg = '20000', rowsArg = '30'] = process.argv.slice(2);
if (data === undefined || pid === undefined || range === undefined) {
  console.error('usage: node bench/perf-profile.mjs <perf.data> <pid> <start,end> [messages] [rows]');
  process.exit(2);
}
const HZ = 1999;
const messages = Number(messagesArg);
const rows = Number(rowsArg);
const focus = process.env.FOCUS;
const OWN = /(packages\/forwarder\/dist\/|packages\/eventrelay\/dist\/|bench\/forwarder-floor\.mjs|bench\/least-log\.mjs|bench\/webhook-body\.mjs)/;
const LIBRARY = /node_modules\/((?:@[^/]+\/)?[^/]+)/;

const script = execFileSync('perf', ['script', '-i', data, '--pid', pid, '--time', range, '-F', 'pid,tid,time,ip,sym,dso'], {
  encoding: 'utf8',
  maxBuffer: 1 << 30,
  stdio: ['ignore', 'pipe', 'ignore'],
});

const byCategory = new Map();
const byOwnFrame = new Map();
const inclusive = new Map();
const focused = new Map();
let samples = 0;
const add = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
const clean = (sym) => sym.replace(/^JS:[*~^]?/, '').replace(/(file:\/\/)?\/\S*?\/(packages|bench|node_modules)\//, '$2/');

function category(main, frames) {
  const all = frames.map((f) => f.sym).join(' | ');
  if (!main) {
    if (/compiler::|Turbofan|Maglev|OptimizedCompilationJob|Compiler::/.test(all)) return 'helper threads: optimizing compiler';
    if (/Heap|Marking|Sweeper|Scavenge|Evacuat|GC/.test(all)) return 'helper threads: GC';
    return 'helper threads: other';
  }
  if (/Heap::|Scavenge|MarkCompact|GCTracer|Sweeper/.test(all)) return 'main thread: GC';
  if (/Compiler|Turbofan|Maglev|compiler::/.test(all)) return 'main thread: compiler';
  if (frames.some((f) => f.dso.includes('better_sqlite3'))) return 'main thread: SQLite (its system calls included)';
  if (frames[0]?.dso.includes('kernel')) return 'main thread: other system calls';
  return 'main thread: JavaScript and Node';
}

for (const block of script.split('\n\n')) {
  const lines = block.split('\n').filter((l) => l.trim() !== '');
  const head = /^\s*(\d+)\/(\d+)/.exec(lines[0] ?? '');
  if (head === null) continue;
  samples++;
  const frames = lines.slice(1).map((l) => {
    const m = /^\s*[0-9a-f]+\s+(.*)\s+\((.*)\)\s*$/.exec(l);
    return m === null ? { sym: l.trim(), dso: '' } : { sym: m[1], dso: m[2] };
  });
  const main = head[1] === head[2];
  add(byCategory, category(main, frames));
  const own = frames.find((f) => OWN.test(f.sym));
  let key;
  if (own !== undefined) key = clean(own.sym);
  else if (!main) key = '(helper threads)';
  else {
    const library = frames.map((f) => LIBRARY.exec(f.sym)).find(Boolean);
    key = library ? `(library) ${library[1]}` : '(Node, V8, the kernel: no own frame)';
  }
  add(byOwnFrame, key);
  if (focus !== undefined && key.includes(focus)) add(focused, `${frames[0]?.sym.slice(0, 100)} [${frames[0]?.dso.split('/').pop()}]`);
  const seen = new Set();
  for (const f of frames) {
    if (!OWN.test(f.sym) && !LIBRARY.test(f.sym)) continue;
    const name = clean(f.sym);
    if (seen.has(name)) continue;
    seen.add(name);
    add(inclusive, name);
  }
}

const us = (count) => ((count / HZ) * 1e6 / messages).toFixed(2).padStart(7);
const top = (map, n) => [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
console.log(`${samples} samples: ${us(samples).trim()} µs of CPU per message (at ${HZ} Hz, ${messages} messages)`);
console.log('--- by category (µs per message)');
for (const [k, v] of top(byCategory, 20)) console.log(us(v), k);
console.log('--- by nearest own frame');
for (const [k, v] of top(byOwnFrame, rows)) console.log(us(v), k);
console.log('--- inclusive, own and library functions');
for (const [k, v] of top(inclusive, rows)) console.log(us(v), k);
if (focus !== undefined) {
  console.log(`--- leaf functions under own frames matching ${focus}`);
  for (const [k, v] of top(focused, rows)) console.log(us(v), k);
}
