// Every error class, the very classes `eventrelay` exports (loaded from it, never copied):
// `instanceof` works whichever package you import them from.
export {
  ClientClosedError,
  CloseTimeoutError,
  ConfigError,
  EventRelayError,
  HttpError,
  InvalidArgumentError,
  NetworkError,
  NotReplayableError,
  PayloadTooLargeError,
  QueueFullError,
  SerializationError,
  SignatureVerificationError,
  SpoolError,
  StoreError,
  TimeoutError,
  ValidationError,
  WebhookMessageError,
  WebhookTimestampError,
} from 'eventrelay/internal';
export type { ErrorCode } from 'eventrelay/internal';
export { isDestinationEnabled } from './delivery/integrations';
export { serializeWebhookMessage, toWebhookMessage, WEBHOOK_MESSAGE_TYPES } from 'eventrelay/internal';
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
} from 'eventrelay/internal';
export { checkMessage, MAX_MESSAGE_ID_LENGTH } from 'eventrelay/internal';
export type { RejectedMessage } from './routing/ingest';
export { nextAttemptAt } from './delivery/retry-schedule';
export type { RetryScheduleInput } from './delivery/retry-schedule';
export { WebhookDestination } from './delivery/destination';
export type {
  WebhookEntry,
  WebhookDestinationOptions,
  DestinationInternals,
  UrlOutcome,
  AttemptResult,
  DeliveryResult,
  AttemptState,
} from './delivery/destination';
export { NodeTransport } from 'eventrelay/internal';
export type { NodeTransportOptions } from 'eventrelay/internal';
export { UndiciTransport } from './delivery/undici-transport';
export type { UndiciTransportOptions } from './delivery/undici-transport';
export type { Transport, HttpRequest, HttpResponse } from 'eventrelay/internal';
export { createForwarder, Forwarder } from './service';
export type { ForwarderOptions, ForwarderInternals, ListenOptions, ForwarderStats, DeletionResult, ForwarderEvents } from './service';
export { parseConfig, parseSources, loadConfigFile } from './config';
export type {
  ForwarderConfig,
  SourceConfig,
  HttpConfig,
  WebhooksDestinationConfig,
  WebhookEntryConfig,
  DeliveryConfig,
  StorageConfig,
  SecretValue,
  ResolvedConfig,
  SourceSchemaConfig,
} from './config';
export type { ShownSchema, ShownEvent, UsageReport, SourceUsage, UsageCounts, UsageQuery } from './admin/schema';
export { MAX_EVENT_NAME, MAX_SCHEMA_NAMES, FILTER_TYPES, SCHEMA_TYPES } from './schema-rules';
export { MemoryUsageStore } from './store/usage';
export type { DeletionRequest } from './routing/deletion';
export type { AudienceSyncRequest, AudienceSyncResult } from './routing/audiences';
export { snakeCase } from './routing/snake-case';
export { MemoryStore } from './store/memory/memory';
export { SqliteStore } from './store/sqlite/sqlite';
export type { SqliteStoreOptions } from './store/sqlite/sqlite';
export { PostgresStore } from './store/postgres/postgres';
export type { PostgresStoreOptions } from './store/postgres/postgres';
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
} from './store/contract';
export type { AttemptReport } from './scheduling/queue';
export type { MetricsConfig } from './config';
export { DELIVERY_STATES } from './store/delivery-log';
export type { DeliveryState, LoggedMessage, LoggedAttempt, DeliveryDetail } from './store/contract';
export type { EndpointHealth } from './observability/health';
export type { TimelinePoint } from './observability/timeline';
export { TEST_EVENT_TYPES } from './registry/manager';
export type {
  ShownSource,
  ShownSettings,
  ShownWebhooks,
  ShownWriteKey,
  CreatedSource,
  IssuedWriteKey,
  DeletedSource,
  TestResult,
  TestEventType,
  ApplyResult,
} from './registry/manager';
export type { ReconcileLine } from './registry/reconcile';
export { DEFAULT_GRACE_SECONDS } from './registry/keys';
export { MAX_SOURCE_NAME } from './source-names';
export type { SetupStore, SetupSnapshot, SetupOp, SetupWriteResult, SourceRecord, SourceSettings, IngestRateLimit, WriteKeyRecord, KeyOrigin, StoredWebhooks } from './store/contract';
export type { SourceSchema, WebhookFilter, FilteredBy, UsageStore, SchemaCount, UsageDay, UsageBatch } from './store/contract';
export type { PreviousSecret, RateLimit } from './store/contract';
export type { Notice, NoticeType } from './delivery/notify';
export type { NotifyConfig } from './config';
export type { ShownEndpoint, EnabledEndpoint } from './admin/endpoints';
export type { RotatedSecret } from './admin/secrets';
