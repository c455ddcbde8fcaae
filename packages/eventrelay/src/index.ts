export { Analytics } from './client/analytics';
export type { AnalyticsEvents, AnalyticsInternals, CloseOptions, FlushReason } from './client/analytics';
export { DEFAULTS } from './client/options';
export type { AnalyticsOptions } from './client/options';
export type { SpoolOptions, SpoolSync, SpoolWriteErrorMode } from './client/spool/options';
export type { SpoolRecovery } from './client/spool/spool';
export { MAX_BATCH_BYTES, MAX_MESSAGE_BYTES } from './messages/limits';
export { MAX_MESSAGE_ID_LENGTH } from './messages/rules';
export { MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS } from './messages/event-time';
export type {
  AliasParams,
  Callback,
  CommonParams,
  GroupParams,
  Id,
  Identity,
  IdentifyParams,
  Integrations,
  MessageType,
  PageParams,
  Properties,
  ScreenParams,
  TrackParams,
} from './messages/calls';
// Every error class, as from each entry point: `instanceof` works whichever one you import from.
export * from './errors';
export { FetchTransport } from './transport/fetch';
export type { FetchFunction, FetchTransportOptions } from './transport/fetch';
export { GotTransport } from './transport/got';
export type { GotTransportOptions } from './transport/got';
export { NodeTransport } from './transport/node';
export type { NodeTransportOptions } from './transport/node';
export type { HttpRequest, HttpResponse, Transport } from './transport/transport';
export { backoffDelay, parseRetryAfter } from './transport/backoff';
export type { BackoffOptions } from './transport/backoff';
export type { Clock } from './clock';
export { VERSION } from './version';
