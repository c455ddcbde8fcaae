// CPU time of another process, from /proc (Linux): what the forwarder benchmarks measure their
// forwarders and database servers with.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

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
