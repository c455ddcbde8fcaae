import { spawn } from 'node:child_process';
import type { ChildProcess, ChildProcessByStdio } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { tmpdir } from 'node:os';
import { after, afterEach, before } from 'mocha';
import { request } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { createForwarder } from '../../src/service';
import type { Forwarder, ForwarderInternals } from '../../src/service';
import type { ForwarderConfig, StorageConfig } from '../../src/config';
import { startSink } from '../../../../test/helpers/sink';
import { waitFor } from '../../../../test/helpers/wait';
import { createTestDatabase, truncate, usePostgres, whenNoServer } from '../../../../test/helpers/postgres';
import { useTempDirs } from '../../../../test/helpers/temp-dir';

export { waitFor };

export interface ReceivedRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly json: Record<string, unknown>;
}

export interface Receiver {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** Requests answered 2xx, i.e. deliveries. */
  readonly delivered: ReceivedRequest[];
  /** Status for the next requests to `path`: e.g. failFirst('/a', 2) answers 503 twice; `body`: what those answers say (none by default). */
  failFirst(path: string, times: number, status?: number, body?: string): void;
  close(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1 (the shared test sink) that records every request and answers 200 unless told otherwise. */
export async function startReceiver(delayMs = 0): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const delivered: ReceivedRequest[] = [];
  const failures = new Map<string, { left: number; status: number; body: string | undefined }>();
  const sink = await startSink((request, res) => {
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(request.body) as Record<string, unknown>;
    } catch {
      // recorded as {}
    }
    const record = { path: request.url, headers: request.headers, body: request.body, json };
    requests.push(record);
    const failure = failures.get(record.path);
    const answer = () => {
      if (failure !== undefined && failure.left > 0) {
        failure.left--;
        res.writeHead(failure.status).end(failure.body);
        return;
      }
      delivered.push(record);
      res.writeHead(200).end('ok');
    };
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  });
  return {
    url: sink.url,
    requests,
    delivered,
    failFirst(path, times, status = 503, body) {
      failures.set(path, { left: times, status, body });
    },
    close: sink.close,
  };
}

/** Basic auth header for a write key, as the client sends it. */
export function basic(writeKey: string): string {
  return `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`;
}

/** An HTTP answer read whole: its body as text, and as JSON where it parses. */
export interface ReadAnswer {
  readonly status: number;
  readonly json: any;
  readonly text: string;
  readonly headers: Headers;
}

/** Reads `response`'s body; `json` is the body parsed, or where it is not JSON the text itself (`orText`) or undefined. */
export async function readAnswer(response: Response, orText = false): Promise<ReadAnswer> {
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = orText ? text : undefined;
  }
  return { status: response.status, json, text, headers: response.headers };
}

/** A call of the admin API with `token`: `admin(url, method, path, body?)` answers its status and its JSON body. */
export function adminAs(token: string): (url: string, method: string, path: string, body?: unknown) => Promise<{ status: number; json: any }> {
  return async (url, method, path, body) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: await response.json() };
  };
}

export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; headers: Headers }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  return readAnswer(response, true);
}

/** The built CLI (`npm run build`, which `npm test` runs first). */
export const CLI = resolve('packages/forwarder/dist/cli.js');

/** The process tests run the built CLI: without it they fail at once, saying how to build it. */
export function requireBuiltCli(): void {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run `npm run build` first (npm test does)');
}

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `eventrelay ...args` on the built package with only PATH and `env` in its environment, and
 * resolves with its exit code and output. A command that has not ended after 15 s (a `serve`
 * started by mistake) is stopped, so the test reports it instead of hanging.
 */
export async function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => child.kill('SIGTERM'), 15_000);
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** An `eventrelay serve` child process on the built package, listening on a free port of 127.0.0.1. */
export interface ServedForwarder {
  readonly url: string;
  /** Stops it with SIGTERM and resolves with its exit code. */
  stop(): Promise<number | null>;
}

