import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConfigError, NotReplayableError, ValidationError } from 'eventrelay/internal';
import { showValue } from 'eventrelay/internal';
import { fail, send, tokenMatches } from '../http/server';
import { withBody } from './body';
import type { ForwarderMetrics } from '../observability/metrics';
import type { AudienceSyncRequest } from '../routing/audiences';
import type { DeletionRequest } from '../routing/deletion';
import { DELIVERY_STATES } from '../store/delivery-log';
import { serveDebugger } from '../debugger/page';
import { EndpointsDisabledError } from '../observability/operations';
import type { Operations } from '../observability/operations';
import { setupRoute } from './sources';
import { endpointRoute } from './endpoints';
import type { EndpointRoutesOptions } from './endpoints';
import { secretRoute } from './secrets';
import { schemaRoute } from './schema';
import type { SchemaRoutesOptions } from './schema';
import type { SecretRoutesOptions } from './secrets';
import type { MethodHandlers, SetupRoutesOptions } from './sources';
import type { DeliveryDetail, DeliveryState, LoggedMessage, MessageQuery } from '../store/contract';

/** Rows per page of `GET /admin/messages`: default and most. */
export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 500;

/** Largest admin request body, in bytes: an audience sync lists every member. */
export const MAX_ADMIN_BODY_BYTES = 16 * 1024 * 1024;

const MESSAGE_FILTERS = ['source', 'status', 'type', 'event', 'messageId', 'userId', 'since', 'until', 'limit', 'cursor'] as const;

export interface OperationsRoutesOptions extends SetupRoutesOptions, EndpointRoutesOptions, SecretRoutesOptions, SchemaRoutesOptions {
  /** The operations layer (opens the store when needed). */
  readonly ops: () => Promise<Operations>;
  readonly metrics: ForwarderMetrics | undefined;
  /** Path of the Prometheus endpoint; undefined when off. */
  readonly metricsPath: string | undefined;
  /** Whether `/debugger` is served. */
  readonly debuggerOn: boolean;
  readonly adminToken: string | undefined;
  readonly closing: () => boolean;
  /** `/stats` and more for the page's overview. */
  readonly overview: () => Promise<object>;
  /** `POST /admin/deletions` (spec 2.3): a `delete` notice to each affected source. */
  readonly requestDeletion: (request: DeletionRequest) => Promise<object>;
  /** `POST /admin/audiences/sync` (spec 6). */
  readonly syncAudience: (request: AudienceSyncRequest) => Promise<object>;
}

/**
 * The operations routes the forwarder's server hands over: `GET /metrics`, `GET /debugger` and
 * its files, and the admin API of the delivery log (`/admin/messages`, `/admin/deliveries/{id}`,
 * `/admin/deliveries/{id}/replay`, `/admin/recover`, `/admin/stream`, `/admin/overview`), deletions
 * and audience syncs, and the routes of sources, endpoints, secrets, schemas and usage: every `/admin/` route, behind
 * one Bearer check.
 * Resolves false for a path it does not know.
 */
export function createOperationsRoutes(options: OperationsRoutesOptions): (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean> {
  return async (req, res, path) => {
    if (options.metricsPath !== undefined && options.metrics !== undefined && path === options.metricsPath) {
      if (!method(req, res, 'GET')) return true;
      const { contentType, text } = await options.metrics.render();
      res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : text);
      return true;
    }
    if (options.debuggerOn && (path === '/debugger' || path.startsWith('/debugger/'))) {
      if (!method(req, res, 'GET')) return true;
      return serveDebugger(path, req, res);
    }
    const route = adminRoute(path) ?? setupRoute(path) ?? endpointRoute(path) ?? secretRoute(path) ?? schemaRoute(path);
    if (route === undefined) return false;
    const handle = handlerFor(route, req, res);
    if (handle === undefined) return true;
    if (options.closing()) {
      fail(res, 503, 'shutting_down', 'The forwarder is shutting down; try again', {}, { 'Retry-After': '1', Connection: 'close' });
      return true;
    }
    if (!authorized(options.adminToken, req, res)) return true;
    try {
      await handle(options, req, res);
    } catch (error) {
      // Bad input: the same answer whether the config file's rules (ConfigError) or the API's refused it.
      if (error instanceof ValidationError || error instanceof ConfigError) {
        fail(res, 400, 'invalid_request', error.message, error.field === undefined ? {} : { field: error.field });
      } else if (error instanceof EndpointsDisabledError) {
        fail(res, 409, 'endpoint_disabled', error.message, { urls: error.urls });
      } else if (error instanceof NotReplayableError) {
        fail(res, 409, 'not_replayable', error.message);
      } else {
        throw error;
      }
    }
    return true;
  };
}

