import { WebhookMessageError } from '../errors';

/** Free-form JSON object: traits, properties, context. */
export type JsonObject = Record<string, unknown>;

/** Fields every outbound message but `delete` carries (spec 2.2). */
interface WebhookBase {
  readonly version: 1;
  /** ISO 8601 with milliseconds and `Z`, e.g. `2026-01-01T10:00:00.000Z`. */
  readonly timestamp: string;
  /** Device, IP address and similar data, as the client sent it. */
  readonly context?: JsonObject;
  /** Extension (not in the spec): the client's message id, so receivers can drop retried duplicates. */
  readonly messageId?: string;
}

export interface PageWebhook extends WebhookBase {
  readonly type: 'page';
  readonly userId: string;
  /** path, referrer, title, url and any custom keys; the page `name`/`category` when given. */
  readonly properties: JsonObject;
}

export interface ScreenWebhook extends WebhookBase {
  readonly type: 'screen';
  readonly userId: string;
  readonly name: string;
  readonly context: JsonObject;
  /** Extension: the screen call's properties, only when it had some. */
  readonly properties?: JsonObject;
}

export interface IdentifyWebhook extends WebhookBase {
  readonly type: 'identify';
  readonly userId: string;
  readonly traits: JsonObject;
}

export interface TrackWebhook extends WebhookBase {
  readonly type: 'track';
  readonly userId: string;
  readonly event: string;
  readonly properties: JsonObject;
}

export interface AliasWebhook extends WebhookBase {
  readonly type: 'alias';
  readonly 'Previous ID': string;
  readonly 'User ID': string;
}

export interface GroupWebhook extends WebhookBase {
  readonly type: 'group';
  readonly userId: string;
  readonly groupId: string;
  readonly traits: JsonObject;
}

/** Deletion notification: exactly these three fields, no version (spec 2.3). */
export interface DeleteWebhook {
  readonly type: 'delete';
  readonly userId: string;
  readonly timestamp: string;
}

export type WebhookMessage =
  | PageWebhook
  | ScreenWebhook
  | IdentifyWebhook
  | TrackWebhook
  | AliasWebhook
  | GroupWebhook
  | DeleteWebhook;

/** A message as the client sends it to the service (Segment-compatible wire format). */
export interface InboundMessage {
  readonly type: 'identify' | 'track' | 'page' | 'screen' | 'group' | 'alias';
  readonly userId?: string | number;
  readonly anonymousId?: string | number;
  readonly previousId?: string | number;
  readonly event?: string;
  readonly name?: string;
  readonly category?: string;
  readonly properties?: JsonObject;
  readonly traits?: JsonObject;
  readonly groupId?: string | number;
  readonly context?: JsonObject;
  readonly integrations?: Readonly<Record<string, unknown>>;
  readonly timestamp?: string | Date;
  readonly messageId?: string;
  readonly [key: string]: unknown;
}

/** A deletion request for one user of one source. */
export interface DeletionNotice {
  readonly type: 'delete';
  readonly userId: string;
  readonly timestamp?: string | Date;
}

export interface ToWebhookMessageOptions {
  /** Time used when the message has no timestamp (spec 4.4: the time of receipt), epoch ms. Default `Date.now()`. */
  readonly receivedAt?: number;
}

/**
 * Turns a client message or a deletion notice into the outbound webhook shape of spec
 * 2.2/2.3. Key order is fixed (version, type, userId, timestamp, context, type fields,
 * messageId) so the same call always yields the same bytes.
 *
 * `userId` falls back to `anonymousId` on page, screen, identify, track and group: the spec
 * has `userId` on every type but alias, and anonymous calls are valid (spec 2.4).
 * Throws `WebhookMessageError` (with `field`) when a required field is missing or malformed.
 */