/** Spawns `dist/cli.js serve --port 0 ...args` and resolves once it printed its "listening on" line. */
export async function serveCli(args: string[], env: Record<string, string> = {}): Promise<ServedForwarder> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  await waitFor(() => gone || /listening on (http:\/\/\S+)/.test(out), 'the forwarder to listen', 15_000);
  const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
  if (url === undefined) throw new Error(`the forwarder did not start:\n${out}\n${err}`);
  return {
    url,
    stop: () => {
      if (!gone) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** One line of `eventrelay serve`'s operator log in JSON. */
export interface LogLine {
  readonly level: string;
  readonly time: string;
  readonly msg: string;
  readonly [field: string]: unknown;
}

/** An `eventrelay serve` child whose stdout and stderr are pipes the test reads. */
export interface LoggedServe {
  readonly child: ChildProcessByStdio<null, Readable, Readable>;
  /** Resolves with the exit code once the process ended. */
  readonly exited: Promise<number | null>;
  out(): string;
  err(): string;
  /** Stdout so far, one parsed JSON object a line. */
  lines(): LogLine[];
}

/**
 * Writes `config` to `config.json` in `dir` and spawns `dist/cli.js serve --config <it> --port 0
 * ...args` with only PATH in its environment; does not wait for it to start. The caller stops it.
 */
export function serveLogged(config: object, dir: string, args: string[] = []): LoggedServe {
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const child = spawn(process.execPath, [CLI, 'serve', '--config', file, '--port', '0', ...args], { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return {
    child,
    exited,
    out: () => out,
    err: () => err,
    lines: () => out.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as LogLine),
  };
}

/**
 * Waits for a spawned forwarder's "listening on <url>" line in `stdout()` and resolves with the URL.
 * Where the process ends first, or not by `timeoutMs`, it throws with `shown()` (what it printed).
 */
export async function listeningUrl(exited: Promise<unknown>, stdout: () => string, timeoutMs: number, what = 'the forwarder', shown: () => string = stdout): Promise<string> {
  let gone = false;
  void exited.then(() => (gone = true));
  await waitFor(() => gone || /listening on (http:\/\/\S+)/.test(stdout()), `${what} to listen`, timeoutMs);
  const url = /listening on (http:\/\/\S+)/.exec(stdout())?.[1];
  if (url === undefined) throw new Error(`${what} did not start:\n${shown()}`);
  return url;
}

/** A forwarder in a process of its own (serveInChild). */
export interface ChildForwarder {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * `eventrelay serve` with `config`, from source, in a process of its own (fixtures/serve-in-child.ts),
 * once it listens; a process that could be killed with SIGKILL. `onSpawn` sees the child first.
 */
export async function serveInChild(name: string, config: object, onSpawn?: (child: ChildProcess) => void): Promise<ChildForwarder> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--conditions=eventrelay-source', 'packages/forwarder/test/fixtures/serve-in-child.ts', JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onSpawn?.(child);
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  // A bound against a hang: tsx compiles the forwarder first.
  const url = await listeningUrl(exited, () => out, 60_000, `forwarder ${name}`);
  return { child, url, exited };
}

/** Signals every child of `children` still running (SIGKILL by default) and empties the list. */
export function killAll(children: ChildProcess[], signal: NodeJS.Signals = 'SIGKILL'): void {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill(signal);
}

/** Closes `server` at once: the sockets it holds open (keep-alive) are destroyed first. Call it before `listen`. */
export function closerOf(server: Server): () => Promise<void> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
}

/** A forwarder (SQLite in a temp dir) with one source whose Webhooks destination posts to a recording receiver at `/hook`. */
export interface ForwarderWithReceiver {
  receiver: Receiver;
  forwarder: Forwarder;
  /** The forwarder's base URL. */
  url: string;
  /** A temp dir the suite may use; removed after it. */
  dataDir: string;
}

/** Starts a forwarder and its receiver before the suite and stops both (and removes the data dir) after it. */
export function useForwarderWithReceiver(source: string, writeKey: string): ForwarderWithReceiver {
  const context = {} as ForwarderWithReceiver;
  before(async () => {
    context.receiver = await startReceiver();
    context.dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-fwd-'));
    context.forwarder = createForwarder(
      { sources: [{ name: source, writeKey, destinations: { Webhooks: { webhooks: [{ url: `${context.receiver.url}/hook` }] } } }] },
      { dataDir: context.dataDir },
    );
    ({ url: context.url } = await context.forwarder.listen({ port: 0 }));
  });
  after(async () => {
    await context.forwarder.close();
    await context.receiver.close();
    rmSync(context.dataDir, { recursive: true, force: true });
  });
  return context;
}

/** A Server-Sent Event of the admin stream, its data parsed. */
export interface SseEvent {
  readonly event: string;
  readonly data: any;
}

/** Moves each complete event at the start of `buffer.text` into `into`; the rest stays for the next read. */
export function takeSseEvents(buffer: { text: string }, into: SseEvent[]): void {
  let end;
  while ((end = buffer.text.indexOf('\n\n')) >= 0) {
    const block = buffer.text.slice(0, end);
    buffer.text = buffer.text.slice(end + 2);
    const event = /^event: (.*)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (event !== undefined && data !== undefined) into.push({ event, data: JSON.parse(data) });
  }
}

export interface RawAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  readonly json: any;
}

/**
 * One request with node:http, so that any header (`Origin`, `Host`, `X-Forwarded-For`) goes as
 * given, the way a browser or a proxy would send it.
 */
export function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {}, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Runs `count` calls of `fn`, `parallel` at a time. */
export async function flood<T>(count: number, parallel: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await fn(i);
      }
    }),
  );
  return results;
}

