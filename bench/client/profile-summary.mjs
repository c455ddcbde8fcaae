// Reads the V8 CPU profile(s) a client run wrote with --cpu-prof (run.mjs --profile) and
// lists where the self time went: by origin (package, eventrelay's dist, Node internals,
// GC) and by function. Also usable alone: node bench/client/profile-summary.mjs <dir>
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

function origin(url) {
  if (!url) return '(native / V8)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.includes('/dist/')) return 'eventrelay (dist)';
  if (url.includes('/bench/client/')) return 'benchmark harness';
  if (url.startsWith('node:')) return 'node internals';
  return url;
}

function top(map, n) {
  return [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
}

export async function summarizeProfile(dir, n = 15) {
  let files;
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  } catch {
    return `  (no profile in ${dir})`;
  }
  const byOrigin = new Map();
  const byFunction = new Map();
  let total = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'));
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    for (let i = 0; i < profile.samples.length; i++) {
      const node = nodes.get(profile.samples[i]);
      const dt = profile.timeDeltas[i] ?? 0;
      const { functionName, url, lineNumber } = node.callFrame;
      if (functionName === '(idle)' || functionName === '(program)') continue;
      total += dt;
      const o = functionName === '(garbage collector)' ? '(garbage collector)' : origin(url);
      byOrigin.set(o, (byOrigin.get(o) ?? 0) + dt);
      const where = url ? `${url.replace(/^.*\/(node_modules|dist|bench)\//, '$1/')}:${lineNumber + 1}` : '';
      const key = `${functionName || '(anonymous)'} ${where}`.trim();
      byFunction.set(key, (byFunction.get(key) ?? 0) + dt);
    }
  }
  const pct = (v) => `${((100 * v) / (total || 1)).toFixed(1).padStart(5)}%`;
  const lines = [`  profile ${dir}: ${(total / 1000).toFixed(0)} ms busy`];
  for (const [name, v] of top(byOrigin, 8)) lines.push(`    ${pct(v)}  ${name}`);
  lines.push('    --- functions by self time');
  for (const [name, v] of top(byFunction, n)) lines.push(`    ${pct(v)}  ${name}`);
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(await summarizeProfile(process.argv[2] ?? '.', Number(process.argv[3] ?? 25)));
}
