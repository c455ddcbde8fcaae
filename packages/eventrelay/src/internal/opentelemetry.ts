/**
 * `@opentelemetry/api`, when the application has it: loaded once, at the first use, never
 * imported. eventrelay does not depend on it (an optional peer): where it is not installed, or on a
 * runtime that cannot load it (Cloudflare Workers, Vercel Edge), `openTelemetry()` is undefined and
 * nothing about traces happens. The API is a façade over what the application registers (its
 * tracer provider, context manager): any copy of it in the process sees the same registration.
 */
import { formatTraceparent, isValidSpanIdentity, parseTraceparent, readTracestate } from './trace-context';
import type { TraceFields } from './trace-context';

// What eventrelay uses of the API (1.x), declared here so that no published type names the package.

/** A span's identity and trace state (`SpanContext`). */
export interface OtelSpanContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly isRemote?: boolean;
  readonly traceState?: OtelTraceState;
}

export interface OtelTraceState {
  serialize(): string;
}

export type OtelAttributes = Record<string, string | number | boolean>;

export interface OtelSpan {
  spanContext(): OtelSpanContext;
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  isRecording(): boolean;
  end(endTime?: number): void;
}

/** The span a link points to (no trace state: eventrelay links to spans named by a `traceparent`). */
export interface OtelLinkedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly isRemote?: boolean;
}

export interface OtelSpanOptions {
  readonly kind?: number;
  readonly attributes?: OtelAttributes;
  readonly links?: { readonly context: OtelLinkedSpan }[];
  /** Epoch milliseconds. */
  readonly startTime?: number;
}

export interface OtelTracer {
  startSpan(name: string, options?: OtelSpanOptions, context?: OtelContext): OtelSpan;
}

export interface OtelTracerProvider {
  getTracer(name: string, version?: string): OtelTracer;
  /** The registered provider's tracer, undefined while none is registered (the API's `ProxyTracerProvider`). */
  getDelegateTracer?(name: string, version?: string): OtelTracer | undefined;
}

/** Opaque: an immutable set of values, among them the active span. */
export interface OtelContext {
  getValue(key: symbol): unknown;
}

export interface OpenTelemetryApi {
  readonly ROOT_CONTEXT: OtelContext;
  createTraceState(raw?: string): OtelTraceState;
  readonly context: {
    active(): OtelContext;
    with<T>(context: OtelContext, fn: () => T): T;
  };
  readonly trace: {
    getTracerProvider(): OtelTracerProvider;
    getTracer(name: string, version?: string): OtelTracer;
    getSpanContext(context: OtelContext): OtelSpanContext | undefined;
    setSpanContext(context: OtelContext, spanContext: OtelSpanContext): OtelContext;
    setSpan(context: OtelContext, span: OtelSpan): OtelContext;
  };
}

/** `SpanKind` of the API. */
export const SPAN_KIND = { INTERNAL: 0, SERVER: 1, CLIENT: 2 } as const;

/** `SpanStatusCode` of the API. */
export const SPAN_STATUS = { UNSET: 0, OK: 1, ERROR: 2 } as const;

/** The module, or what a test put in its place (`setOpenTelemetryLoader`). */
type Loader = () => unknown;

let loader: Loader = requireOpenTelemetry;
/** undefined: not tried yet; null: not there. */
let loaded: OpenTelemetryApi | null | undefined;

/**
 * `@opentelemetry/api`, or undefined where it cannot be loaded. Tried once: the first call pays
 * for the module lookup, every later one reads a variable.
 */
export function openTelemetry(): OpenTelemetryApi | undefined {
  if (loaded === undefined) loaded = tryLoad();
  return loaded ?? undefined;
}

/**
 * For tests: what `openTelemetry()` loads from now on (a function returning the module, or
 * undefined or throwing for "not installed"); without an argument, the package again.
 */