/** A store each test of a run on every store may use: memory, SQLite (in `tempDir()`), or a fresh PostgreSQL database. */
export type StoreKind = 'memory' | 'sqlite' | 'postgres';

/**
 * The `storage` config of a fresh store of `kind`; a PostgreSQL database it makes is dropped by
 * `cleanups`. Without a PostgreSQL server the test is skipped (`skip`), or fails with CI=true.
 */
export async function freshStorage(kind: StoreKind, tempDir: () => string, cleanups: (() => Promise<void>)[], skip: () => never): Promise<object> {
  if (kind === 'memory') return { type: 'memory' };
  if (kind === 'sqlite') return { type: 'sqlite', dataDir: tempDir() };
  try {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    return { type: 'postgres', url: db.url, poolSize: 4 };
  } catch (error) {
    if (whenNoServer(process.env) === 'fail') throw new Error(`No PostgreSQL server for the tests (CI=true): ${(error as Error).message}`);
    process.stderr.write(`\n  SKIPPED: no PostgreSQL server (${(error as Error).message})\n`);
    return skip();
  }
}

/** The stores of the tests of a suite run on one kind of store; see useStoreKind. */
export interface StoresOfKind {
  /** The suite's PostgreSQL database (usePostgres): `postgres` only. */
  readonly db: { readonly url: string } | undefined;
  /** What a test leaves to undo (forwarders, receivers): run after it, the last pushed first. */
  readonly cleanup: (() => Promise<unknown>)[];
  /** The `storage` config of an empty store: memory, SQLite in a new temp dir, or the suite's database (a pool of 3) with the tables emptied. */
  fresh(): Promise<StorageConfig>;
}

/**
 * For a `describe` run on the store `kind`: its PostgreSQL database (whose `tables` each `fresh()`
 * empties), its temp dirs (`<tmp>/<prefix>XXXXXX`, removed after it), and each test's cleanup.
 */
export function useStoreKind(kind: StoreKind, prefix: string, tables: readonly string[]): StoresOfKind {
  const db = kind === 'postgres' ? usePostgres() : undefined;
  const tempDir = useTempDirs(prefix);
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });
  return {
    db,
    cleanup,
    async fresh() {
      if (db === undefined) return kind === 'sqlite' ? { type: 'sqlite', dataDir: tempDir() } : { type: 'memory' };
      await truncate(db.url, tables);
      return { type: 'postgres', url: db.url, poolSize: 3 };
    },
  };
}

/** Two forwarders on one config (one PostgreSQL database), listening on 127.0.0.1. */
export interface TwoForwarders {
  readonly a: Forwarder;
  readonly b: Forwarder;
  readonly urlA: string;
  readonly urlB: string;
}

/** Starts two instances of `config` side by side; B may have its own internals (a clock). */
export async function startTwo(config: ForwarderConfig, internalsB: ForwarderInternals = {}): Promise<TwoForwarders> {
  const a = createForwarder(config);
  const b = createForwarder(config, {}, internalsB);
  const [{ url: urlA }, { url: urlB }] = await Promise.all([a.listen({ port: 0 }), b.listen({ port: 0 })]);
  return { a, b, urlA, urlB };
}

