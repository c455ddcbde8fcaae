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

function optionalId(m: Record<string, unknown>, type: string, field: string): ValidationError | undefined {
  const value = m[field];
  // An empty string counts as absent here: some SDKs send `userId: ''` beside an anonymousId.
  return absent(value) || value === '' || isId(value) ? undefined : problem(type, field, 'a string or a number when given', value);
}

function requiredId(m: Record<string, unknown>, type: string, field: string): ValidationError | undefined {
  const value = m[field];
  return isId(value) ? undefined : problem(type, field, 'a non-empty string or a number', value);
}

function requiredString(m: Record<string, unknown>, type: string, field: string): ValidationError | undefined {
  const value = m[field];
  return typeof value === 'string' && value !== '' ? undefined : problem(type, field, 'a non-empty string', value);
}

function optionalString(m: Record<string, unknown>, type: string, field: string): ValidationError | undefined {
  const value = m[field];
  return absent(value) || typeof value === 'string' ? undefined : problem(type, field, 'a string when given', value);
}

function optionalObject(m: Record<string, unknown>, type: string, field: string): ValidationError | undefined {
  const value = m[field];
  return absent(value) || isPlainObject(value) ? undefined : problem(type, field, 'an object when given', value);
}

function optionalTimestamp(m: Record<string, unknown>, type: string, field: string): ValidationError | undefined {
  const value = m[field];
  if (absent(value) || timestampMs(value) !== undefined) return undefined;
  const got = describeValue(value);
  return new ValidationError(
    `${aMessage(type)} needs \`${field}\` as ${TIMESTAMP_EXPECTED}, got ${got === 'a Date' ? 'an invalid or out-of-range Date' : got}`,
    field,
  );
}

function messageId(m: Record<string, unknown>, type: string): ValidationError | undefined {
  const value = m.messageId;
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
    optionalId(m, type, 'userId') ??
    optionalId(m, type, 'anonymousId') ??
    messageId(m, type) ??
    optionalTimestamp(m, type, 'timestamp') ??
    optionalTimestamp(m, type, 'originalTimestamp') ??
    optionalObject(m, type, 'context') ??
    optionalObject(m, type, 'integrations') ??
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
      return optionalObject(m, type, 'traits');
    case 'track':
      return requiredString(m, type, 'event') ?? optionalObject(m, type, 'properties');
    case 'page':
    case 'screen':
      return (
        optionalString(m, type, 'name') ??
        optionalString(m, type, 'category') ??
        optionalObject(m, type, 'properties') ??
        optionalObject(m, type, 'traits')
      );
    case 'group':
      return requiredId(m, type, 'groupId') ?? optionalObject(m, type, 'traits');
    case 'alias':
      return requiredId(m, type, 'userId') ?? requiredId(m, type, 'previousId');
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
 * Reads a caller's parameters ONCE into a plain object (`type` plus the fields the call
 * sends), so a getter or Proxy runs once and the rules and the message see the same values.
 * Throws a `ValidationError` when the parameters are not an object or reading a field throws
 * (a throwing getter, a revoked Proxy); the caller catches it.
 */
export function readCall(type: MessageType, params: unknown): Record<string, unknown> {
  let object: boolean;
  try {
    object = isPlainObject(params);
  } catch (error) {
    throw new ValidationError(`${type}() could not inspect its parameters (a revoked Proxy?)`, undefined, { cause: error });
  }
  if (!object) throw new ValidationError(`${type}() takes an object of parameters, got ${describeValue(params)}`);
  const source = params as Record<string, unknown>;
  const snapshot: Record<string, unknown> = { type };
  for (const field of CALL_FIELDS[type]) {
    let value: unknown;
    try {
      value = source[field];
    } catch (error) {
      throw new ValidationError(`${type}() could not read \`${field}\` from its parameters: reading it threw`, field, { cause: error });
    }
    if (value !== undefined) snapshot[field] = value;
  }
  return snapshot;
}

/** The rules of spec 2.4 applied to a client call's parameters; never throws. */
export function validateParams(type: MessageType, params: unknown): ValidationError | undefined {
  try {
    return checkMessage(readCall(type, params));
  } catch (error) {
    return error instanceof ValidationError ? error : new ValidationError(`${type}() could not read its parameters`, undefined, { cause: error });
  }
}