export function setOpenTelemetryLoader(load?: Loader): void {
  loader = load ?? requireOpenTelemetry;
  loaded = undefined;
}

function tryLoad(): OpenTelemetryApi | null {
  let api: unknown;
  try {
    api = loader();
  } catch {
    return null; // not installed (MODULE_NOT_FOUND), or a runtime that cannot require
  }
  return looksLikeApi(api) ? api : null;
}

/**
 * `require('@opentelemetry/api')` from this package's own location, where the runtime can
 * (Node, Bun, Deno: `process.getBuiltinModule`). Synchronous, so that the very first `track()`
 * inside a span carries it; never an `import` a bundler for Workers or Edge would try to resolve.
 */
function requireOpenTelemetry(): unknown {
  const getBuiltin = globalThis.process?.getBuiltinModule;
  if (typeof getBuiltin !== 'function') return undefined;
  const module = globalThis.process.getBuiltinModule('node:module') as { createRequire?: (from: string) => (id: string) => unknown } | undefined;
  if (typeof module?.createRequire !== 'function') return undefined;
  return module.createRequire(import.meta.url)('@opentelemetry/api');
}

function looksLikeApi(value: unknown): value is OpenTelemetryApi {
  const api = value as Partial<OpenTelemetryApi> | undefined;
  return (
    typeof api === 'object' && api !== null &&
    typeof api.createTraceState === 'function' && typeof api.ROOT_CONTEXT === 'object' &&
    typeof api.context?.active === 'function' && typeof api.context.with === 'function' &&
    typeof api.trace?.getTracer === 'function' && typeof api.trace.getTracerProvider === 'function' &&
    typeof api.trace.getSpanContext === 'function' && typeof api.trace.setSpanContext === 'function' &&
    typeof api.trace.setSpan === 'function'
  );
}

/** `traceparent` (and `tracestate`, when there is one) of a span; undefined for an invalid span (a no-op one). */
export function traceFieldsOf(span: OtelSpanContext | undefined): TraceFields | undefined {
  if (span === undefined || !isValidSpanIdentity(span.traceId, span.spanId)) return undefined;
  const traceparent = formatTraceparent(span);
  const tracestate = readTracestate(span.traceState?.serialize());
  return tracestate === undefined ? { traceparent } : { traceparent, tracestate };
}

/**
 * Where `@opentelemetry/api` 1.x keeps what an application registered (`registerGlobal`: its
 * context manager, tracer provider), shared by every copy of the API in the process.
 */
const GLOBAL_API_KEY = Symbol.for('opentelemetry.js.api.1');

/** Whether some copy of the API has a context manager registered: without one no span is ever active. */
function contextManagerRegistered(): boolean {
  return (globalThis as { [GLOBAL_API_KEY]?: { context?: unknown } })[GLOBAL_API_KEY]?.context !== undefined;
}

/** The trace context of the span active where this is called; undefined without the API or an active span. */
export function activeTraceFields(): TraceFields | undefined {
  // With no context manager registered the API answers its root context, which holds no span:
  // the package is not even loaded until an application registers one (a test's loader is asked).
  if (loader === requireOpenTelemetry && !contextManagerRegistered()) return undefined;
  const api = openTelemetry();
  return api === undefined ? undefined : traceFieldsOf(api.trace.getSpanContext(api.context.active()));
}

/**
 * `base` with the remote span `traceparent` names as its span, so that spans started in it
 * continue that trace; undefined when `traceparent` is not a valid value.
 */
export function remoteParent(api: OpenTelemetryApi, base: OtelContext, traceparent: unknown, tracestate: unknown): OtelContext | undefined {
  const parent = parseTraceparent(traceparent);
  if (parent === undefined) return undefined;
  const state = readTracestate(tracestate);
  const span: OtelSpanContext = state === undefined
    ? { ...parent, isRemote: true }
    : { ...parent, isRemote: true, traceState: api.createTraceState(state) };
  return api.trace.setSpanContext(base, span);
}
