import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import createDebug from 'debug';
import { MAX_BATCH_BYTES as MAX_BODY_BYTES } from 'eventrelay/internal';
import { parseIngestBody } from '../routing/ingest';
import type { RejectedMessage, ValidMessage } from '../routing/ingest';
import { decodeBody, readBody } from './read-body';
import { clientAddress, corsHeaders, echoable, preflightHeaders, publicAddress, requestOrigin, shownOrigin } from './browser';
import { librarySettings, MAX_KEY_LENGTH, SETTINGS_MAX_AGE } from './settings';
import { apiDocumentText, queryObject, ROUTE_CHECKS, ROUTE_TABLE, RouteTable } from './routes';
import { INGEST_ENDPOINTS } from './routes/ingestion';
import type { IngestEndpoint } from './routes/ingestion';
import type { Problem, RouteSpec } from './routes';
import { AllowedOrigins } from '../routing/origins';
import { routeMessage } from '../routing/router';
import type { RouteSource } from '../routing/router';
import { SourceDeletedError } from '../store/contract';
import type { AcceptedMessage, AcceptResult } from '../store/contract';
import { IngestSpan } from '../tracing';

const log = createDebug('eventrelay:forwarder');

/** Where a refused request came from, for the operator's log: its path and `Origin` (undefined without one). */
export interface RefusedAt {
  readonly path: string;
  readonly origin: string | undefined;
  /** True for a CORS preflight: a refused request, never a message. */
  readonly preflight?: boolean;
}

/** What a source's ingestion limit says of one more request. */
export type Admission = { readonly ok: true } | { readonly ok: false; readonly retryAfterSeconds: number };

/**
 * Where an ingestion request's calls go once read (`runtime/intake.ts`): the first step of a
 * batch's path behind the socket. Every ingestion route of this file talks to it alone.
 */
export interface Intake {
  /** The source a write key belongs to. */
  sourceForKey(writeKey: string): RouteSource | undefined;
  /** Every source's allowed origins together: what a preflight, which carries no key, is answered for. */
  preflightOrigins(): AllowedOrigins;
  /** Takes one request of a source with an `ingestRateLimit` from its budget. */
  admit(source: RouteSource): Promise<Admission>;
  /**
   * A request refused whole: the answer's code and status, and its source when the key was known
   * (undefined for a preflight, which names none).
   */
  refused(code: string, status: number, source: string | undefined, at?: RefusedAt): void;
  /**
   * Stores a request's accepted messages; `calls[i]` is the parsed form of `messages[i]` (for the
   * delivery log), `source` the source the write key led to. Rejects with SourceDeletedError when
   * it was deleted meanwhile.
   */
  accept(messages: readonly AcceptedMessage[], calls: readonly ValidMessage[], source: RouteSource): Promise<AcceptResult>;
  /**
   * The messages of a batch that were refused (the others were stored), for counting and the
   * delivery log; `body` is the parsed request body they came in.
   */
  rejected(source: string, rejected: readonly RejectedMessage[], receivedAt: number, body: unknown): void;
  /** A request that failed for a reason of the forwarder's own (the store): answered 503. */
  failed(error: Error): void;
  /** True once shutdown started: new requests get 503. */
  readonly closing: boolean;
  now(): number;
}

/** What the HTTP server serves beside ingestion. */
export interface HttpSite {
  /** `http.trustProxy` and `http.publicUrl` (default: none, the request's Host). */
  readonly http?: { readonly trustProxy: number; readonly publicUrl: string | undefined };
  /** Routes of the operations layer (metrics, debugger, delivery-log admin API); resolves false for an unknown path. */
  readonly operations?: (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean>;
  /** `GET /stats`. */
  stats(): Promise<object>;
}

export function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function fail(res: ServerResponse, status: number, code: string, message: string, extra: object = {}, headers: Record<string, string> = {}): void {
  send(res, status, { success: false, error: { code, message, ...extra } }, headers);
}

/** The write key from `Authorization: Basic base64(writeKey:)`, as Segment's clients send it. */
function basicAuthKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (match === null) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = colon < 0 ? decoded : decoded.slice(0, colon);
  // Some clients put the key in the password part instead.
  return user !== '' ? user : colon >= 0 && decoded.length > colon + 1 ? decoded.slice(colon + 1) : undefined;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Constant-time comparison of a presented token with the configured one. */
export function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

function parseJson(body: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(body.toString('utf8')) };
  } catch {
    return { ok: false };
  }
}

