/**
 * The messages the Webhooks destination POSTs (spec 2.2, 2.3), one JSON object per request.
 * Unknown extra fields are kept on the parsed object (a newer sender may add some) but are
 * not part of these types.
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
  /** When the call happened, RFC 3339 / ISO 8601, e.g. `2026-03-01T12:34:56.789Z`. */
  readonly timestamp: string;
  /**
   * Unique id of the call, an eventrelay extension: the same on every retry of one message,
   * so a receiver can drop duplicates.
   */
  readonly messageId?: string;
  readonly context?: WebhookContext;
}

export interface WebhookPageMessage extends VersionedMessage {
  readonly type: 'page';
  readonly userId: string;
  readonly properties: WebhookPageProperties;
}

export interface WebhookScreenMessage extends VersionedMessage {
  readonly type: 'screen';
  readonly userId: string;
  readonly name: string;
  readonly context: WebhookContext;
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

/** Sent when a deletion request is created: no version, nothing but these three fields. */
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
