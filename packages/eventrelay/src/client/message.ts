import { SerializationError } from '../errors';
import { LIBRARY_NAME, VERSION } from '../version';
import type { MessageType } from '../messages/calls';
import { isoTimestamp, timestampMs } from '../messages/event-time';
import { CALL_FIELDS } from '../messages/rules';
import type { TraceFields } from '../internal/trace-context';

const LIBRARY = Object.freeze({ name: LIBRARY_NAME, version: VERSION });

/** Fields set by `buildMessage` itself rather than copied. */
const OWN = new Set(['messageId', 'timestamp', 'context', 'integrations']);
const COPIED: Readonly<Record<MessageType, readonly string[]>> = Object.fromEntries(
  Object.entries(CALL_FIELDS).map(([type, fields]) => [type, fields.filter((f) => !OWN.has(f))]),
) as unknown as Record<MessageType, readonly string[]>;

/**
 * The message as it goes on the wire (Segment-compatible): a new object, so the caller's
 * parameters are never mutated. `call` is the snapshot `readCall` made and `checkMessage`
 * accepted; spreading `context` may still run a getter, so the caller keeps this in its try.
 * `trace`: the active span's trace context, set as `context.traceparent` (and `tracestate`)
 * unless the caller's `context` has a `traceparent` of its own.
 */
export function buildMessage(type: MessageType, call: Record<string, unknown>, now: number, trace?: TraceFields): Record<string, unknown> {
  const ms = call.timestamp === undefined || call.timestamp === null ? now : (timestampMs(call.timestamp) as number);
  const message: Record<string, unknown> = {
    type,
    messageId: typeof call.messageId === 'string' ? call.messageId : crypto.randomUUID(),
    timestamp: isoTimestamp(ms),
  };
  for (const field of COPIED[type]) {
    const value = call[field];
    if (value !== undefined) message[field] = value;
  }
  const context = call.context as Record<string, unknown> | null | undefined;
  const built: Record<string, unknown> = context === undefined || context === null ? { library: LIBRARY } : { ...context, library: LIBRARY };
  if (trace !== undefined && built.traceparent === undefined) {
    built.traceparent = trace.traceparent;
    if (trace.tracestate !== undefined) built.tracestate = trace.tracestate;
  }
  message.context = built;
  if (call.integrations !== undefined && call.integrations !== null) message.integrations = call.integrations;
  return message;
}

/** JSON of a message, made once; what JSON cannot hold becomes a typed error. */
export function serializeMessage(message: Record<string, unknown>): string {
  try {
    return JSON.stringify(message);
  } catch (error) {
    // The engine's TypeError says which kind (circular, BigInt); what user code threw is not shown.
    const reason =
      error instanceof RangeError ? 'it is nested too deeply' : error instanceof TypeError ? error.message.split('\n')[0] : 'a toJSON method or getter threw';
    throw new SerializationError(
      `The ${String(message.type)} message cannot be serialized to JSON (${reason}). ` +
      'Remove circular references, BigInt values, toJSON methods that throw and very deep nesting.',
      { cause: error },
    );
  }
}
