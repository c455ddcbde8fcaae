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

/** How the runtime reported a warning the scenario recorded, and its text. */
interface WarningReport {
  readonly via: 'process.emitWarning' | 'console.warn';
  readonly text: string;
}

/** What the scenario saw of `eventrelay/segment` (see `segmentChecks` in scenario.mjs). */
interface SegmentReport {
  readonly calls: Record<string, number>;
  readonly errors: Record<string, string | null>;
  readonly ids: Record<string, string>;
  readonly events: {
    readonly error: { code: string; reason: string; type: string; thisIsClient: boolean }[];
    readonly track: number;
    readonly drained: number;
    readonly register: string[][];
    readonly callAfterClose: string[];
    readonly requests: { url: string; authorization: string }[];
    readonly responses: string[];
  };
  readonly destinationSaw: (string | null)[];
  readonly calledWhenClosed: number[];
  readonly retryResponses: string[];
  readonly warnings: WarningReport[];
}

/** What the scenario saw of `eventrelay/analytics-node` (see `classicChecks` in scenario.mjs). */
interface ClassicReport {
  readonly named: boolean;
  readonly chained: boolean;
  readonly calledWhenFlushed: number[];
  readonly handled: string[];
  readonly calls: Record<string, number>;
  readonly errors: Record<string, string | null>;
  readonly ids: Record<string, string>;
  readonly warnings: WarningReport[];
}