/**
 * The forwarder's HTTP API on node:http: ingestion (`/v1/*`, Segment-compatible), operations
 * (`/health`, `/stats`) and admin (`/admin/*`, Bearer token). Status codes are listed in
 * docs/running-the-forwarder.md. Logs carry statuses, counts and source names; never keys, tokens or bodies.
 */
export function createRequestHandler(intake: Intake, site: HttpSite): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(intake, site, req, res).catch((error: unknown) => {
      log('request failed: %s', (error as Error).message);
      intake.failed(error instanceof Error ? error : new Error(String(error)));
      if (!res.headersSent) fail(res, 503, 'unavailable', 'The forwarder could not store the request; try again', {}, { 'Retry-After': '1' });
      else res.destroy();
    });
  };
}

/** The routes this file answers (ingestion, settings, health, stats, this document); the others are the operations layer's. */
const OWN = new Set(['librarySettings', 'health', 'stats', 'openapi', ...INGEST_ENDPOINTS.keys()]);

/** The methods a path takes, for `Allow`: HEAD beside GET, OPTIONS where browsers call. */
function allowOf(methods: ReadonlyMap<string, RouteSpec>): string {
  const list = RouteTable.allow(methods.keys());
  if ([...methods.values()].some((r) => r.preflight !== undefined)) list.push('OPTIONS');
  return list.join(', ');
}

/** A 400 `invalid_request` naming every problem (`field` and `message`: the first's, and all of them). */
export function refuseProblems(res: ServerResponse, problems: readonly Problem[], headers: Record<string, string> = {}): void {
  const message = problems.length === 1 ? problems[0]!.message : `${problems.length} problems: ${problems.map((p) => p.message).join('; ')}`;
  fail(res, 400, 'invalid_request', message, { field: problems[0]!.field, problems }, headers);
}

async function handle(intake: Intake, site: HttpSite, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '') || '/';
  const at = ROUTE_TABLE.at(path);
  const method = req.method === 'HEAD' ? 'GET' : (req.method ?? '');
  const entry = at?.methods.get(method);
  if (at !== undefined && at.methods.has('GET') && at.methods.get('GET')!.operationId === 'librarySettings') {
    settingsRoute(intake, site, at.params.writeKey!, req, res);
    return;
  }
  if (at !== undefined && req.method === 'OPTIONS' && [...at.methods.values()].some((r) => r.preflight !== undefined)) {
    preflight(intake, req, res, path, allowOf(at.methods));
    return;
  }
  if (at !== undefined && entry === undefined) {
    const allow = allowOf(at.methods);
    fail(res, 405, 'method_not_allowed', `${path} takes ${allow}`, {}, { Allow: allow });
    return;
  }
  if (entry === undefined || !OWN.has(entry.operationId)) {
    if (site.operations !== undefined && (await site.operations(req, res, path))) return;
    fail(res, 404, 'not_found', `No endpoint ${path.length > 200 ? `${path.slice(0, 200)}…` : path}; ingestion is POST /v1/batch or /v1/{identify,track,page,screen,group,alias}`);
    return;
  }
  if (intake.closing) {
    fail(res, 503, 'shutting_down', 'The forwarder is shutting down; try again', {}, { 'Retry-After': '1', Connection: 'close' });
    return;
  }
  const endpoint = INGEST_ENDPOINTS.get(entry.operationId);
  if (endpoint !== undefined) {
    await ingest(intake, site, endpoint, path, req, res);
    return;
  }
  const checkQuery = ROUTE_CHECKS.get(entry)?.query;
  const problems = checkQuery?.(queryObject(new URL(req.url ?? '/', 'http://localhost').searchParams)) ?? [];
  if (problems.length > 0) {
    refuseProblems(res, problems);
    return;
  }
  switch (entry.operationId) {
    case 'health':
      send(res, 200, { status: 'ok' });
      return;
    case 'stats':
      send(res, 200, await site.stats());
      return;
    case 'openapi': {
      const text = apiDocumentText();
      res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(req.method === 'HEAD' ? undefined : text);
      return;
    }
  }
}

