import { SerializationError } from '../errors';
import { LIBRARY_NAME, VERSION } from '../version';
import type { MessageType } from '../messages/calls';
import { isoTimestamp, timestampMs } from '../messages/event-time';
import type { CallSnapshot } from '../messages/rules';
import type { TraceFields } from '../internal/trace-context';

const LIBRARY = Object.freeze({ name: LIBRARY_NAME, version: VERSION });

/**
 * The message as it goes on the wire (Segment-compatible): a new object, so the caller's
 * parameters are never mutated. `call` is the snapshot `readCall` made and `checkMessage`
 * accepted; spreading `context` may still run a getter, so the caller keeps this in its try.
 * `trace`: the active span's trace context, set as `context.traceparent` (and `tracestate`)
 * unless the caller's `context` has a `traceparent` of its own.
 *
 * Its keys, in this order: `type`, `messageId`, `timestamp`, the call's own fields in
 * `CALL_FIELDS` order, `context`, then `integrations`. A field the call left out (or set to
 * undefined) is an undefined key here, which `JSON.stringify` leaves out: one object shape per
 * type, written with named stores.
 */
export function buildMessage(type: MessageType, call: CallSnapshot, now: number, trace?: TraceFields): Record<string, unknown> {
  const ms = call.timestamp === undefined || call.timestamp === null ? now : (timestampMs(call.timestamp) as number);
  const messageId = typeof call.messageId === 'string' ? call.messageId : crypto.randomUUID();
  const timestamp = isoTimestamp(ms);
  const context = call.context as Record<string, unknown> | null | undefined;
  const built: Record<string, unknown> = context === undefined || context === null ? { library: LIBRARY } : { ...context, library: LIBRARY };
  if (trace !== undefined && built.traceparent === undefined) {
    built.traceparent = trace.traceparent;
    if (trace.tracestate !== undefined) built.tracestate = trace.tracestate;
  }
  const integrations = call.integrations === null ? undefined : call.integrations;
  const { userId, anonymousId } = call;
  switch (type) {
    case 'identify':
      return { type, messageId, timestamp, userId, anonymousId, traits: call.traits, context: built, integrations };
    case 'track':
      return { type, messageId, timestamp, userId, anonymousId, event: call.event, properties: call.properties, context: built, integrations };
    case 'page':
    case 'screen':
      return {
        type,
        messageId,
        timestamp,
        userId,
        anonymousId,
        name: call.name,
        category: call.category,
        properties: call.properties,
        context: built,
        integrations,
      };
    case 'group':
      return { type, messageId, timestamp, userId, anonymousId, groupId: call.groupId, traits: call.traits, context: built, integrations };
    case 'alias':
      return { type, messageId, timestamp, userId, anonymousId, previousId: call.previousId, context: built, integrations };
  }
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