function method(req: IncomingMessage, res: ServerResponse, expected: 'GET' | 'POST'): boolean {
  if (req.method === expected || (expected === 'GET' && req.method === 'HEAD')) return true;
  fail(res, 405, 'method_not_allowed', `This endpoint takes ${expected}`, {}, { Allow: expected });
  return false;
}

/** `Authorization: Bearer <adminToken>`, as the other admin endpoints. */
function authorized(token: string | undefined, req: IncomingMessage, res: ServerResponse): boolean {
  if (token === undefined) {
    fail(res, 403, 'admin_disabled', 'Admin endpoints are off: set `adminToken` in the config');
    return false;
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (match === null || !tokenMatches(match[1]!, token)) {
    fail(res, 401, 'unauthorized', 'Missing or wrong admin token: send `Authorization: Bearer <adminToken>`', {}, { 'WWW-Authenticate': 'Bearer realm="eventrelay-admin"' });
    return false;
  }
  return true;
}

type Handler = (options: OperationsRoutesOptions, req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** The handler of the request's method (HEAD as GET), or a 405 with `Allow` and undefined. */
function handlerFor(route: MethodHandlers<OperationsRoutesOptions>, req: IncomingMessage, res: ServerResponse): Handler | undefined {
  const name = req.method === 'HEAD' ? 'GET' : req.method;
  const handle = (route as Record<string, Handler | undefined>)[name ?? ''];
  if (handle !== undefined) return handle;
  const allowed = Object.keys(route).join(', ');
  fail(res, 405, 'method_not_allowed', `This endpoint takes ${allowed}`, {}, { Allow: allowed });
  return undefined;
}

function adminRoute(path: string): MethodHandlers<OperationsRoutesOptions> | undefined {
  switch (path) {
    case '/admin/messages':
      return { GET: listMessages };
    case '/admin/recover':
      return { POST: recover };
    case '/admin/stream':
      return { GET: stream };
    case '/admin/overview':
      return { GET: async (o, _req, res) => send(res, 200, await o.overview()) };
    // Both check their body themselves (a ValidationError naming the field).
    case '/admin/deletions':
      return { POST: (o, req, res) => withBody(req, res, MAX_ADMIN_BODY_BYTES, async (body) => send(res, 202, await o.requestDeletion(body as never))) };
    case '/admin/audiences/sync':
      return { POST: (o, req, res) => withBody(req, res, MAX_ADMIN_BODY_BYTES, async (body) => send(res, 200, await o.syncAudience(body as never))) };
  }
  const match = /^\/admin\/deliveries\/([^/]+)(\/replay)?$/.exec(path);
  if (match === null) return undefined;
  const id = match[1]!;
  if (match[2] !== undefined) return { POST: (o, _req, res) => replay(o, res, id) };
  return { GET: (o, _req, res) => getDelivery(o, res, id) };
}

function query(req: IncomingMessage): URLSearchParams {
  return new URL(req.url ?? '/', 'http://localhost').searchParams;
}

/** An instant as ISO 8601 or epoch milliseconds. */
export function parseInstant(value: string, field: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) {
    throw new ValidationError(`Expected \`${field}\` to be an ISO 8601 time or epoch milliseconds, got ${showValue(value)}`, field);
  }
  return ms;
}

function parseId(value: string, field = 'id'): number {
  if (!/^\d{1,15}$/.test(value)) throw new ValidationError(`Expected \`${field}\` to be a delivery id (a positive integer), got ${showValue(value)}`, field);
  return Number(value);
}

/** The filters of `GET /admin/messages`; ValidationError for an unknown or bad one. */
export function parseMessageQuery(params: URLSearchParams): MessageQuery {
  for (const key of params.keys()) {
    if (!(MESSAGE_FILTERS as readonly string[]).includes(key)) {
      throw new ValidationError(`Unknown filter \`${key}\`; expected ${MESSAGE_FILTERS.map((f) => `\`${f}\``).join(', ')}`, key);
    }
  }
  const text = (name: (typeof MESSAGE_FILTERS)[number]) => {
    const value = params.get(name);
    return value === null || value === '' ? undefined : value;
  };
  const status = text('status');
  if (status !== undefined && !(DELIVERY_STATES as readonly string[]).includes(status)) {
    throw new ValidationError(`Expected \`status\` to be one of ${DELIVERY_STATES.join(', ')}, got ${showValue(status)}`, 'status');
  }
  const limitText = text('limit');
  const limit = limitText === undefined ? DEFAULT_PAGE : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new ValidationError(`Expected \`limit\` to be an integer from 1 to ${MAX_PAGE}, got ${showValue(limitText)}`, 'limit');
  }
  const since = text('since');
  const until = text('until');
  const cursor = text('cursor');
  const q: { -readonly [K in keyof MessageQuery]: MessageQuery[K] } = { limit };
  if (text('source') !== undefined) q.source = text('source');
  if (status !== undefined) q.state = status as DeliveryState;
  if (text('type') !== undefined) q.type = text('type');
  if (text('event') !== undefined) q.event = text('event');
  if (text('messageId') !== undefined) q.messageId = text('messageId');
  if (text('userId') !== undefined) q.userId = text('userId');
  if (since !== undefined) q.since = parseInstant(since, 'since');
  if (until !== undefined) q.until = parseInstant(until, 'until');
  if (cursor !== undefined) q.beforeId = parseId(cursor, 'cursor');
  return q;
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** A log row as the API shows it: times in ISO 8601, the log's `state` named `status` as in the filter. */
function showMessage(m: LoggedMessage): object {
  return {
    id: m.id,
    source: m.source,
    kind: m.kind,
    messageId: m.messageId,
    type: m.type,
    event: m.event,
    userId: m.userId,
    status: m.state,
    receivedAt: iso(m.receivedAt),
    updatedAt: iso(m.updatedAt),
    finishedAt: iso(m.finishedAt),
    attempts: m.attempts,
    series: m.series,
    reason: m.reason,
    hasBody: m.hasBody,
  };
}

