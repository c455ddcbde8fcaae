/**
 * The forwarder's OpenTelemetry spans, where the operator set OpenTelemetry up: `@opentelemetry/api`
 * installed (an optional peer) and a tracer provider registered, with the SDK and exporter of their
 * choice. Without either (the default) nothing is recorded, no body is read for its trace context
 * and no header is added: a request and an attempt pay a lookup.
 *
 * Two spans: `eventrelay ingest` per ingestion request (http/), `eventrelay attempt` per request of
 * a delivery attempt (delivery/), each continuing the trace of the message. Attributes hold hosts,
 * statuses, counts, ids and the source's name: never a secret, a write key, a URL's path or a body.
 */
import { isPlainObject, openTelemetry, parseTraceparent, readTracestate, remoteParent, SPAN_KIND, SPAN_STATUS, traceFieldsOf } from 'eventrelay/internal';
import type { OpenTelemetryApi, OtelAttributes, OtelLinkedSpan, OtelSpan, OtelSpanContext, OtelTracer, TraceFields, TraceParent } from 'eventrelay/internal';
import { formatTraceparent } from 'eventrelay/internal';
import { FORWARDER_VERSION } from './version';

/** The tracer's name: what the operator's SDK shows as the instrumentation scope. */
export const TRACER_NAME = '@eventrelay/forwarder';
export const INGEST_SPAN = 'eventrelay ingest';
export const ATTEMPT_SPAN = 'eventrelay attempt';

/** Links an ingestion span keeps to the other traces its messages carry, at most. */
export const MAX_LINKS = 32;

/** The API and the operator's tracer. */
export interface Tracing {
  readonly api: OpenTelemetryApi;
  readonly tracer: OtelTracer;
}

/**
 * The operator's tracing, or undefined when `@opentelemetry/api` is not installed or no tracer
 * provider is registered (tracing off). Looked up on each use: a provider registered later, or
 * replaced, is used from then on.
 */
export function tracing(): Tracing | undefined {
  const api = openTelemetry();
  if (api === undefined) return undefined;
  const provider = api.trace.getTracerProvider();
  const tracer = typeof provider.getDelegateTracer === 'function'
    ? provider.getDelegateTracer(TRACER_NAME, FORWARDER_VERSION)
    : provider.getTracer(TRACER_NAME, FORWARDER_VERSION);
  return tracer === undefined ? undefined : { api, tracer };
}

/** Now, on the clock OpenTelemetry's SDK stamps spans with (epoch milliseconds). */
function now(): number {
  return performance.timeOrigin + performance.now();
}

/** What an ingestion request tells its span once its body is read. */
export interface IngestBegin {
  /** The request's own `traceparent` and `tracestate` headers. */
  readonly traceparent: unknown;
  readonly tracestate: unknown;
  readonly path: string;
  readonly source: string;
  readonly endpoint: string;
  /** The parsed request body: its messages' `context.traceparent` choose the span's parent and links. */
  readonly body: unknown;
}

/**
 * The span of one ingestion request (`POST /v1/batch` and the single-call paths). Its parent, in
 * order: the span active when the request came (an HTTP server instrumentation's); the request's
 * `traceparent` header; the span of the messages' `context.traceparent` when every message has
 * one and all share one trace (a single `track()`, say); else none, a trace of its own. It links
 * to each other trace its messages carry (to the first message's span in it). A message that has
 * no `traceparent` gets the span's, so that its delivery continues this trace.
 */
export class IngestSpan {
  readonly #tracing: Tracing;
  readonly #started = now();
  #span: OtelSpan | undefined;

  private constructor(tracing: Tracing) {
    this.#tracing = tracing;
  }

  /** Undefined while tracing is off. */
  static start(): IngestSpan | undefined {
    const on = tracing();
    return on === undefined ? undefined : new IngestSpan(on);
  }

