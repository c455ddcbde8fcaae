import type { EventRelayError } from '../errors';

/** Free-form JSON-serializable values (user traits, event properties, ...). */
export type Properties = Record<string, unknown>;

/**
 * Destination selection (spec 4.3): `{ All: false, Webhooks: true }`.
 * Keys are case sensitive destination names; a value is a boolean or destination options.
 */
export type Integrations = Record<string, boolean | Record<string, unknown>>;

/** Fields every call may carry. */
export interface CommonParams {
  /** Extra context (ip, device, os, app, ...). `context.library` is set by the client. */
  readonly context?: Properties;
  /** Turns destinations on or off for this call (spec 4.3). */
  readonly integrations?: Integrations;
  /** When the call happened, for historical import (spec 4.4). Default: now. */
  readonly timestamp?: Date | string;
  /** Unique id of the message (at most 200 characters); receivers drop duplicates with it. Default: a random UUID. */
  readonly messageId?: string;
}

/**
 * A user, group or anonymous id: a non-empty string, or a finite number as some
 * Segment-compatible SDKs send (the webhook carries it as a string).
 */
export type Id = string | number;

/** Every call but alias needs a userId, an anonymousId, or both (spec 2.4). */
export type Identity =
  | { readonly userId: Id; readonly anonymousId?: Id }
  | { readonly userId?: Id; readonly anonymousId: Id };

export type IdentifyParams = Identity & CommonParams & { readonly traits?: Properties };

export type TrackParams = Identity &
  CommonParams & {
    /** Event name, e.g. `Order Completed`. */
    readonly event: string;
    readonly properties?: Properties;
  };

export type PageParams = Identity &
  CommonParams & {
    readonly name?: string;
    readonly category?: string;
    /** `url`, `title`, `referrer` and `path` are recognized; custom keys are kept. */
    readonly properties?: Properties;
  };

export type ScreenParams = Identity &
  CommonParams & {
    readonly name?: string;
    readonly category?: string;
    readonly properties?: Properties;
  };

export type GroupParams = Identity &
  CommonParams & {
    readonly groupId: Id;
    readonly traits?: Properties;
  };

export type AliasParams = CommonParams & {
  /** The new id. */
  readonly userId: Id;
  /** The id to alias from. */
  readonly previousId: Id;
  readonly anonymousId?: Id;
};

/** The six call types, in the order of the ingestion endpoints. */
export const MESSAGE_TYPES = ['identify', 'track', 'page', 'screen', 'group', 'alias'] as const;

export type MessageType = (typeof MESSAGE_TYPES)[number];

/**
 * A message as a client sends it to the service (Segment-compatible wire format): what the
 * client builds from the params above, what the forwarder receives, and what `rules.ts` checks.
 */
export interface InboundMessage {
  readonly type: MessageType;
  readonly userId?: string | number | null;
  readonly anonymousId?: string | number | null;
  readonly previousId?: string | number;
  readonly event?: string;
  readonly name?: string | null;
  readonly category?: string | null;
  readonly properties?: Properties | null;
  readonly traits?: Properties | null;
  readonly groupId?: string | number;
  readonly context?: Properties | null;
  readonly integrations?: Integrations | Readonly<Record<string, unknown>> | null;
  readonly timestamp?: string | Date | null;
  /** The sender's clock at the call, without skew correction (RudderStack and some Segment SDKs). */
  readonly originalTimestamp?: string | Date | null;
  readonly messageId?: string | null;
  readonly [key: string]: unknown;
}

/** Called once per call: with no error when the message was delivered (or, with `disable`, accepted). */
export type Callback = (error: EventRelayError | undefined, messageId: string | undefined) => void;
