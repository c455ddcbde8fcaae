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
export type { WebhookTransport, WebhookRequest, WebhookResponse } from '../transport/http-transport';
export { createForwarder, Forwarder } from './service';
export type { ForwarderOptions, ForwarderInternals, ListenOptions, ForwarderStats, DeletionResult, ForwarderEvents } from './service';
export { parseConfig, loadConfigFile } from './config';
export type {
  ForwarderConfig,
  SourceConfig,
  WebhooksDestinationConfig,
  WebhookEntryConfig,
  DeliveryConfig,
  StorageConfig,
  SecretValue,
  ResolvedConfig,
} from './config';
export type { DeletionRequest } from './deletion';
export type { AudienceSyncRequest, AudienceSyncResult } from './audiences';
export { snakeCase } from './snake-case';
export { MemoryStore } from './memory-store';
export { SqliteStore } from './sqlite-store';
export type { SqliteStoreOptions } from './sqlite-store';
export type {
  ForwarderStore,
  NewDelivery,
  AcceptedMessage,
  AcceptResult,
  PendingDelivery,
  DeliveryOutcome,
  DeliveryKind,
  StoreCounts,
  AudienceChange,
} from './store';
export type { AttemptReport } from './scheduler';
