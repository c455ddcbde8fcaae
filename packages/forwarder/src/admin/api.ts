import type { IncomingMessage, ServerResponse } from 'node:http';
import { ConfigError, isPlainObject, NotReplayableError, ValidationError } from 'eventrelay/internal';
import { showValue } from 'eventrelay/internal';
import { fail, refuseProblems, send, tokenMatches } from '../http/server';
import { readBody } from '../http/read-body';
import { DELIVERY_ID_PATTERN, queryObject, ROUTE_CHECKS, ROUTE_TABLE } from '../http/routes';
import type { HandlerInputs, RouteSpec } from '../http/routes';
import { pathSourceName } from '../source-names';
import type { ForwarderMetrics } from '../observability/metrics';
import type { AudienceSyncRequest } from '../routing/audiences';
import type { DeletionRequest } from '../routing/deletion';
import { DELIVERY_STATES } from '../store/delivery-log';
import { serveDebugger } from '../debugger/page';
import { EndpointsDisabledError } from '../observability/operations';
import type { Operations } from '../observability/operations';
import { SETUP_HANDLERS } from './sources';
import { ENDPOINT_HANDLERS } from './endpoints';
import type { EndpointRoutesOptions } from './endpoints';
import { SECRET_HANDLERS } from './secrets';
import { SCHEMA_HANDLERS } from './schema';
import { TRANSFORM_HANDLERS } from './transform';
import type { SchemaRoutesOptions } from './schema';
import type { SecretRoutesOptions } from './secrets';
import type { AdminHandler, AdminHandlers, AdminInput, SetupRoutesOptions } from './sources';
import type { DeliveryDetail, DeliveryState, LoggedMessage, MessageQuery } from '../store/contract';

/** Rows per page of `GET /admin/messages`: default and most. */
export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 500;

const DELIVERY_ID = new RegExp(DELIVERY_ID_PATTERN);

const MESSAGE_FILTERS = ['source', 'status', 'type', 'event', 'messageId', 'userId', 'since', 'until', 'limit', 'cursor'] as const;

/** The store as the admin API reaches it (`runtime/lifecycle.ts`): opened when needed, with the operations layer on it. */
export interface OperationsAccess {
  open(): Promise<{ readonly ops: Operations }>;
  /** True once shutdown began: every route answers 503. */
  readonly closing: boolean;
}

/** The queue's other inputs and the page's overview (`runtime/work.ts`'s `Work`). */
export interface AdminWork {
  /** `POST /admin/deletions` (spec 2.3): a `delete` notice to each affected source. */
  requestDeletion(request: DeletionRequest): Promise<object>;
  /** `POST /admin/audiences/sync` (spec 6). */
  syncAudience(request: AudienceSyncRequest): Promise<object>;
  /** `/stats` and more for the page's overview. */
  overview(): Promise<object>;
}

