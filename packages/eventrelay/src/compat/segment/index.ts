/**
 * `eventrelay/segment`: the public API of `@segment/analytics-node` 3.x on eventrelay's
 * engine. Code written for Segment's SDK moves over by changing the import;
 * docs/migrating-from-segment.md lists the few differences.
 */
export { Analytics } from './analytics';
export { Context, ContextCancelation, ContextStats } from './context';
export type { CancelationOptions, LogLevel, LogMessage, Metric } from './context';
export { FetchHTTPClient } from './http-client';
export type {
  HTTPClient,
  HTTPClientRequest,
  HTTPFetchFn,
  HTTPFetchRequest,
  HTTPHeaders,
  HTTPResponse,
  HttpRequestEvent,
  HttpResponseEvent,
} from './http-client';
export { SEGMENT_DEFAULTS } from './settings';
export type {
  AliasParams,
  AnalyticsSettings,
  Callback,
  CloseAndFlushParams,
  DeliveryFailure,
  Dictionary,
  FlushParams,
  GroupParams,
  IdentifyParams,
  IntegrationsOptions,
  PageParams,
  Plugin,
  PluginType,
  SegmentEmitterEvents,
  SegmentEvent,
  SegmentEventType,
  Timestamp,
  TrackParams,
} from './types';
export * from '../../errors';
