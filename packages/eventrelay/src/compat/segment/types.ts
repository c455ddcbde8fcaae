import type { SpoolOptions } from '../../client/spool/options';
import type { SpoolRecovery } from '../../client/spool/spool';
import type { Transport } from '../../transport/transport';
import type { Context } from './context';
import type { HTTPClient, HTTPFetchFn, HttpRequestEvent, HttpResponseEvent } from './http-client';

/** Free-form JSON values: traits, properties, context. */
export type Dictionary = Record<string, unknown>;

/** Destination selection, e.g. `{ All: false, Webhooks: true }`; `'Segment.io': false` sends nothing. */
export type IntegrationsOptions = Record<string, boolean | Dictionary>;

/** A Date or an ISO 8601 string. */
export type Timestamp = Date | string;

/** The settings of `@segment/analytics-node` 3.x, with its defaults, plus eventrelay's few extras. */
export interface AnalyticsSettings {
  /** The source's write key. Required. */
  writeKey: string;
  /** Base URL of the API. Default `https://api.segment.io` (Segment's); set it to your forwarder. */
  host?: string;
  /** Path of the batch API, resolved against `host` as a URL. Default `/v1/batch`. */
  path?: string;
  /** Retries of one batch. Default 10. */
  maxRetries?: number;
  /** Messages per batch: a batch is sent when it holds this many. Default 15. */
  flushAt?: number;
  /** @deprecated Segment's old name of `flushAt`. */
  maxEventsInBatch?: number;
  /** Milliseconds after the first queued message before the batch is sent. Default 10000. */
  flushInterval?: number;
  /** Milliseconds allowed for one HTTP request. Default 10000. */
  httpRequestTimeout?: number;
  /** Validate and call back, but send nothing. Default false. */
  disable?: boolean;
  /**
   * Your HTTP client: an object with `makeRequest(request)`, or a fetch-like function. Default: the
   * transport eventrelay's `Analytics` picks (node:http on Node, Bun and Deno; fetch on Workers and Vercel Edge).
   */
  httpClient?: HTTPFetchFn | HTTPClient;
  /** eventrelay extra: the `Transport` used when no `httpClient` is given (tests, proxies). */
  transport?: Transport;
  /** eventrelay extra: messages held at most before calls are refused. Default 100000. */
  maxQueueSize?: number;
  /** eventrelay extra: batches in flight at once. Default 4. */
  concurrency?: number;
  /** eventrelay extra: delay before the first retry, in ms. Default 100. */
  minRetryDelay?: number;
  /** eventrelay extra: largest delay between retries, in ms. Default 30000. */
  maxRetryDelay?: number;
  /** eventrelay extra: keep accepted calls in files in `dir` until delivered (see docs/spool.md). Default: none. */
  spool?: SpoolOptions;
}

interface CommonParams {
  context?: Dictionary | undefined;
  timestamp?: Timestamp | undefined;
  integrations?: IntegrationsOptions | undefined;
  /** Overrides the generated message id (for de-duplication). */
  messageId?: string | undefined;
}

/** At least one of `userId` and `anonymousId`. */
export type IdentityOptions =
  | { userId: string; anonymousId?: string | undefined }
  | { userId?: string | undefined; anonymousId: string };

export type AliasParams = CommonParams & { userId: string; previousId: string };
export type GroupParams = CommonParams & IdentityOptions & { groupId: string; traits?: Dictionary | undefined };
export type IdentifyParams = CommonParams & IdentityOptions & { traits?: Dictionary | undefined };
export type PageParams = CommonParams &
  IdentityOptions & { category?: string | undefined; name?: string | undefined; properties?: Dictionary | undefined };
export type TrackParams = CommonParams & IdentityOptions & { event: string; properties?: Dictionary | undefined };

export type SegmentEventType = 'track' | 'page' | 'screen' | 'identify' | 'group' | 'alias';

/** The event a call makes, as plugins and callbacks see it (`ctx.event`). */
export interface SegmentEvent {
  type: SegmentEventType;
  messageId: string;
  timestamp: Timestamp;
  context: Dictionary;
  integrations: IntegrationsOptions;
  userId?: string | undefined;
  anonymousId?: string | undefined;
  event?: string | undefined;
  name?: string | undefined;
  category?: string | undefined;
  properties?: Dictionary | undefined;
  traits?: Dictionary | undefined;
  groupId?: string | undefined;
  previousId?: string | undefined;
  [key: string]: unknown;
}

export type PluginType = 'before' | 'enrichment' | 'destination' | 'after' | 'utility';

/** A plugin of `register()`: Segment's plugin shape. */
export interface Plugin {
  name: string;
  type: PluginType;
  version?: string;
  alternativeNames?: string[];
  isLoaded: () => boolean;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  load: (ctx: Context, instance: any) => Promise<unknown>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  unload?: (ctx: Context, instance: any) => Promise<unknown> | unknown;
  ready?: () => Promise<unknown>;
  track?: (ctx: Context) => Promise<Context> | Context;
  identify?: (ctx: Context) => Promise<Context> | Context;
  page?: (ctx: Context) => Promise<Context> | Context;
  screen?: (ctx: Context) => Promise<Context> | Context;
  group?: (ctx: Context) => Promise<Context> | Context;
  alias?: (ctx: Context) => Promise<Context> | Context;
}

/** Called once per call, after delivery or failure, with the reason and the call's context. */
export type Callback = (err?: unknown, ctx?: Context) => void;

export interface FlushParams {
  /** Milliseconds to wait at most. */
  timeout?: number | undefined;
  /** Refuse new calls afterwards (as `closeAndFlush`). Default false. */
  close?: boolean | undefined;
}

export interface CloseAndFlushParams {
  /** Milliseconds to wait at most. Default: 1.25 × max(60000, flushInterval). */
  timeout?: number | undefined;
}

/** What `error` listeners get: Segment's shape; `reason` is one of eventrelay's typed errors. */
export interface DeliveryFailure {
  /** `spool_failure` (eventrelay extra): the disk spool reported a `SpoolError` (no `ctx`). */
  code: 'delivery_failure' | 'initialization_failure' | 'spool_failure';
  reason: unknown;
  ctx?: Context;
}

/**
 * The events of `Analytics` and what their listeners get: Segment's (`NodeEmitterEvents`), and
 * eventrelay's `recover`. Other names are accepted, with listeners of unknown arguments.
 */
export interface SegmentEmitterEvents {
  [event: string]: readonly unknown[];
  /** The settings the client was made with (emitted in the constructor, as Segment does). */
  initialize: [settings: AnalyticsSettings];
  /** Each call's context once it is delivered. */
  alias: [ctx: Context];
  group: [ctx: Context];
  identify: [ctx: Context];
  page: [ctx: Context];
  screen: [ctx: Context];
  track: [ctx: Context];
  /** The names of the plugins `register()` or `deregister()` handled. */
  register: [pluginNames: string[]];
  deregister: [pluginNames: string[]];
  error: [failure: DeliveryFailure];
  /** A call made after `closeAndFlush()`: its event, which is not sent. */
  call_after_close: [event: SegmentEvent];
  http_request: [request: HttpRequestEvent];
  http_response: [response: HttpResponseEvent];
  /** Every accepted call is finished. */
  drained: [];
  /** eventrelay extra, with `spool`: messages taken over from processes that are gone. */
  recover: [info: SpoolRecovery];
}