export interface OperationsRoutesOptions extends SetupRoutesOptions, EndpointRoutesOptions, SecretRoutesOptions, SchemaRoutesOptions {
  readonly access: OperationsAccess;
  readonly work: AdminWork;
  readonly metrics: ForwarderMetrics | undefined;
  /** Path of the Prometheus endpoint; undefined when off. */
  readonly metricsPath: string | undefined;
  /** Whether `/debugger` is served. */
  readonly debuggerOn: boolean;
  readonly adminToken: string | undefined;
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
    const found = ROUTE_TABLE.lookup(req.method ?? '', path);
    if (found === undefined) return false;
    if ('allow' in found) {
      fail(res, 405, 'method_not_allowed', `This endpoint takes ${found.allow.join(', ')}`, {}, { Allow: found.allow.join(', ') });
      return true;
    }
    const { route, params: rawParams } = found.found;
    // Dispatch calls each handler with the input its route declares: typed per route above, untyped here.
    const handle = (HANDLERS as unknown as Record<string, AdminHandler<OperationsRoutesOptions> | undefined>)[route.operationId];
    if (handle === undefined) return false;
    if (options.access.closing) {
      fail(res, 503, 'shutting_down', 'The forwarder is shutting down; try again', {}, { 'Retry-After': '1', Connection: 'close' });
      return true;
    }
    if (route.auth === 'admin' && !authorized(options.adminToken, req, res)) return true;
    try {
      const input = await inputOf(route, rawParams, req, res);
      if (input !== undefined) await handle(options, input, req, res);
    } catch (error) {
      // Bad input: the same answer whether the config file's rules (ConfigError) or the API's refused it.
      if (error instanceof ConfigError && error.problems !== undefined && error.problems.length > 1) {
        // The config file's rules found several problems (a destination, `POST /admin/apply`'s sources): all of them.
        refuseProblems(res, error.problems.map((p) => ({ field: p.field ?? '', message: p.message })));
      } else if (error instanceof ValidationError || error instanceof ConfigError) {
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

/**
 * A request's input as its route declares it: the path's parameters percent-decoded and checked
 * by the route's schema (a source name then also by the config file's rules, `field` "name"), the
 * query and the body checked by the route's schemas, every problem at once (the path's and the
 * query's in one answer). Undefined once it answered (400, 413).
 */
async function inputOf(
  route: RouteSpec,
  rawParams: Readonly<Record<string, string>>,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<AdminInput | undefined> {
  const params: Record<string, string> = {};
  for (const [name, raw] of Object.entries(rawParams)) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(raw);
    } catch {
      throw new ValidationError(`Expected the ${name === 'name' ? 'source name' : name} in the path to be percent-encoded UTF-8`, name);
    }
    params[name] = decoded;
  }
  const checks = ROUTE_CHECKS.get(route) ?? {};
  const query = queryObject(new URL(req.url ?? '/', 'http://localhost').searchParams);
  const pathProblems = checks.params?.(params) ?? [];
  const queryProblems = checks.query?.(query) ?? [];
  if (pathProblems.length > 0 || queryProblems.length > 0) {
    refuseProblems(res, [...pathProblems, ...queryProblems]);
    return undefined;
  }
  // What a schema cannot say of a source name (its normal form, invisible characters) is the config file's rule.
  if (params.name !== undefined) params.name = pathSourceName(params.name, 'name');
  if (route.body === undefined) return { params, query, body: {} };
  const limit = route.body.limit ?? 64 * 1024;
  const read = await readBody(req, limit);
  if (!read.ok) {
    fail(res, 413, 'body_too_large', `The request body is larger than ${limit} bytes`, { limit }, { Connection: 'close' });
    return undefined;
  }
  if (!route.body.required && read.body.length === 0) return { params, query, body: {} };
  let body: unknown;
  try {
    body = JSON.parse(read.body.toString('utf8'));
  } catch {
    body = undefined;
  }
  if (!isPlainObject(body)) {
    fail(res, 400, 'invalid_json', 'Expected a JSON object body', {}, { 'Cache-Control': 'no-store' });
    return undefined;
  }
  const bodyProblems = checks.body?.(body) ?? [];
  if (bodyProblems.length > 0) {
    refuseProblems(res, bodyProblems, { 'Cache-Control': 'no-store' });
    return undefined;
  }
  return { params, query, body };
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

/** The admin routes' handlers by operationId: each route of http/routes/ the operations layer answers has one here. */
const HANDLERS = {
  listMessages: (o, _input, req, res) => listMessages(o, req, res),
  // The route's schema took the id (a 400 naming `id` when malformed): it is a safe integer.
  getDelivery: (o, { params }, _req, res) => getDelivery(o, res, Number(params.id)),
  replayDelivery: (o, { params }, _req, res) => replay(o, res, Number(params.id)),
  recover: (o, { body }, _req, res) => recoverFrom(o, body, res),
  stream: (o, { query }, req, res) => stream(o, query, req, res),
  overview: async (o, _input, _req, res) => send(res, 200, await o.work.overview()),
  // The route's schema checked the deletion's body; an unknown source is the work's to refuse (`field` "sources").
  requestDeletion: async (o, { body }, _req, res) => send(res, 202, await o.work.requestDeletion(body)),
  // Checks its body itself, by the rules the programmatic facade shares (a ValidationError naming the field).
  syncAudience: async (o, { body }, _req, res) => send(res, 200, await o.work.syncAudience(body as never)),
  ...SETUP_HANDLERS,
  ...ENDPOINT_HANDLERS,
  ...SECRET_HANDLERS,
  ...SCHEMA_HANDLERS,
  ...TRANSFORM_HANDLERS,
} satisfies AdminHandlers<OperationsRoutesOptions>;

/** The operations layer, the store opened when needed. */
async function opsOf(o: OperationsRoutesOptions): Promise<Operations> {
  return (await o.access.open()).ops;
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

/** The query's `cursor`: the query of `GET /admin/messages` is checked here, by the pattern its route declares. */
function parseCursor(value: string): number {
  if (!DELIVERY_ID.test(value)) throw new ValidationError(`Expected \`cursor\` to be a delivery id (a positive integer), got ${showValue(value)}`, 'cursor');
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
  if (cursor !== undefined) q.beforeId = parseCursor(cursor);
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
  const rows = await (await opsOf(o)).messages({ ...q, limit: q.limit + 1 });
  const page = rows.slice(0, q.limit);
  const nextCursor = rows.length > q.limit ? String(page.at(-1)!.id) : null;
  send(res, 200, { items: page.map(showMessage), nextCursor });
}

async function getDelivery(o: OperationsRoutesOptions, res: ServerResponse, id: number): Promise<void> {
  const delivery = await (await opsOf(o)).delivery(id);
  if (delivery === undefined) {
    fail(res, 404, 'not_found', `No delivery ${id} in the log (it may have been pruned after \`storage.retention\`)`);
    return;
  }
  send(res, 200, showDetail(delivery, await (await opsOf(o)).waitingBehind(delivery)));
}

async function replay(o: OperationsRoutesOptions, res: ServerResponse, id: number): Promise<void> {
  const result = await (await opsOf(o)).replay(id);
  if (result === undefined) {
    fail(res, 404, 'not_found', `No delivery ${id} in the log (it may have been pruned after \`storage.retention\`)`);
    return;
  }
  send(res, 202, result);
}

/** The body of `POST /admin/recover`, as its route's schema checks it. */
type RecoverRequest = HandlerInputs['recover']['body'];

/** `POST /admin/recover { source, since, until? }`: failed deliveries of the source in the range, queued again. */
async function recoverFrom(o: OperationsRoutesOptions, body: RecoverRequest, res: ServerResponse): Promise<void> {
  const instant = (value: string | number, field: string): number => (typeof value === 'number' ? value : parseInstant(value, field));
  const since = instant(body.since, 'since');
  const until = body.until === undefined ? Number.MAX_SAFE_INTEGER : instant(body.until, 'until');
  if (until <= since) throw new ValidationError('Expected `until` to be after `since`', 'until');
  const result = await (await opsOf(o)).recover(body.source, since, until);
  send(res, 202, { source: result.source, since: iso(result.since), until: body.until === undefined ? null : iso(result.until), queued: result.queued });
}

async function stream(o: OperationsRoutesOptions, params: { readonly source?: string }, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const source = params.source ?? '';
  const ops = await opsOf(o);
  if (source !== '' && !ops.hasSource(source)) throw new ValidationError(`Unknown source ${showValue(source)}`, 'source');
  ops.live.subscribe(req, res, source === '' ? undefined : source);
}