function showDetail(d: DeliveryDetail, waitingBehind: { id: number | null; messageId: string } | null): object {
  return {
    ...showMessage(d),
    waitingBehind,
    body: d.body,
    attemptLog: d.attemptLog.map((a) => ({ ...a, at: iso(a.at), nextAttemptAt: iso(a.nextAttemptAt) })),
  };
}

async function listMessages(o: OperationsRoutesOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const q = parseMessageQuery(query(req));
  // One more than asked tells whether there is a next page.
  const rows = await (await o.ops()).messages({ ...q, limit: q.limit + 1 });
  const page = rows.slice(0, q.limit);
  const nextCursor = rows.length > q.limit ? String(page.at(-1)!.id) : null;
  send(res, 200, { items: page.map(showMessage), nextCursor });
}

async function getDelivery(o: OperationsRoutesOptions, res: ServerResponse, idText: string): Promise<void> {
  const id = parseId(idText);
  const delivery = await (await o.ops()).delivery(id);
  if (delivery === undefined) {
    fail(res, 404, 'not_found', `No delivery ${id} in the log (it may have been pruned after \`storage.retention\`)`);
    return;
  }
  send(res, 200, showDetail(delivery, await (await o.ops()).waitingBehind(delivery)));
}

async function replay(o: OperationsRoutesOptions, res: ServerResponse, idText: string): Promise<void> {
  const id = parseId(idText);
  const result = await (await o.ops()).replay(id);
  if (result === undefined) {
    fail(res, 404, 'not_found', `No delivery ${id} in the log (it may have been pruned after \`storage.retention\`)`);
    return;
  }
  send(res, 202, result);
}

async function recover(o: OperationsRoutesOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  await withBody(req, res, 64 * 1024, (body) => recoverFrom(o, body, res));
}

/** `POST /admin/recover { source, since, until? }`: failed deliveries of the source in the range, queued again. */
async function recoverFrom(o: OperationsRoutesOptions, body: Record<string, unknown>, res: ServerResponse): Promise<void> {
  for (const key of Object.keys(body)) {
    if (!['source', 'since', 'until'].includes(key)) throw new ValidationError(`Unknown field \`${key}\`; expected \`source\`, \`since\`, \`until\``, key);
  }
  if (typeof body.source !== 'string' || body.source === '') throw new ValidationError('Expected `source` to be a source name', 'source');
  const instant = (value: unknown, field: string): number => {
    if (typeof value === 'number' && Number.isFinite(value)) return value;
    if (typeof value === 'string') return parseInstant(value, field);
    throw new ValidationError(`Expected \`${field}\` to be an ISO 8601 time or epoch milliseconds, got ${showValue(value)}`, field);
  };
  const since = instant(body.since, 'since');
  const until = body.until === undefined ? Number.MAX_SAFE_INTEGER : instant(body.until, 'until');
  if (until <= since) throw new ValidationError('Expected `until` to be after `since`', 'until');
  const result = await (await o.ops()).recover(body.source, since, until);
  send(res, 202, { source: result.source, since: iso(result.since), until: body.until === undefined ? null : iso(result.until), queued: result.queued });
}

async function stream(o: OperationsRoutesOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const params = query(req);
  for (const key of params.keys()) {
    if (key !== 'source') throw new ValidationError(`Unknown parameter \`${key}\`; expected \`source\``, key);
  }
  const source = params.get('source') ?? '';
  const ops = await o.ops();
  if (source !== '' && !ops.hasSource(source)) throw new ValidationError(`Unknown source ${showValue(source)}`, 'source');
  ops.live.subscribe(req, res, source === '' ? undefined : source);
}
