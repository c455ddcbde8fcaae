import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { build } from 'esbuild';
import { VERSION } from '../../src/version';
import { body, SECRET, signatureOf } from '../fixtures/webhooks/load';
import { startSink } from '../../../../test/helpers/sink';
import type { ReceivedRequest, Sink } from '../../../../test/helpers/sink';

/** The repository's root, and the built package the runtimes load. */
export const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
export const DIST = `${ROOT}packages/eventrelay/dist`;
export const SCENARIO = fileURLToPath(new URL('./scenario.mjs', import.meta.url));
export const BIN = `${ROOT}node_modules/.bin`;

export const WRITE_KEY = 'wk_runtime_é';

/** Which transports a runtime runs the client checks with: the default one, and each it can use. */
export type Variant = 'default' | 'fetch' | 'node';

export interface ScenarioConfig {
  readonly sink: string;
  readonly variants: readonly Variant[];
  readonly writeKey: string;
  readonly webhook: { readonly body: string; readonly signature: string; readonly secret: string };
}

interface VariantReport {
  readonly refusedEvents: string[];
  readonly gzipRefused?: string;
  readonly flush: { pendingBefore: number; pendingAfter: number; calledWhenResolved: number[] };
  readonly waitUntil: { handedAtOnce: number; handed: number; calledWhenSettled: number[] };
  readonly calls: Record<string, number | string>;
  readonly errors: Record<string, string | null>;
}

export interface ScenarioReport {
  /** `typeof` what setTimeout returned: 'object' (with unref) on Node, Bun and Deno, 'number' on Workers and Edge. */
  readonly timer: string;
  readonly nodeTransport: string;
  readonly receiver: Record<string, unknown>;
  readonly variants: Record<string, VariantReport>;
}

/** Fails early, with what to do, when the package was not built. */
export function requireDist(): void {
  if (!existsSync(`${DIST}/index.js`) || !existsSync(`${DIST}/webhooks/index.js`)) {
    throw new Error('packages/eventrelay/dist is missing: run `npm run build` first (npm test does)');
  }
}

/**
 * The ingestion sink the scenario sends to, on 127.0.0.1. Paths are `/<variant>/<check>/v1/batch`:
 * `retry` answers 503 (Retry-After: 0) to its first request, `inflight` holds its first request
 * until the second comes, `rejected` refuses message 0 of the batch, `stall` never answers.
 */
export async function startScenarioSink(): Promise<Sink> {
  const held = new Map<string, ServerResponse>();
  const sinkRequests = new Map<string, number>();
  return startSink((request: ReceivedRequest, res: ServerResponse) => {
    const check = request.path.split('/')[2];
    const earlier = sinkRequests.get(request.path) ?? 0;
    sinkRequests.set(request.path, earlier + 1);
    if (check === 'retry' && earlier === 0) {
      res.writeHead(503, { 'retry-after': '0' }).end('busy');
    } else if (check === 'inflight' && earlier === 0) {
      held.set(request.path, res);
    } else if (check === 'inflight') {
      held.get(request.path)?.end('{"success":true}');
      res.end('{"success":true}');
    } else if (check === 'rejected') {
      const rejected = [{ index: 0, code: 'invalid_message', field: 'event', message: 'refused by the test sink' }];
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ success: true, rejected }));
    } else if (check !== 'stall') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"success":true}');
    }
  });
}

/** The scenario's settings for one runtime run against `sink`. */
export function scenarioConfig(sink: Sink, variants: readonly Variant[]): ScenarioConfig {
  return {
    sink: sink.url,
    variants,
    writeKey: WRITE_KEY,
    webhook: { body: body('track-compact.json').toString('utf8'), signature: signatureOf('track-compact.json'), secret: SECRET },
  };
}

function requestsTo(sink: Sink, variant: string, check: string): ReceivedRequest[] {
  return sink.requests.filter((r) => r.path === `/${variant}/${check}/v1/batch`);
}

