import { SerializationError, WebhookMessageError } from '../errors';
import { describeValue, isPlainObject } from '../internal/values';
import type { InboundMessage } from './calls';

export type { InboundMessage };
import { eventTimeMs, isoTimestamp, timestampMs, TIMESTAMP_EXPECTED } from './event-time';
import { checkMessage, isId } from './rules';

/**
 * The messages the Webhooks destination POSTs (spec 2.2, 2.3), one JSON object per request:
 * ONE definition, built by the forwarder (`toWebhookMessage`) and parsed by the receiver helper
 * (`parseWebhookMessage`), exported under the same names from `eventrelay/forwarder` and
 * `eventrelay/webhooks`. Unknown extra fields are kept on a parsed object (a newer sender may
 * add some) but are not part of these types.
 */

/** The seven `type` values, in the order of the spec. */
export const WEBHOOK_MESSAGE_TYPES = ['page', 'screen', 'identify', 'track', 'alias', 'group', 'delete'] as const;

export type WebhookMessageType = (typeof WEBHOOK_MESSAGE_TYPES)[number];

/**
 * Device, IP address and similar data. Free-form: the spec shows `device {model, type}`,
 * `os {name, version}` and `app {build, name, version}` on screen messages and nothing more,
 * so values are `unknown` until you check them.
 */
export interface WebhookContext {
  readonly [key: string]: unknown;
}

/** Free-form user or group traits (string and number values in the spec; audience syncs send booleans). */
export interface WebhookTraits {
  readonly [key: string]: unknown;
}

/** Free-form event properties. */
export interface WebhookProperties {
  readonly [key: string]: unknown;
}

/**
 * Page properties: the spec names `path`, `referrer`, `title` and `url` (strings from a
 * browser), but the sender passes the caller's values through unchecked, so they are
 * `unknown` here too; check before use.
 */
export type WebhookPageProperties = WebhookProperties;

/** Fields of every message type except delete. */
interface VersionedMessage {
  readonly version: 1;
  /** When the call happened: always `YYYY-MM-DDTHH:mm:ss.sssZ` from eventrelay, any RFC 3339 date-time accepted. */
  readonly timestamp: string;
  /**
   * Unique id of the call, an eventrelay extension: the same on every retry of one message,
   * so a receiver can drop duplicates.
   */
  readonly messageId?: string;
  /** Device, IP address and similar data, as the client sent it. */
  readonly context?: WebhookContext;
}

export interface WebhookPageMessage extends VersionedMessage {
  readonly type: 'page';
  readonly userId: string;
  /** path, referrer, title, url and any custom keys; the page `name`/`category` when given. */
  readonly properties: WebhookPageProperties;
}

export interface WebhookScreenMessage extends VersionedMessage {
  readonly type: 'screen';
  readonly userId: string;
  readonly name: string;
  readonly context: WebhookContext;
  /** Extension: the screen call's properties, only when it had some. */
  readonly properties?: WebhookProperties;
}

export interface WebhookIdentifyMessage extends VersionedMessage {
  readonly type: 'identify';
  readonly userId: string;
  readonly traits: WebhookTraits;
}

export interface WebhookTrackMessage extends VersionedMessage {
  readonly type: 'track';
  readonly userId: string;
  readonly event: string;
  readonly properties: WebhookProperties;
}

/** An alias carries the two ids under keys with spaces, and no `userId`. */
export interface WebhookAliasMessage extends VersionedMessage {
  readonly type: 'alias';
  readonly 'Previous ID': string;
  readonly 'User ID': string;
}

export interface WebhookGroupMessage extends VersionedMessage {
  readonly type: 'group';
  readonly userId: string;
  readonly groupId: string;
  readonly traits: WebhookTraits;
}

/** Sent when a deletion request is created: no version, nothing but these three fields (spec 2.3). */
export interface WebhookDeleteMessage {
  readonly type: 'delete';
  readonly userId: string;
  readonly timestamp: string;
}

/** Any webhook message; switch on `type` to narrow it. */
export type WebhookMessage =
  | WebhookPageMessage
  | WebhookScreenMessage
  | WebhookIdentifyMessage
  | WebhookTrackMessage
  | WebhookAliasMessage
  | WebhookGroupMessage
  | WebhookDeleteMessage;

/** Free-form JSON object: traits, properties, context. */
export type JsonObject = Record<string, unknown>;

/** @deprecated Use `WebhookPageMessage` (the same type, shared with `eventrelay/webhooks`). */
export type PageWebhook = WebhookPageMessage;
/** @deprecated Use `WebhookScreenMessage`. */
export type ScreenWebhook = WebhookScreenMessage;
/** @deprecated Use `WebhookIdentifyMessage`. */
export type IdentifyWebhook = WebhookIdentifyMessage;
/** @deprecated Use `WebhookTrackMessage`. */
export type TrackWebhook = WebhookTrackMessage;
/** @deprecated Use `WebhookAliasMessage`. */
export type AliasWebhook = WebhookAliasMessage;
/** @deprecated Use `WebhookGroupMessage`. */
export type GroupWebhook = WebhookGroupMessage;
/** @deprecated Use `WebhookDeleteMessage`. */
export type DeleteWebhook = WebhookDeleteMessage;

/** A deletion request for one user of one source. */
export interface DeletionNotice {
  readonly type: 'delete';
  readonly userId: string;
  readonly timestamp?: string | Date;
}

export interface ToWebhookMessageOptions {
  /** Time used when the message has no timestamp (spec 4.4: the time of receipt), epoch ms. Default `Date.now()`. */
  readonly receivedAt?: number;
  /** The batch's `sentAt`, to correct an `originalTimestamp` for the sender's clock skew. */
  readonly sentAt?: unknown;
}

