/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate`
 * values a message carries in its `context` and a webhook request in its headers. Pure: the
 * client, the forwarder and the receiver helper read and write them with these functions.
 */

/** The header (and `context` field) that carries a span's trace id, span id and flags. */
export const TRACEPARENT = 'traceparent';

/** The header (and `context` field) that carries vendors' trace state beside `traceparent`. */
export const TRACESTATE = 'tracestate';

/** A span's identity as `traceparent` carries it. */
export interface TraceParent {
  /** 32 lowercase hex digits, not all zero. */
  readonly traceId: string;
  /** 16 lowercase hex digits, not all zero. */
  readonly spanId: string;
  /** 8 bits; bit 0 is "sampled". */
  readonly traceFlags: number;
}

/** A message's or a request's trace context: `traceparent`, and `tracestate` when there is one. */
export interface TraceFields {
  readonly traceparent: string;
  readonly tracestate?: string;
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);
/** `version-traceid-parentid-flags` in lowercase hex: the first 55 characters of every version. */
const TRACEPARENT_FORMAT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}/;
/** The most of `tracestate` kept: the 32 list members of 256 characters the specification allows, with their commas. */
const MAX_TRACESTATE = 8223;
/** Printable ASCII: what a header value may hold, and all a valid `tracestate` is made of. */
const TRACESTATE_CHARACTERS = /^[\x20-\x7e]*$/;

/** Whether `traceId` and `spanId` identify a span: the right length in lowercase hex, neither all zero. */
export function isValidSpanIdentity(traceId: unknown, spanId: unknown): boolean {
  return typeof traceId === 'string' && typeof spanId === 'string' && TRACE_ID.test(traceId) && SPAN_ID.test(spanId) &&
    traceId !== ZERO_TRACE_ID && spanId !== ZERO_SPAN_ID;
}

/**
 * Reads a `traceparent` value as the specification says a receiver does: version `00` is exactly
 * 55 characters, a later version may append fields (ignored), `ff` is invalid, and so are upper
 * case and all-zero ids. Undefined for anything else, including a value that is not a string.
 */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string' || value.length < 55 || value.length > 512 || !TRACEPARENT_FORMAT.test(value)) return undefined;
  // Version 00 is exactly 55 characters; a later one may go on after a dash; ff is no version.
  if (value.length > 55 && (value.startsWith('00') || value.charCodeAt(55) !== 0x2d)) return undefined;
  if (value.startsWith('ff')) return undefined;
  const traceId = value.slice(3, 35);
  const spanId = value.slice(36, 52);
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(value.slice(53, 55), 16) };
}

/** `traceparent` for a span, version `00`. */
export function formatTraceparent(span: TraceParent): string {
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * A `tracestate` value worth passing on: a non-empty string of printable ASCII (so it can go in a
 * header as it is) within the specification's size. Undefined otherwise.
 */
export function readTracestate(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '' || value.length > MAX_TRACESTATE || !TRACESTATE_CHARACTERS.test(value)) return undefined;
  return value;
}
