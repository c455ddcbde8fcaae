import { randomUUID } from 'node:crypto';
import { SerializationError } from '../errors';
import { LIBRARY_NAME, VERSION } from '../version';
import type { MessageType } from '../messages/calls';
import { parseTimestamp } from '../messages/rules';

const LIBRARY = Object.freeze({ name: LIBRARY_NAME, version: VERSION });

/** Fields copied as they are from the caller's parameters, by message type. */
const FIELDS: Record<MessageType, readonly string[]> = {
  identify: ['userId', 'anonymousId', 'traits'],
  track: ['userId', 'anonymousId', 'event', 'properties'],
  page: ['userId', 'anonymousId', 'name', 'category', 'properties'],
  screen: ['userId', 'anonymousId', 'name', 'category', 'properties'],
  group: ['userId', 'anonymousId', 'groupId', 'traits'],
  alias: ['userId', 'anonymousId', 'previousId'],
};

/**
 * The message as it goes on the wire (Segment-compatible): a new object, so the
 * caller's parameters are never mutated. `params` has passed `validateParams`.
 */
export function buildMessage(type: MessageType, params: Record<string, unknown>, now: number): Record<string, unknown> {
  const timestamp = params.timestamp === undefined ? new Date(now) : (parseTimestamp(params.timestamp) as Date);
  const message: Record<string, unknown> = {
    type,
    messageId: typeof params.messageId === 'string' && params.messageId !== '' ? params.messageId : randomUUID(),
    timestamp: timestamp.toISOString(),
  };
  for (const field of FIELDS[type]) {
    const value = params[field];
    if (value !== undefined) message[field] = value;
  }
  const context = params.context as Record<string, unknown> | undefined;
  message.context = context === undefined ? { library: LIBRARY } : { ...context, library: LIBRARY };
  if (params.integrations !== undefined) message.integrations = params.integrations;
  return message;
}

/** JSON of a message, made once; what JSON cannot hold becomes a typed error. */
export function serializeMessage(message: Record<string, unknown>): string {
  try {
    return JSON.stringify(message);
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new SerializationError(
      `The ${String(message.type)} message cannot be serialized to JSON (${reason}). ` +
        'Remove circular references, BigInt values and toJSON methods that throw.',
      { cause: error },
    );
  }
}