/**
 * Turns a client message or a deletion notice into the outbound webhook shape of spec
 * 2.2/2.3, after checking it against the one set of rules (`rules.ts`). Key order is fixed
 * (version, type, userId, timestamp, context, type fields, messageId) so the same call always
 * yields the same bytes. Event time: see `eventTimeMs` (timestamp, else originalTimestamp
 * corrected with sentAt, else receipt).
 *
 * `userId` falls back to `anonymousId` on page, screen, identify, track and group: the spec
 * has `userId` on every type but alias, and anonymous calls are valid (spec 2.4).
 * Throws `WebhookMessageError` (with `field`) when the message breaks a rule.
 */
export function toWebhookMessage(message: InboundMessage | DeletionNotice, options: ToWebhookMessageOptions = {}): WebhookMessage {
  if (!isPlainObject(message as unknown)) {
    throw new WebhookMessageError(`Expected a message object, got ${describeValue(message)}`);
  }
  const receivedAt = options.receivedAt ?? Date.now();
  if (message.type === 'delete') {
    if (!isId(message.userId)) {
      throw new WebhookMessageError(`A delete notice needs \`userId\` as a non-empty string, got ${describeValue(message.userId)}`, 'userId');
    }
    const ms = message.timestamp === undefined ? receivedAt : timestampMs(message.timestamp);
    if (ms === undefined) {
      throw new WebhookMessageError(`A delete notice needs \`timestamp\` as ${TIMESTAMP_EXPECTED}`, 'timestamp');
    }
    return { type: 'delete', userId: String(message.userId), timestamp: isoTimestamp(ms) };
  }
  const invalid = checkMessage(message as unknown as Record<string, unknown>);
  if (invalid !== undefined) throw new WebhookMessageError(invalid.message, invalid.field);
  return buildWebhookMessage(message, isoTimestamp(eventTimeMs(message, { receivedAt, sentAt: options.sentAt })));
}

/**
 * The webhook form of a message that passed `checkMessage`, with its event time already
 * resolved. No checks: the forwarder's ingestion calls it after the rules, with the message's
 * `context` merged with its batch's and its `messageId` (generated when it had none) passed
 * beside the message, so the message itself is never copied.
 *
 * Built field by field in the fixed key order rather than with object spreads: ingestion makes
 * one per message, and a spread in the middle of a literal makes V8 define every later key
 * through its slow path.
 */
export function buildWebhookMessage(
  m: InboundMessage,
  timestamp: string,
  context: JsonObject | undefined = objectOrUndefined(m.context),
  messageIdValue: unknown = m.messageId,
): WebhookMessage {
  const messageId = typeof messageIdValue === 'string' && messageIdValue !== '' ? messageIdValue : undefined;
  const out: Record<string, unknown> = { version: 1, type: m.type };
  switch (m.type) {
    case 'page': {
      out.userId = subject(m);
      out.timestamp = timestamp;
      if (context !== undefined) out.context = context;
      const own = objectOrUndefined(m.properties) ?? objectOrUndefined(m.traits);
      const hasName = typeof m.name === 'string';
      const hasCategory = typeof m.category === 'string';
      out.properties = !hasName && !hasCategory && own !== undefined ? own : { ...pageExtras(m), ...own };
      break;
    }
    case 'screen': {
      out.userId = subject(m);
      out.timestamp = timestamp;
      out.context = context ?? {};
      out.name = typeof m.name === 'string' ? m.name : '';
      const properties = objectOrUndefined(m.properties);
      if (properties && Object.keys(properties).length > 0) out.properties = properties;
      break;
    }
    case 'identify':
      out.userId = subject(m);
      out.timestamp = timestamp;
      if (context !== undefined) out.context = context;
      out.traits = objectOrUndefined(m.traits) ?? {};
      break;
    case 'track':
      out.userId = subject(m);
      out.timestamp = timestamp;
      if (context !== undefined) out.context = context;
      out.event = m.event as string;
      out.properties = objectOrUndefined(m.properties) ?? {};
      break;
    case 'alias':
      out.timestamp = timestamp;
      if (context !== undefined) out.context = context;
      out['Previous ID'] = String(m.previousId);
      out['User ID'] = String(m.userId);
      break;
    case 'group':
      out.userId = subject(m);
      out.timestamp = timestamp;
      if (context !== undefined) out.context = context;
      out.groupId = String(m.groupId);
      out.traits = objectOrUndefined(m.traits) ?? {};
      break;
  }
  if (messageId !== undefined) out.messageId = messageId;
  return out as unknown as WebhookMessage;
}

/**
 * A webhook message as the bytes every URL and every attempt gets: serialized once.
 * Throws `SerializationError` when a value cannot be JSON (circular, BigInt, nested too deeply).
 */
export function serializeWebhookMessage(message: WebhookMessage): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(message);
  } catch (error) {
    const reason = error instanceof RangeError ? 'it is nested too deeply' : error instanceof Error ? error.message.split('\n')[0] : 'unknown';
    throw new SerializationError(`The webhook message cannot be turned into JSON: ${reason}`, { cause: error });
  }
  if (typeof text !== 'string' || !text.startsWith('{')) {
    throw new SerializationError(`Expected a webhook message object, got ${describeValue(message)}`);
  }
  return text;
}

/** The page call's name and category live in `properties`, as Segment's page spec puts them. */
function pageExtras(m: InboundMessage): JsonObject {
  const extras: JsonObject = {};
  if (typeof m.name === 'string') extras.name = m.name;
  if (typeof m.category === 'string') extras.category = m.category;
  return extras;
}

function subject(m: InboundMessage): string {
  return isId(m.userId) ? String(m.userId) : String(m.anonymousId);
}

function objectOrUndefined(value: unknown): JsonObject | undefined {
  return isPlainObject(value) ? value : undefined;
}
