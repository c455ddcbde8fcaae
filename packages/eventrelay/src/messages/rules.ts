import { ValidationError } from '../errors';
import { describeValue, isPlainObject, showValue } from '../internal/values';
import { MESSAGE_TYPES } from './calls';
import type { MessageType } from './calls';
import { TIMESTAMP_EXPECTED, timestampMs } from './event-time';

/**
 * The rules of spec 2.4, ONE definition for the client (before it queues a call) and the
 * forwarder (for each message of a batch), so that a message the client accepts is never
 * refused downstream. They apply to a message in its wire shape (Segment-compatible JSON):
 *
 * - ids (`userId`, `anonymousId`, `groupId`, `previousId`) are non-empty strings or finite
 *   numbers: Segment-compatible SDKs send numeric ids and the forwarder accepts them, so the
 *   client does too. The webhook carries them as strings. An empty `userId` or `anonymousId`
 *   counts as absent.
 * - every call but alias needs `userId` or `anonymousId`; track needs `event`; group needs
 *   `groupId`; alias needs `userId` and `previousId`.
 * - `messageId`, when given, is a non-empty string of at most 200 characters.
 * - `timestamp` (and `originalTimestamp`), when given, follow the event-time policy
 *   (`event-time.ts`): an RFC 3339 date-time with a zone, or a Date, from year 0000 to 9999.
 * - `context`, `integrations`, `traits` and `properties` are objects; `name` and `category` strings.
 * - `null` counts as absent for every optional field.
 * The 32 KB limit (`limits.ts`) is checked on the serialized message by each side.
 */

/** Longest `messageId` accepted, in characters. */
export const MAX_MESSAGE_ID_LENGTH = 200;

const TYPES: ReadonlySet<string> = new Set(MESSAGE_TYPES);

/** A non-empty string or a finite number. */
export function isId(value: unknown): value is string | number {
  return (typeof value === 'string' && value !== '') || (typeof value === 'number' && Number.isFinite(value));
}

function absent(value: unknown): boolean {
  return value === undefined || value === null;
}

/** `a track message`, `an identify message`. */
function aMessage(type: string): string {
  return `${/^[aeiou]/.test(type) ? 'An' : 'A'} ${type} message`;
}

function problem(type: string, field: string, expected: string, value: unknown): ValidationError {
  return new ValidationError(`${aMessage(type)} needs \`${field}\` as ${expected}, got ${describeValue(value)}`, field);
}

// Each check takes the field's value, read by the caller with a named property access: V8 keeps
// those monomorphic where a `m[field]` with a varying field is a megamorphic lookup per read.

function optionalId(type: string, field: string, value: unknown): ValidationError | undefined {
  // An empty string counts as absent here: some SDKs send `userId: ''` beside an anonymousId.
  return absent(value) || value === '' || isId(value) ? undefined : problem(type, field, 'a string or a number when given', value);
}

function requiredId(type: string, field: string, value: unknown): ValidationError | undefined {
  return isId(value) ? undefined : problem(type, field, 'a non-empty string or a number', value);
}

function requiredString(type: string, field: string, value: unknown): ValidationError | undefined {
  return typeof value === 'string' && value !== '' ? undefined : problem(type, field, 'a non-empty string', value);
}

function optionalString(type: string, field: string, value: unknown): ValidationError | undefined {
  return absent(value) || typeof value === 'string' ? undefined : problem(type, field, 'a string when given', value);
}

function optionalObject(type: string, field: string, value: unknown): ValidationError | undefined {
  return absent(value) || isPlainObject(value) ? undefined : problem(type, field, 'an object when given', value);
}

function optionalTimestamp(type: string, field: string, value: unknown): ValidationError | undefined {
  if (absent(value) || timestampMs(value) !== undefined) return undefined;
  const got = describeValue(value);
  return new ValidationError(
    `${aMessage(type)} needs \`${field}\` as ${TIMESTAMP_EXPECTED}, got ${got === 'a Date' ? 'an invalid or out-of-range Date' : got}`,
    field,
  );
}

function messageId(type: string, value: unknown): ValidationError | undefined {
  if (absent(value) || (typeof value === 'string' && value !== '' && value.length <= MAX_MESSAGE_ID_LENGTH)) return undefined;
  return problem(type, 'messageId', `a non-empty string of at most ${MAX_MESSAGE_ID_LENGTH} characters when given`, value);
}

/**
 * Checks one message in its wire shape (`type` included). Returns the first rule it breaks,
 * as a `ValidationError` naming the field, or undefined when it is valid.
 * Reads plain data: the client passes a snapshot of the caller's parameters, never their object.
 */
export function checkMessage(m: Record<string, unknown>): ValidationError | undefined {
  const type = m.type;
  if (typeof type !== 'string' || !TYPES.has(type)) {
    return new ValidationError(`Expected \`type\` to be one of ${MESSAGE_TYPES.join(', ')}, got ${showValue(type)}`, 'type');
  }
  const error =
    optionalId(type, 'userId', m.userId) ??
    optionalId(type, 'anonymousId', m.anonymousId) ??
    messageId(type, m.messageId) ??
    optionalTimestamp(type, 'timestamp', m.timestamp) ??
    optionalTimestamp(type, 'originalTimestamp', m.originalTimestamp) ??
    optionalObject(type, 'context', m.context) ??
    optionalObject(type, 'integrations', m.integrations) ??
    checkTypeFields(type as MessageType, m);
  if (error !== undefined) return error;
  if (type !== 'alias' && !isId(m.userId) && !isId(m.anonymousId)) {
    return new ValidationError(
      `${aMessage(type)} needs \`userId\` or \`anonymousId\` (a non-empty string or a number); neither was given`,
      'userId',
    );
  }
  return undefined;
}