/**
 * Answers a CORS preflight (`OPTIONS` with `Origin`) of an ingestion path. It carries no write key,
 * so it is answered for an origin any source allows; the request that follows is checked against
 * its own source. No I/O: a flood of preflights costs a set lookup each.
 */
function preflight(intake: Intake, req: IncomingMessage, res: ServerResponse, path: string, methods: string, origins?: AllowedOrigins): void {
  const origin = requestOrigin(req);
  if (origin === undefined) {
    // Not a browser's preflight: what the path takes.
    res.writeHead(204, { Allow: methods }).end();
    return;
  }
  const allowed = origins ?? intake.preflightOrigins();
  if (!allowed.allows(origin)) {
    intake.refused('origin', 403, undefined, { path, origin, preflight: true });
    fail(res, 403, 'origin_not_allowed', `No source allows browser requests from the origin ${JSON.stringify(shownOrigin(origin))}; add it to the source's allowedOrigins`, {}, { Vary: 'Origin' });
    return;
  }
  res.writeHead(204, preflightHeaders(origin, methods, req.headers['access-control-request-headers'])).end();
}

/**
 * Refuses a browser request (one with `Origin`) whose source does not list its origin: 403, even
 * for a `text/plain` request that skipped the preflight. The 403 carries the CORS headers of that
 * origin, so that the page can read why (it holds no secret). Returns true when it answered.
 */
function refusedOrigin(intake: Intake, source: RouteSource, origin: string | undefined, res: ServerResponse, path: string): boolean {
  if (origin === undefined || source.origins?.allows(origin) === true) return false;
  intake.refused('origin', 403, source.name, { path, origin });
  log('403: a browser request for source %s from an origin it does not allow', source.name);
  fail(res, 403, 'origin_not_allowed', `The source does not allow browser requests from the origin ${JSON.stringify(shownOrigin(origin))}; add it to the source's allowedOrigins`, {}, echoable(origin) ? corsHeaders(origin) : {});
  return true;
}

/**
 * Whether the request was refused at the door (its origin, then its source's ingestion limit), and
 * answered. A promise only for a source with a limit: an `await` costs a turn even for `false`.
 */
function refusedAtDoor(
  intake: Intake,
  source: RouteSource,
  origin: string | undefined,
  res: ServerResponse,
  path: string,
  at: RefusedAt,
): boolean | Promise<boolean> {
  if (refusedOrigin(intake, source, origin, res, path)) return true;
  const limit = source.ingestRateLimit;
  return limit === undefined ? false : refusedRate(intake, source, limit, res, at);
}

/** Takes the request from the source's ingestion limit; answers 429 and returns true past it. */
async function refusedRate(intake: Intake, source: RouteSource, limit: NonNullable<RouteSource['ingestRateLimit']>, res: ServerResponse, at: RefusedAt): Promise<boolean> {
  const admission = await intake.admit(source);
  if (admission.ok) return false;
  intake.refused('rate_limit', 429, source.name, at);
  log('429: source %s is past its ingestion limit', source.name);
  fail(res, 429, 'rate_limited', `The source takes at most ${limit.perSecond} requests a second (burst ${limit.burst}); retry after ${admission.retryAfterSeconds} s`, { retryAfter: admission.retryAfterSeconds }, { 'Retry-After': String(admission.retryAfterSeconds) });
  return true;
}

/**
 * `GET /v1/projects/{writeKey}/settings`: the settings Segment's libraries load, pointing back at
 * this forwarder. The key is in the path, so CORS follows that source's `allowedOrigins`.
 */
