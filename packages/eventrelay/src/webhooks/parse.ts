import { toBodyInput } from './body';
import type { WebhookBody } from './body';
import { WEBHOOK_MESSAGE_TYPES } from './message-types';
import type { WebhookMessage, WebhookMessageType } from './message-types';
import { isTimestamp } from '../messages/timestamp';
import { WebhookMessageError } from '../errors';
import { isPlainObject } from '../internal/values';
import { describeType } from '../internal/values';

type Json = Record<string, unknown>;

// fatal: bytes that are not UTF-8 are refused, not turned into U+FFFD. ignoreBOM keeps a BOM
// so that bytes and strings are treated alike (JSON.parse refuses a BOM in both).
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const TYPES: ReadonlySet<string> = new Set(WEBHOOK_MESSAGE_TYPES);

/**
 * Parses a raw webhook body into one of the seven message types, checked at run time.
 * Throws `WebhookMessageError` (with `field` set when one field is at fault) when the body is
 * not JSON or not a valid message, and `InvalidArgumentError` when `rawBody` is not raw.
 *
 * Checked: `type`; `version` is 1 on all but delete; `userId` (all but alias), `event`,
 * `name`, `groupId`, `"Previous ID"` and `"User ID"` are strings; `properties`, `traits` and
 * `context` are objects where the spec has them (`context` is optional except on screen);
 * `messageId`, when present, is a string; `timestamp` is an RFC 3339 date-time with a time
 * zone. Extra fields are allowed and kept. Values inside `properties`, `traits` and
 * `context` are not checked: senders pass the caller's values through, and refusing a
 * message (400) makes the sender drop it for good.
 */
export function parseWebhookMessage(rawBody: WebhookBody): WebhookMessage {
  const value = parseJson(rawBody);
  if (Array.isArray(value)) {
    throw new WebhookMessageError('Expected the body to be a JSON object (a webhook message), got an array (a batch: read it with parseWebhookMessages).');
  }
  return checkMessage(value, undefined);
}

/**
 * Parses a raw webhook body that holds one message or a batch of them (a JSON array, what a
 * URL with `batch` set receives) into the messages, in the order sent; one message gives an
 * array of one. Each element is checked as `parseWebhookMessage` checks a message. Throws
 * `WebhookMessageError` for a body that is not JSON, an empty array, or an element that is not
 * a valid message (`field` is then `[index]` or `[index].field`, the index counted from 0), and
 * `InvalidArgumentError` when `rawBody` is not raw.
 */
export function parseWebhookMessages(rawBody: WebhookBody): WebhookMessage[] {
  return parseWebhookBody(rawBody).messages;
}

/** What a body holds: one message, or a batch (the receiver calls the batch handler for those). */
export interface ParsedWebhookBody {
  readonly batch: boolean;
  /** One message, or the batch's messages in order (never empty). */
  readonly messages: WebhookMessage[];
}

/** `parseWebhookMessages`, telling a batch of one from a single message. */
export function parseWebhookBody(rawBody: WebhookBody): ParsedWebhookBody {
  const value = parseJson(rawBody);
  if (!Array.isArray(value)) return { batch: false, messages: [checkMessage(value, undefined)] };
  if (value.length === 0) {
    throw new WebhookMessageError('Expected the batch (a JSON array) to hold at least one webhook message, got an empty array.');
  }
  const messages = new Array<WebhookMessage>(value.length);
  for (let index = 0; index < value.length; index++) messages[index] = checkMessage(value[index], index);
  return { batch: true, messages };
}

function parseJson(rawBody: WebhookBody): unknown {
  const input = toBodyInput(rawBody);
  let text: string;
  try {
    text = typeof input === 'string' ? input : decoder.decode(input);
  } catch {
    throw new WebhookMessageError('Expected the body to be UTF-8 JSON, got bytes that are not valid UTF-8.');
  }
  try {
    return JSON.parse(text);
  } catch {
    // The SyntaxError is not attached: its message quotes part of the body.
    throw new WebhookMessageError('Expected the body to be a JSON object (a webhook message) or an array of them, got text that is not valid JSON.');
  }
}