/** Closes both forwarders of `two` (the one forwarder where `a` is `b`). */
export async function closeTwo({ a, b }: TwoForwarders): Promise<void> {
  await Promise.all([a.close(), b !== a ? b.close() : undefined]);
}

/** A forwarder made from `config`, listening while `run` runs, and closed after it (whatever `run` did). */
export async function withForwarder(config: ForwarderConfig, run: (url: string) => Promise<void>): Promise<void> {
  const forwarder = createForwarder(config);
  try {
    await run((await forwarder.listen({ port: 0 })).url);
  } finally {
    await forwarder.close();
  }
}

/** Starts the forwarders of one test; see useInstances. */
export interface Instances {
  /** `storage`: settings added to the fresh store's (keepDelivered, say). */
  start(context: Mocha.Context, config: Omit<ForwarderConfig, 'storage'>, storage?: object): Promise<TwoForwarders>;
}

/**
 * The forwarders of each test of the suite this is called in, on a fresh store of `kind`: one on
 * SQLite or memory (`a` and `b` are the same), two side by side on one PostgreSQL database, where
 * B learns the settings only through the store. Closed, and the store dropped, after each test.
 */
export function useInstances(kind: StoreKind, prefix: string): Instances {
  const cleanups: (() => Promise<void>)[] = [];
  const dirs: string[] = [];
  let open: TwoForwarders | undefined;
  afterEach(async () => {
    if (open !== undefined) await closeTwo(open);
    open = undefined;
    for (const cleanup of cleanups.splice(0)) await cleanup();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const tempDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
  return {
    async start(context, config, storage = {}) {
      const fresh = await freshStorage(kind, tempDir, cleanups, () => context.skip());
      const full = { ...config, storage: { ...fresh, ...storage } } as ForwarderConfig;
      if (kind === 'postgres') {
        open = await startTwo(full);
      } else {
        const a = createForwarder(full);
        const url = (await a.listen({ port: 0 })).url;
        open = { a, b: a, urlA: url, urlB: url };
      }
      return open;
    },
  };
}

/**
 * What `open` makes before the tests of the suite this is called in (in a `before` hook, so before
 * the hooks declared after this call) and `close` ends after them. What it returns stands for it.
 */
export function useForSuite<T extends object>(what: string, open: (context: Mocha.Context) => Promise<T>, close: (value: T) => Promise<void>): T {
  let current: T | undefined;
  before(async function () {
    current = await open(this);
  });
  after(async () => {
    if (current !== undefined) await close(current);
  });
  return new Proxy({} as T, {
    get(_, key) {
      if (current === undefined) throw new Error(`${what} is used before its suite made it`);
      return Reflect.get(current, key) as unknown;
    },
  });
}

/** Two forwarders (startTwo) for the suite this is called in, made with `config()` before its tests and closed after them (see useForSuite). */
export function useTwoForSuite(config: () => ForwarderConfig, internalsB?: ForwarderInternals): TwoForwarders {
  return useForSuite('the two forwarders', () => startTwo(config(), internalsB), closeTwo);
}

/** A receiver for the suite this is called in (see useForSuite). */
export function useReceiver(delayMs = 0): Receiver {
  return useForSuite('the receiver', () => startReceiver(delayMs), (receiver) => receiver.close());
}

/** Two forwarders of a test on the PostgreSQL database of its suite; see useTwoOnPostgres. */
export interface TwoOnPostgres {
  /** The suite's database (usePostgres): read `db.url` inside tests and hooks. */
  readonly db: { readonly url: string };
  /** Starts A and B (startTwo) with `config` on the database, a pool of 3 connections each; they are closed after the test. */
  start(config: Omit<ForwarderConfig, 'storage'>, internalsB?: ForwarderInternals): Promise<TwoForwarders>;
}

/** For a `describe`: a PostgreSQL database of its own, and two forwarders on it for each test that starts them. */
export function useTwoOnPostgres(): TwoOnPostgres {
  const db = usePostgres();
  const started: TwoForwarders[] = [];
  afterEach(async () => {
    for (const two of started.splice(0)) await closeTwo(two);
  });
  return {
    db,
    async start(config, internalsB) {
      const two = await startTwo({ ...config, storage: { type: 'postgres', url: db.url, poolSize: 3 } }, internalsB);
      started.push(two);
      return two;
    },
  };
}
