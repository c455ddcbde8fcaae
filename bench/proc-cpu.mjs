// CPU time of another process, from /proc (Linux): what the forwarder benchmarks measure their
// forwarders and database servers with.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** CPU time (user + system) of a process so far, in ms; 0 once it is gone. */
export function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

/**
 * CPU time so far of a process's main thread and of its other threads, in ms (`main`, `helpers`):
 * in Node the others are V8's (the optimizing compiler, the GC's concurrent work) and libuv's pool,
 * all named `node`, so they are told apart from the main thread only.
 */
export function threadCpuMs(pid) {
  const out = new Map();
  let tids;
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const kind = tid === String(pid) ? 'main' : 'helpers';
      out.set(kind, (out.get(kind) ?? 0) + (Number(fields[11]) + Number(fields[12])) * TICK_MS);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}