/** Checks one message: the body, or the element at `index` of a batch. */
function checkMessage(value: unknown, index: number | undefined): WebhookMessage {
  if (!isPlainObject(value)) {
    if (index === undefined) throw new WebhookMessageError(`Expected the body to be a JSON object (a webhook message), got ${kind(value)}.`);
    throw new WebhookMessageError(`Expected element ${index} of the batch to be a JSON object (a webhook message), got ${kind(value)}.`, `[${index}]`);
  }
  const type = value.type;
  if (typeof type !== 'string' || !TYPES.has(type)) {
    const got = typeof type === 'string' && /^[\w-]{1,40}$/.test(type) ? `"${type}"` : kind(type);
    const where = index === undefined ? '' : ` in element ${index} of the batch`;
    throw new WebhookMessageError(`Expected \`type\` to be one of ${WEBHOOK_MESSAGE_TYPES.join(', ')}${where}, got ${got}.`, fieldPath(index, 'type'));
  }
  const check = new Checker(value, type as WebhookMessageType, index);
  if (type === 'delete') {
    check.string('userId');
    check.timestamp();
    return value as unknown as WebhookMessage;
  }
  check.version();
  check.timestamp();
  check.optionalString('messageId');
  if (type === 'screen') check.object('context');
  else check.optionalObject('context');
  switch (type) {
    case 'page':
      check.string('userId');
      check.object('properties');
      break;
    case 'screen':
      check.string('userId');
      check.string('name');
      break;
    case 'identify':
      check.string('userId');
      check.object('traits');
      break;
    case 'track':
      check.string('userId');
      check.string('event');
      check.object('properties');
      break;
    case 'alias':
      check.string('Previous ID');
      check.string('User ID');
      break;
    case 'group':
      check.string('userId');
      check.string('groupId');
      check.object('traits');
      break;
  }
  return value as unknown as WebhookMessage;
}

/** Field checks for one message; each throws a `WebhookMessageError` naming the field. */
class Checker {
  constructor(
    private readonly message: Json,
    private readonly type: WebhookMessageType,
    /** The element's index when the message is part of a batch. */
    private readonly index: number | undefined,
  ) {}

  version(): void {
    const version = this.message.version;
    if (version !== 1) {
      const got = typeof version === 'number' ? `${version}` : kind(version);
      throw this.error('version', 'the number 1 (the only version this release knows)', got);
    }
  }

  timestamp(): void {
    const timestamp = this.message.timestamp;
    if (typeof timestamp !== 'string' || !isTimestamp(timestamp)) {
      const got = typeof timestamp === 'string' ? 'a string that is not one' : kind(timestamp);
      throw this.error('timestamp', 'an ISO 8601 date-time with a time zone, like 2026-03-01T12:34:56.789Z', got);
    }
  }

  string(field: string): void {
    const value = this.message[field];
    if (typeof value !== 'string') throw this.error(field, 'a string', kind(value));
  }

  optionalString(field: string): void {
    const value = this.message[field];
    if (value !== undefined && typeof value !== 'string') throw this.error(field, 'a string when present', kind(value));
  }

  object(field: string): void {
    const value = this.message[field];
    if (!isPlainObject(value)) throw this.error(field, 'an object', kind(value));
  }

  optionalObject(field: string): void {
    const value = this.message[field];
    if (value !== undefined && !isPlainObject(value)) throw this.error(field, 'an object when present', kind(value));
  }

  private error(field: string, expected: string, got: string): WebhookMessageError {
    const where = this.index === undefined ? `a ${this.type} message` : `the ${this.type} message at element ${this.index} of the batch`;
    return new WebhookMessageError(`Expected \`${field}\` to be ${expected} in ${where}, got ${got}.`, fieldPath(this.index, field));
  }
}

/** `field`, or `[index].field` for an element of a batch. */
function fieldPath(index: number | undefined, field: string): string {
  return index === undefined ? field : `[${index}].${field}`;
}

/** The kind of a value, never the value: bodies must not leak into error messages. */
function kind(value: unknown): string {
  return value === undefined ? 'nothing (the field is missing)' : describeType(value);
}
