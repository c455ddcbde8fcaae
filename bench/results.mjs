// bench/results.json: the current figure of every benchmark, one entry per benchmark (or per
// scenario of one), so that the documentation can be checked against it
// (test/repo/readme-benchmarks.test.ts). A script records its figures only when run with
// BENCH_WRITE_RESULTS=1: a quick or partial run should not replace a full one by accident.
//
// An entry is { script, date, machine, command, setup, rows: { row: { figure: number } },
// ratios: { what: number } }. Recording replaces the whole entry (its figures come from one run),
// except with `merge`, where each row is a comparison of its own (forwarder-ab.mjs), dated, and
// replaces only the row of the same name. BENCH_RESULTS_KEY replaces the script's benchmark name, for a run that
// measures something else than the script's usual entry (a subset of clients, another warm-up).
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const RESULTS_FILE = fileURLToPath(new URL('./results.json', import.meta.url));

/** Whether this run should record its figures. */
export function writingResults() {
  return process.env.BENCH_WRITE_RESULTS === '1';
}

/** Node, OS and CPU of this machine, as the entries note them; the load average says how quiet it was. */
export function machineNote() {
  const cpus = os.cpus();
  return (
    `Node.js ${process.version}, ${os.platform()} ${os.arch()}, ${cpus.length} cores ` +
    `(${cpus[0]?.model.trim() ?? 'unknown CPU'}), load average ${os.loadavg()[0].toFixed(1)} at the end`
  );
}

/** `value` to `digits` decimals, as a number (the file keeps what the tables show). */
export function rounded(value, digits = 0) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined;
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** The command line that ran this script, with the environment knobs that change what it measures. */
export function commandLine(knobs = []) {
  const env = knobs.filter((name) => process.env[name] !== undefined).map((name) => `${name}=${process.env[name]}`);
  return [...env, 'node', relative(ROOT, process.argv[1]), ...process.argv.slice(2)].join(' ');
}

function readResults(file) {
  if (!existsSync(file)) return {};
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** Drops the figures a run did not measure (undefined, NaN), so that the file holds numbers only. */
function measured(object) {
  if (object === null || typeof object !== 'object' || Array.isArray(object)) return object;
  const out = {};
  for (const [key, value] of Object.entries(object)) {
    if (value === undefined || (typeof value === 'number' && !Number.isFinite(value))) continue;
    out[key] = measured(value);
  }
  return out;
}

/**
 * Records one entry under `benchmark` (`client/burst`, `delivery`, ...) when BENCH_WRITE_RESULTS=1;
 * the date and machine are added here. Returns the key written, or undefined when not writing.
 */
export function recordResult(benchmark, entry, { merge = false, file = RESULTS_FILE } = {}) {
  if (!writingResults() && file === RESULTS_FILE) return undefined;
  const override = process.env.BENCH_RESULTS_KEY;
  const key = override ? benchmark.replace(/^[^/]+/, override) : benchmark;
  const all = readResults(file);
  const { script, ...rest } = entry;
  const fresh = measured({ script, date: new Date().toISOString().slice(0, 10), machine: machineNote(), ...rest });
  if (merge) {
    // Each row is a run of its own here: it carries its date, machine, command and setup, and the
    // entry's (those of its other rows) stay as they were.
    const { date, machine, command, setup } = fresh;
    for (const row of Object.values(fresh.rows ?? {})) Object.assign(row, measured({ date, machine, command, setup }));
    const previous = all[key];
    all[key] = previous === undefined ? fresh : { ...previous, rows: { ...previous.rows, ...fresh.rows } };
  } else {
    all[key] = fresh;
  }
  // Written beside and renamed, so that an interrupted run never leaves half a file.
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(all, null, 2)}\n`);
  renameSync(temporary, file);
  console.error(`bench/results.json: ${key} recorded`);
  return key;
}