function checkTypeFields(type: MessageType, m: Record<string, unknown>): ValidationError | undefined {
  switch (type) {
    case 'identify':
      return optionalObject(type, 'traits', m.traits);
    case 'track':
      return requiredString(type, 'event', m.event) ?? optionalObject(type, 'properties', m.properties);
    case 'page':
    case 'screen':
      return (
        optionalString(type, 'name', m.name) ??
        optionalString(type, 'category', m.category) ??
        optionalObject(type, 'properties', m.properties) ??
        optionalObject(type, 'traits', m.traits)
      );
    case 'group':
      return requiredId(type, 'groupId', m.groupId) ?? optionalObject(type, 'traits', m.traits);
    case 'alias':
      return requiredId(type, 'userId', m.userId) ?? requiredId(type, 'previousId', m.previousId);
  }
}

const COMMON_FIELDS = ['userId', 'anonymousId', 'messageId', 'timestamp', 'context', 'integrations'] as const;

/** The parameters each client call reads, by type: what it sends besides its own fields. */
export const CALL_FIELDS: Readonly<Record<MessageType, readonly string[]>> = {
  identify: [...COMMON_FIELDS, 'traits'],
  track: [...COMMON_FIELDS, 'event', 'properties'],
  page: [...COMMON_FIELDS, 'name', 'category', 'properties'],
  screen: [...COMMON_FIELDS, 'name', 'category', 'properties'],
  group: [...COMMON_FIELDS, 'groupId', 'traits'],
  alias: [...COMMON_FIELDS, 'previousId'],
};

/**
 * A call's parameters as `readCall` read them: `type` and every field any call sends, undefined
 * where the call does not send it or the caller left it out. One shape for every call, so that
 * the rules and `buildMessage` read it with monomorphic property accesses.
 */
export type CallSnapshot = {
  readonly type: MessageType;
  readonly userId: unknown;
  readonly anonymousId: unknown;
  readonly messageId: unknown;
  readonly timestamp: unknown;
  readonly context: unknown;
  readonly integrations: unknown;
  readonly event: unknown;
  readonly properties: unknown;
  readonly name: unknown;
  readonly category: unknown;
  readonly traits: unknown;
  readonly groupId: unknown;
  readonly previousId: unknown;
};

/**
 * Reads a caller's parameters ONCE into a plain object (`type` plus the fields the call
 * sends, in `CALL_FIELDS` order), so a getter or Proxy runs once and the rules and the message
 * see the same values. Throws a `ValidationError` when the parameters are not an object or
 * reading a field throws (a throwing getter, a revoked Proxy); the caller catches it.
 */
export function readCall(type: MessageType, params: unknown): CallSnapshot {
  let object: boolean;
  try {
    object = isPlainObject(params);
  } catch (error) {
    throw new ValidationError(`${type}() could not inspect its parameters (a revoked Proxy?)`, undefined, { cause: error });
  }
  if (!object) throw new ValidationError(`${type}() takes an object of parameters, got ${describeValue(params)}`);
  const source = params as Record<string, unknown>;
  // Named reads, one per field, the field being read kept for the error should one throw.
  let field = 'userId';
  try {
    const userId = source.userId;
    field = 'anonymousId';
    const anonymousId = source.anonymousId;
    field = 'messageId';
    const messageId = source.messageId;
    field = 'timestamp';
    const timestamp = source.timestamp;
    field = 'context';
    const context = source.context;
    field = 'integrations';
    const integrations = source.integrations;
    let event: unknown;
    let properties: unknown;
    let name: unknown;
    let category: unknown;
    let traits: unknown;
    let groupId: unknown;
    let previousId: unknown;
    switch (type) {
      case 'identify':
        field = 'traits';
        traits = source.traits;
        break;
      case 'track':
        field = 'event';
        event = source.event;
        field = 'properties';
        properties = source.properties;
        break;
      case 'page':
      case 'screen':
        field = 'name';
        name = source.name;
        field = 'category';
        category = source.category;
        field = 'properties';
        properties = source.properties;
        break;
      case 'group':
        field = 'groupId';
        groupId = source.groupId;
        field = 'traits';
        traits = source.traits;
        break;
      case 'alias':
        field = 'previousId';
        previousId = source.previousId;
        break;
    }
    return { type, userId, anonymousId, messageId, timestamp, context, integrations, event, properties, name, category, traits, groupId, previousId };
  } catch (error) {
    throw new ValidationError(`${type}() could not read \`${field}\` from its parameters: reading it threw`, field, { cause: error });
  }
}

/** The rules of spec 2.4 applied to a client call's parameters; never throws. */
export function validateParams(type: MessageType, params: unknown): ValidationError | undefined {
  try {
    return checkMessage(readCall(type, params));
  } catch (error) {
    return error instanceof ValidationError ? error : new ValidationError(`${type}() could not read its parameters`, undefined, { cause: error });
  }
}