export function toWebhookMessage(message: InboundMessage | DeletionNotice, options: ToWebhookMessageOptions = {}): WebhookMessage {
  if (typeof message !== 'object' || message === null) {
    throw new WebhookMessageError(`Expected a message object, got ${describe(message)}`);
  }
  const timestamp = isoTimestamp(message.timestamp, options.receivedAt);
  if (message.type === 'delete') {
    return { type: 'delete', userId: requiredId(message.userId, 'userId'), timestamp };
  }
  const m = message;
  const context = optionalObject(m.context, 'context');
  const messageId = typeof m.messageId === 'string' && m.messageId !== '' ? m.messageId : undefined;
  const tail = messageId === undefined ? {} : { messageId };

  switch (m.type) {
    case 'page': {
      const properties = { ...pageExtras(m), ...(optionalObject(m.properties, 'properties') ?? optionalObject(m.traits, 'traits') ?? {}) };
      return { version: 1, type: 'page', userId: subject(m), timestamp, ...withContext(context), properties, ...tail };
    }
    case 'screen': {
      const properties = optionalObject(m.properties, 'properties');
      const name = m.name === undefined ? '' : requiredString(m.name, 'name');
      return {
        version: 1,
        type: 'screen',
        userId: subject(m),
        timestamp,
        context: context ?? {},
        name,
        ...(properties && Object.keys(properties).length > 0 ? { properties } : {}),
        ...tail,
      };
    }
    case 'identify':
      return {
        version: 1,
        type: 'identify',
        userId: subject(m),
        timestamp,
        ...withContext(context),
        traits: optionalObject(m.traits, 'traits') ?? {},
        ...tail,
      };
    case 'track':
      return {
        version: 1,
        type: 'track',
        userId: subject(m),
        timestamp,
        ...withContext(context),
        event: requiredString(m.event, 'event'),
        properties: optionalObject(m.properties, 'properties') ?? {},
        ...tail,
      };
    case 'alias':
      return {
        version: 1,
        type: 'alias',
        timestamp,
        ...withContext(context),
        'Previous ID': requiredId(m.previousId, 'previousId'),
        'User ID': requiredId(m.userId, 'userId'),
        ...tail,
      };
    case 'group':
      return {
        version: 1,
        type: 'group',
        userId: subject(m),
        timestamp,
        ...withContext(context),
        groupId: requiredId(m.groupId, 'groupId'),
        traits: optionalObject(m.traits, 'traits') ?? {},
        ...tail,
      };
    default:
      throw new WebhookMessageError(
        `Expected \`type\` to be one of page, screen, identify, track, alias, group, delete, got ${describe((m as { type?: unknown }).type)}`,
        'type',
      );
  }
}

function withContext(context: JsonObject | undefined): { context?: JsonObject } {
  return context === undefined ? {} : { context };
}

/** The page call's name and category live in `properties`, as Segment's page spec puts them. */
function pageExtras(m: InboundMessage): JsonObject {
  const extras: JsonObject = {};
  if (typeof m.name === 'string') extras.name = m.name;
  if (typeof m.category === 'string') extras.category = m.category;
  return extras;
}

function subject(m: InboundMessage): string {
  if (isId(m.userId)) return String(m.userId);
  if (isId(m.anonymousId)) return String(m.anonymousId);
  throw new WebhookMessageError(
    `Expected \`userId\` or \`anonymousId\` on a ${m.type} message, got ${describe(m.userId)} and ${describe(m.anonymousId)}`,
    'userId',
  );
}

function isId(value: unknown): value is string | number {
  return (typeof value === 'string' && value !== '') || (typeof value === 'number' && Number.isFinite(value));
}

function requiredId(value: unknown, field: string): string {
  if (isId(value)) return String(value);
  throw new WebhookMessageError(`Expected \`${field}\` to be a non-empty string, got ${describe(value)}`, field);
}

function requiredString(value: unknown, field: string): string {
  if (typeof value === 'string' && value !== '') return value;
  throw new WebhookMessageError(`Expected \`${field}\` to be a non-empty string, got ${describe(value)}`, field);
}

function optionalObject(value: unknown, field: string): JsonObject | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'object' && !Array.isArray(value)) return value as JsonObject;
  throw new WebhookMessageError(`Expected \`${field}\` to be an object, got ${describe(value)}`, field);
}

function isoTimestamp(value: unknown, receivedAt: number | undefined): string {
  if (value === undefined || value === null || value === '') return new Date(receivedAt ?? Date.now()).toISOString();
  const date = value instanceof Date ? value : typeof value === 'string' || typeof value === 'number' ? new Date(value) : undefined;
  if (date === undefined || Number.isNaN(date.getTime())) {
    throw new WebhookMessageError(`Expected \`timestamp\` to be an ISO 8601 date-time or a Date, got ${describe(value)}`, 'timestamp');
  }
  return date.toISOString();
}

/** Type and a short form of a value, never the whole of it: it may be user data. */
function describe(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return value.length > 40 ? `a string of ${value.length} characters` : `\`${value}\` (string)`;
  if (typeof value === 'object') return 'an object';
  return `\`${String(value)}\` (${typeof value})`;
}