  /** Starts the span; returns the trace context for the messages that carry none (undefined if it has none). */
  begin(request: IngestBegin): TraceFields | undefined {
    const { api, tracer } = this.#tracing;
    const active = api.context.active();
    const messages = messageTraces(request.endpoint, request.body);
    let parent = active;
    if (api.trace.getSpanContext(active) === undefined) {
      const fromHeader = remoteParent(api, active, request.traceparent, request.tracestate);
      const shared = fromHeader === undefined ? sharedTrace(messages) : undefined;
      const chosen = fromHeader ?? (shared === undefined ? undefined : remoteParent(api, active, shared.traceparent, shared.tracestate));
      if (chosen !== undefined) parent = chosen;
    }
    const links = linksOf(messages.traced, api.trace.getSpanContext(parent));
    const attributes: OtelAttributes = {
      'http.request.method': 'POST',
      'url.path': request.path,
      'eventrelay.source': request.source,
      'eventrelay.batch.messages': messages.count,
    };
    const options = { kind: SPAN_KIND.SERVER, attributes, startTime: this.#started, ...(links.length > 0 ? { links } : {}) };
    this.#span = tracer.startSpan(INGEST_SPAN, options, parent);
    return traceFieldsOf(this.#span.spanContext());
  }

  /** What became of the messages. */
  counted(accepted: number, rejected: number, duplicates: number): void {
    this.#span?.setAttribute('eventrelay.batch.accepted', accepted);
    this.#span?.setAttribute('eventrelay.batch.rejected', rejected);
    this.#span?.setAttribute('eventrelay.batch.duplicates', duplicates);
  }

  /**
   * Ends the span with the answer's status: OK for a 2xx, else ERROR. A request refused before its
   * body was read (401, 413, ...) gets its span here, with the request's own parent.
   */
  end(status: number, path: string): void {
    const span = this.#span ?? this.#refused(path);
    span.setAttribute('http.response.status_code', status);
    span.setStatus(status >= 200 && status < 300 ? { code: SPAN_STATUS.OK } : { code: SPAN_STATUS.ERROR, message: `HTTP ${status}` });
    span.end();
  }

  /** Ends the span of a request that failed in the forwarder (the store did not answer, say). */
  fail(error: unknown, path: string): void {
    const span = this.#span ?? this.#refused(path);
    span.setStatus({ code: SPAN_STATUS.ERROR, message: error instanceof Error ? error.name : typeof error });
    span.end();
  }

  #refused(path: string): OtelSpan {
    const { tracer, api } = this.#tracing;
    return tracer.startSpan(INGEST_SPAN, { kind: SPAN_KIND.SERVER, attributes: { 'http.request.method': 'POST', 'url.path': path }, startTime: this.#started }, api.context.active());
  }
}

/** A valid trace context as a message or a request carries it, with the span it names. */
interface Carried {
  readonly fields: TraceFields;
  readonly span: TraceParent;
}

/** `traceparent` and `tracestate` read from a message's context: undefined unless `traceparent` is valid. */
function carried(traceparent: unknown, tracestate: unknown): Carried | undefined {
  const span = parseTraceparent(traceparent);
  if (span === undefined) return undefined;
  const state = readTracestate(tracestate);
  // A later version's value is passed on as version 00, which every receiver reads.
  const formatted = (traceparent as string).length === 55 ? (traceparent as string) : formatTraceparent(span);
  return { fields: state === undefined ? { traceparent: formatted } : { traceparent: formatted, tracestate: state }, span };
}

/** The trace context of each message of a request body, as ingestion will see it (its own `context`, else the batch's). */
interface MessageTraces {
  /** How many messages the body holds. */
  readonly count: number;
  /** Those of the messages with a valid `traceparent`, in order. */
  readonly traced: readonly Carried[];
}

function messageTraces(endpoint: string, body: unknown): MessageTraces {
  if (!isPlainObject(body)) return { count: 0, traced: [] };
  const list = endpoint === 'batch' ? (Array.isArray(body.batch) ? body.batch : []) : [body];
  const batchContext = endpoint === 'batch' && isPlainObject(body.context) ? body.context : undefined;
  const traced: Carried[] = [];
  for (const message of list) {
    const own = isPlainObject(message) && isPlainObject(message.context) ? message.context : undefined;
    // The message's context over the batch's, key by key, as ingestion merges them.
    const from = own !== undefined && 'traceparent' in own ? own : batchContext;
    const found = carried(from?.traceparent, from?.tracestate);
    if (found !== undefined) traced.push(found);
  }
  return { count: list.length, traced };
}

/** The trace context of the messages when every one has one and all share one trace. */
function sharedTrace(messages: MessageTraces): TraceFields | undefined {
  const [first] = messages.traced;
  if (first === undefined || messages.traced.length !== messages.count) return undefined;
  return messages.traced.every((m) => m.span.traceId === first.span.traceId) ? first.fields : undefined;
}

/** A link to each other trace the messages carry (to the first message's span in it), at most `MAX_LINKS`. */
function linksOf(traced: readonly Carried[], parent: OtelSpanContext | undefined): { context: OtelLinkedSpan }[] {
  const links: { context: OtelLinkedSpan }[] = [];
  const seen = new Set<string>();
  if (parent !== undefined) seen.add(parent.traceId);
  for (const { span } of traced) {
    if (links.length >= MAX_LINKS) break;
    if (seen.has(span.traceId)) continue;
    seen.add(span.traceId);
    links.push({ context: { traceId: span.traceId, spanId: span.spanId, traceFlags: span.traceFlags, isRemote: true } });
  }
  return links;
}

/** What a webhook body says of its trace: `context.traceparent` and `tracestate`, and the `messageId`. */
export interface BodyTrace {
  readonly traceparent?: unknown;
  readonly tracestate?: unknown;
  readonly messageId?: string;
}

/** The trace side of one delivery attempt: the operator's tracing and what the body carries. */
export interface AttemptTracing {
  readonly tracing: Tracing;
  readonly body: BodyTrace | undefined;
}

/** Read once per attempt; undefined while tracing is off (the body is then not read). */
export function attemptTracing(body: string): AttemptTracing | undefined {
  const on = tracing();
  return on === undefined ? undefined : { tracing: on, body: readBody(body) };
}

function readBody(body: string): BodyTrace | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined; // a library user's body that is not JSON: sent as it is, without a trace of its own
  }
  if (!isPlainObject(value)) return undefined;
  const context = isPlainObject(value.context) ? value.context : undefined;
  return {
    traceparent: context?.traceparent,
    tracestate: context?.tracestate,
    ...(typeof value.messageId === 'string' ? { messageId: value.messageId } : {}),
  };
}

/** One request of a delivery attempt: the trace headers it sends and its span. */
export interface AttemptTrace {
  /** `traceparent` (and `tracestate`) for the request. */
  readonly headers: TraceFields | undefined;
  /** Ends the span: OK for a 2xx, else ERROR, with the status (or, without an answer, the error's code) as `error.type`. */
  end(status: number | undefined, errorType: string | undefined): void;
}

/**
 * The span of one request of an attempt, child of the message's `context.traceparent` (a trace
 * of its own when the message has none: deletion notices and audience syncs, which the forwarder
 * makes itself, and messages accepted before tracing was on). Its `traceparent` goes in the
 * request, so the receiver's span is its child.
 */
export function startAttempt(on: AttemptTracing, url: URL, attempt: number): AttemptTrace {
  const own = on.body === undefined ? undefined : carried(on.body.traceparent, on.body.tracestate);
  const { api, tracer } = on.tracing;
  const parent = own === undefined ? api.ROOT_CONTEXT : api.trace.setSpanContext(api.ROOT_CONTEXT, remoteSpan(api, own));
  const attributes = attemptAttributes(url, attempt, on.body?.messageId);
  const span = tracer.startSpan(ATTEMPT_SPAN, { kind: SPAN_KIND.CLIENT, attributes }, parent);
  return {
    headers: traceFieldsOf(span.spanContext()) ?? own?.fields,
    end(status, errorType) {
      if (status !== undefined) span.setAttribute('http.response.status_code', status);
      if (status !== undefined && status >= 200 && status < 300) {
        span.setStatus({ code: SPAN_STATUS.OK });
      } else {
        const type = status === undefined ? (errorType ?? 'error') : String(status);
        span.setAttribute('error.type', type);
        span.setStatus({ code: SPAN_STATUS.ERROR, message: status === undefined ? type : `HTTP ${status}` });
      }
      span.end();
    },
  };
}

/** The remote span a message's trace context names, as the API takes it. */
function remoteSpan(api: OpenTelemetryApi, { span, fields }: Carried): OtelSpanContext {
  const { traceId, spanId, traceFlags } = span;
  return fields.tracestate === undefined
    ? { traceId, spanId, traceFlags, isRemote: true }
    : { traceId, spanId, traceFlags, isRemote: true, traceState: api.createTraceState(fields.tracestate) };
}

/** Host, port and scheme of a URL, read once per URL (a destination keeps its URL objects). */
interface UrlParts {
  readonly host: string;
  readonly port: number;
  readonly scheme: string;
}

const URL_PARTS = new WeakMap<URL, UrlParts>();

function attemptAttributes(url: URL, attempt: number, messageId: string | undefined): OtelAttributes {
  let parts = URL_PARTS.get(url);
  if (parts === undefined) {
    const scheme = url.protocol.slice(0, -1);
    parts = { host: url.hostname, port: url.port === '' ? (scheme === 'https' ? 443 : 80) : Number(url.port), scheme };
    URL_PARTS.set(url, parts);
  }
  const attributes: OtelAttributes = {
    'http.request.method': 'POST',
    'server.address': parts.host,
    'server.port': parts.port,
    'url.scheme': parts.scheme,
    'eventrelay.attempt': attempt,
  };
  if (messageId !== undefined) attributes['eventrelay.message.id'] = messageId;
  return attributes;
}