function settingsRoute(intake: Intake, site: HttpSite, rawKey: string, req: IncomingMessage, res: ServerResponse): void {
  let key: string | undefined;
  try {
    key = rawKey.length > MAX_KEY_LENGTH * 3 ? undefined : decodeURIComponent(rawKey);
  } catch {
    key = undefined;
  }
  const source = key === undefined || key.length > MAX_KEY_LENGTH ? undefined : intake.sourceForKey(key);
  if (req.method === 'OPTIONS') {
    preflight(intake, req, res, '/v1/projects/{writeKey}/settings', 'GET, HEAD, OPTIONS', source?.origins ?? AllowedOrigins.NONE);
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    fail(res, 405, 'method_not_allowed', 'The settings route takes GET, HEAD, OPTIONS', {}, { Allow: 'GET, HEAD, OPTIONS' });
    return;
  }
  const noStore = { 'Cache-Control': 'no-store' };
  if (source === undefined || key === undefined) {
    fail(res, 404, 'not_found', 'No source has this write key', {}, noStore);
    return;
  }
  const origin = requestOrigin(req);
  if (origin !== undefined) {
    if (refusedOrigin(intake, source, origin, res, '/v1/projects/{writeKey}/settings')) return;
    for (const [name, value] of Object.entries(corsHeaders(origin))) res.setHeader(name, value);
  }
  const http = site.http ?? { trustProxy: 0, publicUrl: undefined };
  const address = publicAddress(req, http.publicUrl, http.trustProxy);
  if (address === undefined) {
    fail(res, 400, 'invalid_host', 'The Host header is not a host name and port; set http.publicUrl so that the settings name the forwarder\'s address', {}, noStore);
    return;
  }
  const text = JSON.stringify(librarySettings(key, address));
  res.writeHead(200, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': `public, max-age=${SETTINGS_MAX_AGE}`,
    Vary: 'Origin',
  });
  res.end(req.method === 'HEAD' ? undefined : text);
}

/**
 * An ingestion request, in its span when the operator traces (see tracing.ts). Not itself async:
 * without a span the request's promise is `receive`'s, with no wrapper to settle per request.
 */
function ingest(intake: Intake, site: HttpSite, endpoint: IngestEndpoint, path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const span = IngestSpan.start();
  const running = receive(intake, site, endpoint, path, req, res, span);
  return span === undefined ? running : endSpan(span, running, path, res);
}

/** Ends `span` with the request `running`: failed with its error, or with its answer's status. */
async function endSpan(span: IngestSpan, running: Promise<void>, path: string, res: ServerResponse): Promise<void> {
  try {
    await running;
  } catch (error) {
    span.fail(error, path);
    throw error;
  }
  span.end(res.statusCode, path);
}

