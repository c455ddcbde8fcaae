export { EventRelayError, ConfigError, DeliveryError } from '../errors';
export { isDestinationEnabled } from './integrations';
export { toWebhookMessage } from './webhook-message';
export type {
  WebhookMessage,
  PageWebhook,
  ScreenWebhook,
  IdentifyWebhook,
  TrackWebhook,
  AliasWebhook,
  GroupWebhook,
  DeleteWebhook,
  InboundMessage,
  DeletionNotice,
  ToWebhookMessageOptions,
  JsonObject,
} from './webhook-message';
export { nextAttemptAt } from './retry-schedule';
export type { RetryScheduleInput } from './retry-schedule';
export { WebhookDestination } from './destination';
export type {
  WebhookEntry,
  WebhookDestinationOptions,
  DestinationInternals,
  UrlOutcome,
  AttemptResult,
  DeliveryResult,
  AttemptState,
} from './destination';
export type { WebhookTransport, WebhookRequest, WebhookResponse } from './http-transport';
