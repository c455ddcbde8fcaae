import { openTelemetry, remoteParent, SPAN_KIND, SPAN_STATUS } from '../internal/opentelemetry';
import type { OtelAttributes } from '../internal/opentelemetry';
import { TRACEPARENT, TRACESTATE } from '../internal/trace-context';
import { LIBRARY_NAME, VERSION } from '../version';
import { getHeader } from './headers';
import type { HeadersLike } from './headers';
import type { ParsedWebhookBody } from './parse';

/** The name of the span the user's handler runs in. */
export const HANDLER_SPAN = 'eventrelay handle';

/**
 * Runs `handle` (the user's handler) inside a span that continues the trace of the request's
 * `traceparent` header, when there is a valid one and `@opentelemetry/api` is there; else just
 * runs it. The span is a child of the span already active when that one is in the same trace (an
 * HTTP server instrumentation's, which read the same header), else of the remote sender's span.
 * A batch gets one span for all its messages, with `eventrelay.batch.size`.
 * It ends when the handler settles: status OK, or ERROR with the name of what it threw (never the
 * error's message: it may hold anything).
 */
export function handleInSpan(headers: HeadersLike, body: ParsedWebhookBody, handle: () => Promise<void>): Promise<void> {
  const traceparent = header(headers, TRACEPARENT);
  if (traceparent === undefined) return handle();
  const api = openTelemetry();
  if (api === undefined) return handle();
  const active = api.context.active();
  const remote = remoteParent(api, active, traceparent, header(headers, TRACESTATE));
  if (remote === undefined) return handle();
  const current = api.trace.getSpanContext(active);
  const nested = current !== undefined && current.traceId === api.trace.getSpanContext(remote)?.traceId;
  const attributes = spanAttributes(body);
  const span = api.trace
    .getTracer(LIBRARY_NAME, VERSION)
    .startSpan(HANDLER_SPAN, { kind: nested ? SPAN_KIND.INTERNAL : SPAN_KIND.SERVER, attributes }, nested ? active : remote);
  return api.context.with(api.trace.setSpan(nested ? active : remote, span), handle).then(
    () => {
      span.setStatus({ code: SPAN_STATUS.OK });
      span.end();
    },
    (error: unknown) => {
      span.setStatus({ code: SPAN_STATUS.ERROR, message: error instanceof Error ? error.name : typeof error });
      span.end();
      throw error;
    },
  );
}

function spanAttributes({ batch, messages }: ParsedWebhookBody): OtelAttributes {
  if (batch) return { 'eventrelay.batch.size': messages.length };
  const message = messages[0]!;
  const attributes: OtelAttributes = { 'eventrelay.message.type': message.type };
  if ('messageId' in message && typeof message.messageId === 'string') attributes['eventrelay.message.id'] = message.messageId;
  return attributes;
}

/** One header's value as a string (a repeated header is not a valid trace context). */
function header(headers: HeadersLike, name: string): string | undefined {
  try {
    const value = getHeader(headers, name);
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}