export interface ScenarioReport {
  /** `typeof` what setTimeout returned: 'object' (with unref) on Node, Bun and Deno, 'number' on Workers and Edge. */
  readonly timer: string;
  readonly nodeTransport: string;
  /** What a client with no callback and no `error` listener warned about a refused call, twice over. */
  readonly clientWarnings: WarningReport[];
  readonly receiver: Record<string, unknown>;
  readonly variants: Record<string, VariantReport>;
  readonly segment: SegmentReport;
  readonly classic: ClassicReport;
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
      // No span is active in the scenario: whether the runtime can load @opentelemetry/api or not, nothing is added.
      expect(message.context, `message ${i}`).to.not.have.property('traceparent');
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

/** Every message of the requests the sink got at `path`, in the order they came. */
function messagesAt(sink: Sink, path: string): Record<string, unknown>[] {
  return sink.requests.filter((r) => r.path === path).flatMap((r) => batchOf(r).batch);
}

/** The names of a request's headers, sorted: the same transport sends the same ones. */
function headerNames(request: ReceivedRequest | undefined): string[] {
  expect(request, 'a request reached the sink').to.not.equal(undefined);
  return Object.keys(request!.headers).sort();
}

function checkLibraryAndIds(messages: Record<string, unknown>[], ids: Record<string, string>, where: string): void {
  for (const message of messages) {
    expect(message.messageId, `${where}: the messageId the ${String(message.type)} callback saw`).to.equal(ids[String(message.type)]);
    expect(message.timestamp, where).to.match(ISO);
    expect((message.context as { library: unknown }).library, where).to.deep.equal({ name: 'eventrelay', version: VERSION });
    expect(message.userId, where).to.equal('u1');
  }
}

/**
 * Checks what `eventrelay/segment` and `eventrelay/analytics-node` did inside the runtime (the
 * scenario's `segmentChecks` and `classicChecks`) and what reached the sink. `warnedVia` is how the
 * runtime reports the layers' warnings: `process.emitWarning` where it has one, else `console.warn`.
 */
export function checkLayers(report: ScenarioReport, sink: Sink, warnedVia: WarningReport['via']): void {
  const { segment, classic } = report;
  const where = 'eventrelay/segment';

  // The client itself: an error nobody hears is one warning per code, the runtime's way, naming the field.
  expect(report.clientWarnings.map((w) => w.via), 'eventrelay: warnings').to.deep.equal([warnedVia]);
  expect(report.clientWarnings[0]!.text).to.include('EventRelayWarning [ERR_VALIDATION]').and.include('(field `userId`)').and.include("on('error'");

  // Each callback once, with Segment's (err, ctx): delivered, refused (never sent), or refused after close.
  expect(segment.calls, where).to.deep.equal({
    identify: 1, track: 1, page: 1, screen: 1, group: 1, alias: 1, invalid: 1, afterClose: 1, retried: 1, fetchClient: 1,
  });
  expect(segment.errors, where).to.deep.equal({
    identify: null, track: null, page: null, screen: null, group: null, alias: null, invalid: 'ERR_VALIDATION',
    afterClose: 'ERR_CLIENT_CLOSED', retried: null, fetchClient: null,
  });
  expect(segment.calledWhenClosed, `${where}: callbacks run when closeAndFlush() resolved`).to.deep.equal([1, 1, 1, 1, 1, 1, 1]);

  // Segment's events: the refused call's error (the listener's `this` is the client), the plugins, close.
  expect(segment.events.error, where).to.deep.equal([{ code: 'delivery_failure', reason: 'ERR_VALIDATION', type: 'track', thisIsClient: true }]);
  expect(segment.events.track, `${where}: track events`).to.equal(1);
  expect(segment.events.drained, `${where}: drained events`).to.be.at.least(1);
  expect(segment.events.register, where).to.deep.equal([['Runtime Enrichment', 'Runtime Destination']]);
  expect(segment.destinationSaw, where).to.include('Runtime Tested');
  expect(segment.events.callAfterClose, where).to.deep.equal(['track']);

  // The wire: the six calls at Segment's `path`, the enrichment plugin's change included, nothing refused sent.
  const callsPath = '/segment/calls/v1/batch';
  const requests = sink.requests.filter((r) => r.path === callsPath);
  const sent = messagesAt(sink, callsPath);
  expect(sent.map((m) => m.type).sort(), where).to.deep.equal(['alias', 'group', 'identify', 'page', 'screen', 'track']);
  checkLibraryAndIds(sent, segment.ids, where);
  const ofType = (type: string) => sent.find((m) => m.type === type)!;
  expect(ofType('track')).to.deep.include({ event: 'Runtime Tested', properties: { runtime: 'x', enriched: true } });
  expect(ofType('page')).to.deep.include({ name: 'Home', category: 'Docs', properties: { path: '/', category: 'Docs' } });
  expect(ofType('identify')).to.deep.include({ traits: { plan: 'pro' } });
  expect(ofType('group')).to.deep.include({ groupId: 'g1', traits: { name: 'Team' } });
  expect(ofType('alias')).to.deep.include({ previousId: 'anon-1' });
  for (const request of requests) {
    expect(request.method).to.equal('POST');
    expect(request.headers.authorization).to.equal(`Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`);
    expect(request.headers['content-type']).to.equal('application/json');
    expect(request.headers['user-agent']).to.equal(`eventrelay-node/${VERSION}`);
    expect(batchOf(request).sentAt).to.match(ISO);
  }
  // Without httpClient, the layer sends with the transport `Analytics` picks on this runtime.
  expect(headerNames(requests[0]), `${where}: the default transport's headers`).to.deep.equal(headerNames(requestsTo(sink, 'default', 'calls')[0]));
  expect(segment.events.requests.map((r) => r.url), where).to.deep.equal(requests.map((r) => `${sink.url}${r.path}`));
  expect(segment.events.requests.map((r) => r.authorization), where).to.deep.equal(requests.map(() => 'Basic [redacted]'));
  expect(segment.events.responses, where).to.deep.equal(requests.map(() => '200 OK'));

  // A 503 retried with the same messages; Segment's FetchHTTPClient; no call sent twice or after close.
  const retries = sink.requests.filter((r) => r.path === '/segment/retry/v1/batch').map((r) => batchOf(r).batch.map((m) => m.messageId));
  expect(retries, `${where}: the 503 was retried`).to.deep.equal([[segment.ids.retried], [segment.ids.retried]]);
  expect(segment.retryResponses, where).to.deep.equal(['503 Service Unavailable', '200 OK']);
  expect(messagesAt(sink, '/segment/fetchclient/v1/batch').map((m) => [m.event, m.messageId])).to.deep.equal([['Fetched', segment.ids.fetchClient]]);
  expect(sink.messages().filter((m) => m.event === 'Too Late'), where).to.have.length(0);

  // A setting Segment never had: one warning, the runtime's way, naming it.
  expect(segment.warnings.map((w) => w.via), `${where}: warnings`).to.deep.equal([warnedVia]);
  expect(segment.warnings[0]!.text).to.include('EventRelayWarning [EVENTRELAY_UNKNOWN_OPTION]').and.include('`runtimeTypo`');

  // The classic layer: chained calls with (err, data) callbacks, flush(), errorHandler.
  const classicWhere = 'eventrelay/analytics-node';
  expect({ named: classic.named, chained: classic.chained }, classicWhere).to.deep.equal({ named: true, chained: true });
  expect(classic.calls, classicWhere).to.deep.equal({ track: 1, identify: 1, invalid: 1, bare: 1 });
  expect(classic.errors, classicWhere).to.deep.equal({ track: null, identify: null, invalid: 'ERR_VALIDATION', bare: 'ERR_VALIDATION' });
  expect(classic.calledWhenFlushed, `${classicWhere}: callbacks run when flush() resolved`).to.deep.equal([1, 1, 1]);
  expect(classic.handled, `${classicWhere}: errorHandler`).to.deep.equal(['ERR_VALIDATION']);
  const classicSent = messagesAt(sink, '/classic/calls/v1/batch');
  expect(classicSent.map((m) => m.type).sort(), classicWhere).to.deep.equal(['identify', 'track']);
  checkLibraryAndIds(classicSent, classic.ids, classicWhere);
  expect(classicSent.find((m) => m.type === 'track')).to.deep.include({ event: 'Classic Tested', properties: { runtime: 'x' } });
  expect(sink.requests.filter((r) => r.path.startsWith('/classic/bare/')), classicWhere).to.have.length(0);
  const classicRequest = sink.requests.find((r) => r.path === '/classic/calls/v1/batch');
  expect(headerNames(classicRequest), `${classicWhere}: the default transport's headers`).to.deep.equal(headerNames(requestsTo(sink, 'default', 'calls')[0]));
  // Without errorHandler, a failure is a warning (never an exception where the runtime has no process).
  expect(classic.warnings.map((w) => w.via), `${classicWhere}: warnings`).to.deep.equal([warnedVia]);
  expect(classic.warnings[0]!.text).to.include('EventRelayWarning [ERR_VALIDATION]').and.include('eventrelay/analytics-node');
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