function batchOf(request: ReceivedRequest | undefined): { batch: Record<string, unknown>[]; sentAt: string } {
  expect(request, 'a request reached the sink').to.not.equal(undefined);
  return JSON.parse(request!.body) as { batch: Record<string, unknown>[]; sentAt: string };
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/**
 * Checks what the sink received and what the scenario reported, for each variant. `gzip: false`
 * for a runtime without CompressionStream, where `gzip: true` is a ConfigError.
 */
export function checkClient(report: ScenarioReport, sink: Sink, variants: readonly Variant[], { gzip = true } = {}): void {
  for (const variant of variants) {
    const result = report.variants[variant];
    expect(result, `the report of the ${variant} transport`).to.not.equal(undefined);
    const where = `(${variant} transport)`;

    // Each callback exactly once, with the outcome each check expects.
    const expected: Record<string, string | null> = {
      identify: null, track: null, page: null, screen: null, group: null, alias: null, invalid: 'ERR_VALIDATION', retried: null,
      inflight1: null, inflight2: null, queued: null, rejected0: 'ERR_VALIDATION', rejected1: null, stalled: 'ERR_TIMEOUT',
      waited1: null, waited2: null, ...(gzip ? { gzip: null } : {}),
    };
    for (const key of Object.keys(expected)) expect(result!.calls[key], `calls of the ${key} callback ${where}`).to.equal(1);
    expect(result!.errors, where).to.deep.equal(expected);
    expect(result!.refusedEvents, where).to.deep.equal(['ERR_VALIDATION']);

    // Wire format: one POST of the six calls, Basic auth of the write key, the Segment-compatible body.
    const [callsRequest, ...more] = requestsTo(sink, variant, 'calls');
    expect(more, where).to.have.length(0);
    expect(callsRequest?.method).to.equal('POST');
    expect(callsRequest?.headers.authorization).to.equal(`Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`);
    expect(callsRequest?.headers['content-type']).to.equal('application/json');
    const sent = batchOf(callsRequest);
    expect(sent.sentAt).to.match(ISO);
    expect(sent.batch.map((m) => m.type), where).to.deep.equal(['identify', 'track', 'page', 'screen', 'group', 'alias']);
    for (const [i, message] of sent.batch.entries()) {
      expect(message.messageId, where).to.equal(result!.calls[`${String(message.type)}.id`]);
      expect(message.timestamp).to.match(ISO);
      expect((message.context as { library: unknown }).library).to.deep.equal({ name: 'eventrelay', version: VERSION });
      expect(message.userId, `message ${i}`).to.equal('u1');
    }
    expect(sent.batch[1]).to.deep.include({ event: 'Runtime Tested', properties: { runtime: 'x', é: 'ü' } });
    expect(sent.batch[5]).to.deep.include({ previousId: 'anon-1' });

    // A 503 retried with the same messages; flush() waited for the batch in flight and the queued one.
    const retries = requestsTo(sink, variant, 'retry').map((r) => batchOf(r).batch.map((m) => m.messageId));
    expect(retries, `the 503 was retried ${where}`).to.have.length(2);
    expect(retries[0]).to.deep.equal(retries[1]);
    expect(result!.flush, where).to.deep.equal({ pendingBefore: 3, pendingAfter: 0, calledWhenResolved: [1, 1, 1] });
    expect(requestsTo(sink, variant, 'inflight'), where).to.have.length(2);

    // gzip bodies the sink could read, the stalled request sent once, waitUntil's promise per batch.
    if (gzip) {
      const [zipped] = requestsTo(sink, variant, 'gzip');
      expect(zipped?.headers['content-encoding'], where).to.equal('gzip');
      expect(batchOf(zipped).batch.map((m) => m.event)).to.deep.equal(['Zipped']);
    } else {
      expect(result!.gzipRefused, where).to.equal('ERR_CONFIG gzip');
      expect(requestsTo(sink, variant, 'gzip'), where).to.have.length(0);
    }
    expect(requestsTo(sink, variant, 'stall'), where).to.have.length(1);
    expect(result!.waitUntil, where).to.deep.equal({ handedAtOnce: 1, handed: 1, calledWhenSettled: [1, 1] });
    expect(batchOf(requestsTo(sink, variant, 'waituntil')[0]).batch.map((m) => m.event)).to.deep.equal(['Waited 1', 'Waited 2']);
  }
}

/**
 * The receiver helper's answers: verified and signed with Web Crypto everywhere; `sync` is what the
 * sync `verifySignature` and `sign` gave (true, or the code they threw without node:crypto).
 */
export function checkReceiver(report: ScenarioReport, sync: true | 'ERR_UNSUPPORTED_RUNTIME'): void {
  expect(report.receiver).to.deep.equal({
    verifyAsync: true,
    verifyAsyncBad: false,
    signAsync: true,
    verify: sync,
    sign: sync,
    fetchSigned: 204,
    fetchBad: 401,
    handled: ['track'],
  });
}

/** Runs a command to its end; resolves with its output, rejects with its stderr when it fails. */
export function run(command: string, args: readonly string[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${stderr.slice(-4000)}\n${stdout.slice(-2000)}`));
    });
  });
}

/** The last line of a process's output, as the JSON report it printed. */
export function lastJson<T>(output: string): T {
  const line = output.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new Error(`expected a JSON report as the last line of the output, got:\n${output.slice(-2000)}`);
  }
}

/**
 * One ES module with the built package and the scenario inlined, as a Worker's or an Edge
 * function's bundler makes it (wrangler, Next.js): browser-like conditions, nothing external,
 * so a static import of a Node module would fail the build. `entry` is the module's own code.
 */
export async function bundle(entry: string, options: { format: 'esm' | 'iife'; conditions: string[]; globalName?: string }): Promise<string> {
  const result = await build({
    stdin: { contents: entry, resolveDir: ROOT, sourcefile: 'runtime-entry.mjs', loader: 'js' },
    bundle: true,
    write: false,
    format: options.format,
    ...(options.globalName === undefined ? {} : { globalName: options.globalName }),
    platform: 'browser',
    conditions: options.conditions,
    target: 'es2022',
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

export const RUNNER = fileURLToPath(new URL('./process-runner.mjs', import.meta.url));
const DIST_URL = new URL('../../dist', import.meta.url).href;

/** A runtime that runs a script file: its executable and the arguments before the script's path. */
export interface ScriptRuntime {
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: Record<string, string>;
}

/** Runs the scenario in `runtime` on the built package; resolves with its report. */
export async function runScenarioScript(runtime: ScriptRuntime, config: ScenarioConfig): Promise<ScenarioReport> {
  const output = await run(runtime.command, [...runtime.args, RUNNER, 'scenario', DIST_URL, JSON.stringify(config)], { env: runtime.env ?? {} });
  return lastJson<ScenarioReport>(output);
}

/** Runs a script that tracks three events and returns without flushing; resolves with what its callbacks saw at exit. */
export async function runEndingScript(runtime: ScriptRuntime, endpoint: string): Promise<{ calls: number; errors: (string | null)[] }> {
  const output = await run(runtime.command, [...runtime.args, RUNNER, 'ends', DIST_URL, JSON.stringify({ endpoint })], { env: runtime.env ?? {} });
  return lastJson(output);
}
