// Every error class, as from each entry point: `instanceof` works whichever one you import from.
export * from '../errors';
export { isDestinationEnabled } from '../delivery/integrations';
export { serializeWebhookMessage, toWebhookMessage, WEBHOOK_MESSAGE_TYPES } from '../messages/webhook';
export type {
  // The same types as `eventrelay/webhooks` exports: one definition of the outbound shapes.
  WebhookMessage,
  WebhookMessageType,
  WebhookPageMessage,
  WebhookScreenMessage,
  WebhookIdentifyMessage,
  WebhookTrackMessage,
  WebhookAliasMessage,
  WebhookGroupMessage,
  WebhookDeleteMessage,
  WebhookContext,
  WebhookProperties,
  WebhookPageProperties,
  WebhookTraits,
  // Deprecated aliases of the names above.
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
} from '../messages/webhook';
export { checkMessage, MAX_MESSAGE_ID_LENGTH } from '../messages/rules';
export type { RejectedMessage } from './http/ingest';
export { nextAttemptAt } from '../delivery/retry-schedule';
export type { RetryScheduleInput } from '../delivery/retry-schedule';
export { WebhookDestination } from '../delivery/destination';
export type {
  WebhookEntry,
  WebhookDestinationOptions,
  DestinationInternals,
  UrlOutcome,
  AttemptResult,
  DeliveryResult,
  AttemptState,
} from '../delivery/destination';
export { NodeTransport } from '../transport/node';
export type { NodeTransportOptions } from '../transport/node';
export { UndiciTransport } from '../transport/undici';
export type { UndiciTransportOptions } from '../transport/undici';
export type { Transport, HttpRequest, HttpResponse } from '../transport/transport';
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
export type { DeletionRequest } from './routing/deletion';
export type { AudienceSyncRequest, AudienceSyncResult } from './routing/audiences';
export { snakeCase } from './routing/snake-case';
export { MemoryStore } from './store/memory';
export { SqliteStore } from './store/sqlite';
export type { SqliteStoreOptions } from './store/sqlite';
export { PostgresStore } from './store/postgres';
export type { PostgresStoreOptions } from './store/postgres';
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
  LeaseRequest,
  RecordResult,
} from './store/store';
export type { AttemptReport } from './scheduling/scheduler';
export type { MetricsConfig } from './config';
export { DELIVERY_STATES } from './store/delivery-log';
export type { DeliveryState, LoggedMessage, LoggedAttempt, DeliveryDetail } from './store/delivery-log';
export type { EndpointHealth } from './metrics/health';
export type { TimelinePoint } from './metrics/timeline';
