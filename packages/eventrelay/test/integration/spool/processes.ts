import { after, afterEach, before } from 'mocha';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startSink, type Sink } from '../../../../../test/helpers/sink';
import { waitFor } from '../../../../../test/helpers/wait';

export const DIST = resolve('packages/eventrelay/dist/index.js');
const CHILD = resolve(import.meta.dirname, 'child.mjs');

export function requireBuild(): void {
  if (!existsSync(DIST)) throw new Error('packages/eventrelay/dist is missing: run `npm run build -w eventrelay` first (npm test does)');
}

/** A client process (child.mjs) and what it told the parent so far. */
export interface ClientProcess {
  readonly child: ChildProcess;
  /** Ids of calls accepted, reported after their turn's spool write. */
  readonly accepted: Set<string>;
  /** Ids of calls refused because the spool could not write them. */
  readonly refused: Set<string>;
  /** Ids whose callbacks reported delivery, after the turn that acked them. */
  readonly delivered: Set<string>;
  /** Counts of the `recover` events. */
  readonly recovered: number[];
  readonly errors: string[];
  finished: boolean;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
}

export function startClient(env: Record<string, string>): ClientProcess {
  const child = spawn(process.execPath, [CHILD], {
    env: { PATH: process.env.PATH ?? '', DIST: pathToFileURL(DIST).href, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let buffered = '';
  let stderr = '';
  const state: ClientProcess = {
    child,
    accepted: new Set(),
    refused: new Set(),
    delivered: new Set(),
    recovered: [],
    errors: [],
    finished: false,
    exited: new Promise((done) => child.on('close', (code, signal) => done({ code, signal }))),
    output: () => stderr,
  };
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      const [kind, ...words] = line.split(' ');
      if (kind === 'A') for (const id of words) state.accepted.add(id);
      else if (kind === 'X') for (const id of words) state.refused.add(id);
      else if (kind === 'D') for (const id of words) state.delivered.add(id);
      else if (kind === 'R') state.recovered.push(Number(words[0]));
      else if (kind === 'E') state.errors.push(words[0]!);
      else if (kind === 'F') state.finished = true;
    }
  });
  return state;
}

/** Kills with SIGKILL and waits until the process is gone. */
export async function kill(client: ClientProcess): Promise<void> {
  client.child.kill('SIGKILL');
  const { signal } = await client.exited;
  if (signal !== 'SIGKILL') throw new Error(`expected the client to die of SIGKILL, it ended with ${signal}`);
}

/** Ends a client with SIGTERM (it closes and flushes) and checks it exited cleanly. */
export async function stop(client: ClientProcess): Promise<void> {
  client.child.kill('SIGTERM');
  const { code } = await client.exited;
  if (code !== 0) throw new Error(`the client exited with ${code}: ${client.output()}`);
}

/** A sink that is up (200) or down (503), and counts each message id it accepted, in order. */
export interface CountingSink {
  readonly sink: Sink;
  up: boolean;
  /** Every message id answered 200, in arrival order (repeats included). */
  readonly arrivals: string[];
  /** The write key of the request that brought each arrival (the test gives each process its own). */
  readonly senders: string[];
  count(id: string): number;
  /**
   * Refuses (503) from now on what comes with this write key: its process is gone, so a request
   * still queued in this server was in flight at the kill (it may or may not count, as for a real
   * server), and the process could not learn the answer anyway.
   */
  retire(key: string): void;
}

export async function countingSink(): Promise<CountingSink> {
  const state = { up: false, arrivals: [] as string[], senders: [] as string[], counts: new Map<string, number>(), retired: new Set<string>() };
  const sink = await startSink((request, res) => {
    const basic = Buffer.from((request.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString();
    if (!state.up || state.retired.has(basic.replace(/:$/, ''))) {
      res.writeHead(503).end();
      return;
    }
    const { batch } = JSON.parse(request.body) as { batch: { messageId: string }[] };
    for (const { messageId } of batch) {
      state.arrivals.push(messageId);
      state.senders.push(basic.replace(/:$/, ''));
      state.counts.set(messageId, (state.counts.get(messageId) ?? 0) + 1);
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true}');
  });
  return {
    sink,
    get up() {
      return state.up;
    },
    set up(value: boolean) {
      state.up = value;
    },
    arrivals: state.arrivals,
    senders: state.senders,
    count: (id) => state.counts.get(id) ?? 0,
    retire: (key) => state.retired.add(key),
  };
}

export { waitFor };

/** What to look at when calls did not arrive: how many, from which process, and the files left in `dir`. */
export function diagnose(sink: CountingSink, accepted: Iterable<string>, dir: string, last: ClientProcess): string {
  const missing = [...accepted].filter((id) => sink.count(id) === 0);
  const byPrefix = new Map<string, number>();
  for (const id of missing) byPrefix.set(id.split('-')[0]!, (byPrefix.get(id.split('-')[0]!) ?? 0) + 1);
  const files = readdirSync(dir).map((name) => `${name} (${statSync(join(dir, name)).size} bytes)`);
  return (
    `${missing.length} missing (${[...byPrefix].map(([p, n]) => `${p}: ${n}`).join(', ')}), e.g. ${missing.slice(0, 3).join(' ')}; ` +
    `files: ${files.join(', ') || 'none'}; the last process: exit ${last.child.exitCode ?? last.child.signalCode ?? 'running'}, ` +
    `recovered ${last.recovered.join('+') || 'nothing'}, errors ${last.errors.join(' ') || 'none'}, stderr ${JSON.stringify(last.output().slice(-500))}`
  );
}

/**
 * The hooks of a suite of client processes: a counting sink for the suite (after the build is
 * checked), and every child still running killed after each test.
 */
export function useClientProcesses(): { readonly children: ClientProcess[]; readonly sink: CountingSink } {
  const children: ClientProcess[] = [];
  let sink: CountingSink | undefined;
  before(async () => {
    requireBuild();
    sink = await countingSink();
  });
  after(async () => {
    await sink?.sink.close();
  });
  afterEach(async () => {
    for (const { child, exited } of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
  });
  return {
    children,
    get sink() {
      if (sink === undefined) throw new Error('the sink starts in the suite\'s before hook');
      return sink;
    },
  };
}