async function receive(
  intake: Intake,
  site: HttpSite,
  endpoint: IngestEndpoint,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
  span: IngestSpan | undefined,
): Promise<void> {
  const receivedAt = intake.now();
  const origin = requestOrigin(req);
  const at: RefusedAt = { path, origin };
  // A page may read every answer to it: a 2xx is only reached once the request's source allows
  // its origin (refusedOrigin), so this makes the refusals (401, 403, 413, 429, 400) readable, and
  // a page on an origin no source lists can tell why it was refused.
  if (origin !== undefined && echoable(origin)) {
    for (const [name, value] of Object.entries(corsHeaders(origin))) res.setHeader(name, value);
  }
  const headerKey = basicAuthKey(req.headers.authorization);
  // A key in the header is checked before the body is read: no upload for an unknown key, a
  // refused origin or a request past the source's limit.
  let source = headerKey === undefined ? undefined : intake.sourceForKey(headerKey);
  if (headerKey !== undefined && source === undefined) {
    intake.refused('unauthorized', 401, undefined, at);
    unauthorized(res);
    return;
  }
  const door = source === undefined ? false : refusedAtDoor(intake, source, origin, res, path, at);
  if (door === true || (door !== false && (await door))) {
    // The body is not read, only let through so the connection can carry the next request.
    req.resume();
    return;
  }
  const read = await readBody(req, MAX_BODY_BYTES);
  if (!read.ok) {
    log('413: body of %d bytes', read.size);
    intake.refused('body_too_large', 413, source?.name, at);
    fail(res, 413, 'body_too_large', `The request body is larger than ${MAX_BODY_BYTES} bytes (500 KB); send smaller batches`, { limit: MAX_BODY_BYTES });
    return;
  }
  const decoding = decodeBody(read.body, req.headers['content-encoding'], MAX_BODY_BYTES);
  const decoded = decoding instanceof Promise ? await decoding : decoding;
  if (!decoded.ok) {
    const code = decoded.reason === 'too_large' ? 'body_too_large' : decoded.reason === 'unsupported' ? 'unsupported_encoding' : 'invalid_body';
    intake.refused(code, decoded.reason === 'too_large' ? 413 : decoded.reason === 'unsupported' ? 415 : 400, source?.name, at);
    if (decoded.reason === 'too_large') {
      fail(res, 413, 'body_too_large', `The decompressed request body is larger than ${MAX_BODY_BYTES} bytes (500 KB); send smaller batches`, { limit: MAX_BODY_BYTES });
    } else if (decoded.reason === 'unsupported') {
      fail(res, 415, 'unsupported_encoding', 'Content-Encoding must be gzip, deflate or none');
    } else {
      fail(res, 400, 'invalid_body', 'The request body could not be decompressed (Content-Encoding)');
    }
    return;
  }
  const json = parseJson(decoded.body);
  if (source === undefined) {
    // Segment also accepts the write key in the body.
    const bodyKey = json.ok && typeof json.value === 'object' && json.value !== null ? (json.value as { writeKey?: unknown }).writeKey : undefined;
    source = typeof bodyKey === 'string' && bodyKey !== '' ? intake.sourceForKey(bodyKey) : undefined;
    if (source === undefined) {
      intake.refused('unauthorized', 401, undefined, at);
      unauthorized(res);
      return;
    }
    const door = refusedAtDoor(intake, source, origin, res, path, at);
    if (door === true || (door !== false && (await door))) return;
  }
  if (!json.ok) {
    intake.refused('invalid_json', 400, source.name, at);
    fail(res, 400, 'invalid_json', 'The request body is not valid JSON');
    return;
  }
  const { traceparent, tracestate } = req.headers;
  const trace = span?.begin({ traceparent, tracestate, path, source: source.name, endpoint, body: json.value });
  const ip = clientAddress(req, site.http?.trustProxy ?? 0);
  const parsed = parseIngestBody(endpoint, json.value, receivedAt, decoded.body.length, ip, trace);
  if (!parsed.ok) {
    log('%d from source %s: %s', parsed.status, source.name, parsed.code);
    intake.refused(parsed.code, parsed.status, source.name, at);
    fail(res, parsed.status, parsed.code, parsed.message);
    return;
  }
  // Built by push, not Array#map: the array map makes had another elements kind once this
  // function was optimized, which sent it and Operations#accepted back to the interpreter.
  const accepted: AcceptedMessage[] = [];
  for (const m of parsed.messages) accepted.push(routeMessage(source, m, receivedAt));
  // Stored (and durable) before the answer: a 2xx means the forwarder will deliver.
  let result: { readonly duplicates: number };
  try {
    result = accepted.length === 0 ? { duplicates: 0 } : await intake.accept(accepted, parsed.messages, source);
  } catch (error) {
    if (!(error instanceof SourceDeletedError)) throw error;
    // The key was valid when the request came; its source was deleted before the body was stored.
    log('401: source %s was deleted while a request of %d messages was read; nothing stored', source.name, accepted.length);
    intake.refused('source_deleted', 401, source.name, at);
    fail(res, 401, 'source_deleted', 'The source of this write key was deleted while the request was read; nothing was stored', {}, { 'WWW-Authenticate': 'Basic realm="eventrelay"' });
    return;
  }
  span?.counted(accepted.length, parsed.rejected.length, result.duplicates);
  log('accepted %d messages from source %s (%d duplicates)', accepted.length, source.name, result.duplicates);
  if (parsed.rejected.length === 0) {
    send(res, 200, { success: true });
    return;
  }
  // Not all or nothing: the valid messages are stored, the refused ones listed by index.
  log('refused %d of %d messages from source %s', parsed.rejected.length, parsed.rejected.length + accepted.length, source.name);
  intake.rejected(source.name, parsed.rejected, receivedAt, json.value);
  send(res, 200, { success: true, rejected: parsed.rejected });
}

function unauthorized(res: ServerResponse): void {
  fail(
    res,
    401,
    'unauthorized',
    'Missing or unknown write key: send it as Basic auth (base64 of "<writeKey>:") or as `writeKey` in the body',
    {},
    { 'WWW-Authenticate': 'Basic realm="eventrelay"' },
  );
}
