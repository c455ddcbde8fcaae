import { Type } from '@sinclair/typebox';
import { Enum, OneOf } from './define';
import { BATCH_SETTING_RANGES } from '../../batch-body';
import { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS } from '../../registry/keys';
import { EXPECTED } from '../../validation/check';
import { IngestRateLimitInput, SourceSchemaInput, WebhookBatchInput, WebhookFilter, WebhooksDestinationInput, WebhookTransformInput } from '../../config/shapes';

// The config file's shapes the admin API takes too: one schema for both (named components here).
export { SourceSchemaInput, WebhookBatchInput, WebhookFilter, WebhooksDestinationInput, WebhookTransformInput };

/*
 * The shapes of the API's bodies, by name: each is a component of the OpenAPI document
 * (`#/components/schemas/<name>`) wherever a route uses it, and the type of what the route takes.
 */

export const Problem = Type.Object(
  {
    field: Type.String({ description: 'The field at fault: a dotted path (`webhooks[0].url`).' }),
    message: Type.String({ description: 'What was expected and what came.' }),
  },
  { additionalProperties: false },
);

export const ErrorShape = Type.Object({ success: Type.Literal(false), error: Type.Object({ code: Type.String({ description: 'Stable code: `invalid_json`, `invalid_body`, `invalid_request`, `unauthorized`, `source_deleted`, `admin_disabled`, `origin_not_allowed`, `not_found`, `method_not_allowed`, `conflict`, `not_replayable`, `body_too_large`, `unsupported_encoding`, `rate_limited`, `invalid_host`, `shutting_down`, `unavailable`.' }), message: Type.String({ description: 'What went wrong and what to do; never a secret.' }), field: Type.Optional(Type.String({ description: 'The field at fault, when there is one.' })), limit: Type.Optional(Type.Integer({ description: 'With `body_too_large`: the limit in bytes.', minimum: 0 })), retryAfter: Type.Optional(Type.Integer({ description: 'With `rate_limited`: seconds to wait.', minimum: 0 })), problems: Type.Optional(Type.Array(Problem, { description: 'With `invalid_request`: every problem of the request (`field` and `message` name the first).' })) }, { additionalProperties: false }) }, { description: 'Every refusal, of every route.', additionalProperties: false });

export const MessageBase = Type.Object({ messageId: Type.Optional(Type.String({ description: 'Unique per message; a random one when absent. Duplicates of a source are acknowledged and not forwarded again.', maxLength: 200 })), userId: Type.Optional(Type.Union([Type.String(), Type.Number()], { description: 'A non-empty string or a number (sent on as a string).' })), anonymousId: Type.Optional(Type.Union([Type.String(), Type.Number()], { description: 'A non-empty string or a number (sent on as a string).' })), timestamp: Type.Optional(Type.String({ description: 'When the call happened (historical import); default the time of receipt.', format: 'date-time' })), originalTimestamp: Type.Optional(Type.String({ description: "The sender's clock, corrected with the body's `sentAt` when `timestamp` is absent.", format: 'date-time' })), sentAt: Type.Optional(Type.String({ description: 'When the sender sent it.', format: 'date-time' })), context: Type.Optional(Type.Object({ }, { description: 'Context (`library`, `ip`, `traceparent`, ...); `context.ip` is set from the connection when absent.' })), integrations: Type.Optional(Type.Object({ }, { ...{ description: 'Per-destination switches (spec 4.3): `{ "All": false, "Webhooks": true }`.' }, additionalProperties: Type.Union([Type.Boolean(), Type.Object({ })]) })), writeKey: Type.Optional(Type.String({ description: 'The write key, when not sent as Basic auth (never forwarded).' })) });

export const IdentifyMessage = Type.Intersect([MessageBase, Type.Object({ type: Type.Optional(Type.Literal('identify', { description: 'Optional on the single-call paths (the path gives it); required in a batch.' })), traits: Type.Optional(Type.Object({ }, { description: "The user's traits." })) })], { description: 'userId or anonymousId is required.' });

export const TrackMessage = Type.Intersect([MessageBase, Type.Object({ type: Type.Optional(Type.Literal('track', { description: 'Optional on the single-call paths (the path gives it); required in a batch.' })), event: Type.String({ minLength: 1 }), properties: Type.Optional(Type.Object({ }, { description: "The event's properties." })) })], { description: 'userId or anonymousId is required.' });

export const PageMessage = Type.Intersect([MessageBase, Type.Object({ type: Type.Optional(Type.Literal('page', { description: 'Optional on the single-call paths (the path gives it); required in a batch.' })), name: Type.Optional(Type.String()), category: Type.Optional(Type.String()), properties: Type.Optional(Type.Object({ }, { description: '`path`, `referrer`, `title`, `url`, ...' })) })], { description: 'userId or anonymousId is required.' });

export const ScreenMessage = Type.Intersect([MessageBase, Type.Object({ type: Type.Optional(Type.Literal('screen', { description: 'Optional on the single-call paths (the path gives it); required in a batch.' })), name: Type.Optional(Type.String()), category: Type.Optional(Type.String()), properties: Type.Optional(Type.Object({ }, { description: "The screen's properties." })) })], { description: 'userId or anonymousId is required.' });

export const GroupMessage = Type.Intersect([MessageBase, Type.Object({ type: Type.Optional(Type.Literal('group', { description: 'Optional on the single-call paths (the path gives it); required in a batch.' })), groupId: Type.Union([Type.String(), Type.Number()], { description: 'A non-empty string or a number (sent on as a string).' }), traits: Type.Optional(Type.Object({ }, { description: "The group's traits." })) })], { description: 'userId or anonymousId is required.' });

export const AliasMessage = Type.Intersect([MessageBase, Type.Object({ type: Type.Optional(Type.Literal('alias', { description: 'Optional on the single-call paths (the path gives it); required in a batch.' })), previousId: Type.Union([Type.String(), Type.Number()], { description: 'A non-empty string or a number (sent on as a string).' }) })], { description: 'The new `userId` and the `previousId` it replaces.' });

export const Message = OneOf([IdentifyMessage, TrackMessage, PageMessage, ScreenMessage, GroupMessage, AliasMessage], { description: 'One call; `type` picks its rules (spec 2.4). At most 32 KB (32,768 UTF-8 bytes) of JSON.', discriminator: { propertyName: 'type', mapping: { identify: '#/components/schemas/IdentifyMessage', track: '#/components/schemas/TrackMessage', page: '#/components/schemas/PageMessage', screen: '#/components/schemas/ScreenMessage', group: '#/components/schemas/GroupMessage', alias: '#/components/schemas/AliasMessage' } } });

export const BatchRequest = Type.Object({ batch: Type.Array(Message), sentAt: Type.Optional(Type.String({ description: 'When the sender sent it.', format: 'date-time' })), context: Type.Optional(Type.Object({ }, { description: 'Default context.' })), integrations: Type.Optional(Type.Object({ }, { description: 'Default integrations.' })), writeKey: Type.Optional(Type.String({ description: 'The write key, when not sent as Basic auth.' })) }, { description: "A batch-level `context` or `integrations` is a default under each message's own." });

export const RejectedMessage = Type.Object(
  {
    index: Type.Integer({ description: 'Position in `batch` (0 for the single-call paths).', minimum: 0 }),
    code: Enum(['invalid_message', 'message_too_large']),
    field: Type.Optional(Type.String({ description: 'The field at fault, when there is one.' })),
    message: Type.String(),
    size: Type.Optional(Type.Integer({ description: "With `message_too_large`: the message's size in bytes.", minimum: 0 })),
    limit: Type.Optional(Type.Integer({ description: 'With `message_too_large`: the limit in bytes.', minimum: 0 })),
  },
  { additionalProperties: false },
);

export const IngestAccepted = Type.Object(
  {
    success: Type.Literal(true),
    rejected: Type.Optional(Type.Array(RejectedMessage, { description: 'The refused messages; absent when every message was stored.' })),
  },
  { additionalProperties: false },
);

export const LibrarySettings = Type.Object({ integrations: Type.Object({ 'Segment.io': Type.Object({ apiKey: Type.String({ description: 'The write key asked for.' }), apiHost: Type.String({ description: "Host, port and path of this forwarder's `/v1`, no scheme." }), protocol: Enum(['http', 'https']) }) }, { additionalProperties: false }), metrics: Type.Object({ sampleRate: Type.Literal(0) }, { additionalProperties: false }) });

export const EndpointHealth = Type.Object(
  {
    source: Type.String(),
    url: Type.String({ description: 'Redacted: no credentials, no query.' }),
    lastAttemptAt: Type.Integer({ description: 'Epoch ms.', minimum: 0 }),
    lastStatus: Type.Union([Type.Integer(), Type.Null()]),
    lastError: Type.Union([Type.String(), Type.Null()]),
    consecutiveFailures: Type.Integer({ minimum: 0 }),
    attempts: Type.Integer({ description: 'Requests in the last hour.', minimum: 0 }),
    successRate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()]),
    p50Ms: Type.Union([Type.Number(), Type.Null()]),
    p99Ms: Type.Union([Type.Number(), Type.Null()]),
  },
  { additionalProperties: false },
);

export const Stats = Type.Object(
  {
    accepted: Type.Integer({ description: 'Messages acknowledged, duplicates included.', minimum: 0 }),
    duplicates: Type.Integer({ minimum: 0 }),
    refused: Type.Integer({ description: "Messages listed in answers' `rejected` since this process started.", minimum: 0 }),
    delivered: Type.Integer({ minimum: 0 }),
    retrying: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
    queueDepth: Type.Integer({ minimum: 0 }),
    oldestPendingAge: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'ms; null when the queue is empty.' }),
    inFlight: Type.Integer({ minimum: 0 }),
    uptime: Type.Integer({ description: 'ms since start.', minimum: 0 }),
    endpoints: Type.Array(EndpointHealth),
  },
  { additionalProperties: false },
);

export const DeliveryState = Enum(['pending', 'retrying', 'delivered', 'failed', 'filtered', 'duplicate', 'refused']);

/** A line of the delivery log, as `GET /admin/messages` lists it. */
const LOGGED_MESSAGE = {
  id: Type.Integer({ description: 'The delivery id.', minimum: 0 }),
  source: Type.String(),
  kind: Enum(['message', 'delete', 'audience', 'notice']),
  messageId: Type.String(),
  type: Type.Union([Type.String(), Type.Null()]),
  userId: Type.Union([Type.String(), Type.Null()]),
  event: Type.Union([Type.String(), Type.Null()], { description: "The track call's event name; null for other calls." }),
  status: DeliveryState,
  receivedAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Null while pending.' }),
  attempts: Type.Integer({ minimum: 0 }),
  series: Type.Integer({ minimum: 0 }),
  reason: Type.Union([Type.String(), Type.Null()]),
  hasBody: Type.Boolean(),
};

export const LoggedMessage = Type.Object(LOGGED_MESSAGE, { additionalProperties: false });

export const LoggedAttempt = Type.Object(
  {
    series: Type.Integer({ minimum: 0 }),
    attempt: Type.Integer({ minimum: 0 }),
    at: Type.String({ format: 'date-time' }),
    url: Type.String({ description: 'Redacted.' }),
    status: Type.Union([Type.Integer(), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()]),
    durationMs: Type.Number({ minimum: 0 }),
    responseBody: Type.Union([Type.String({ maxLength: 2048 }), Type.Null()], { description: "The start of the receiver's answer (at most 2,048 bytes as text); null when there was none, or once the body is erased." }),
    outcome: Enum(['delivered', 'retry', 'failed']),
    nextAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'With `retry`: when the next attempt is due.' }),
  },
  { additionalProperties: false },
);

export const DeliveryDetail = Type.Object(
  {
    ...LOGGED_MESSAGE,
    waitingBehind: OneOf([Type.Null(), Type.Object({ id: Type.Union([Type.Integer(), Type.Null()]), messageId: Type.String() }, { additionalProperties: false })], { description: 'With `ordering: "user"`, the earlier call of the same user this one waits for; null when it waits for none.' }),
    body: Type.Union([Type.String(), Type.Null()], { description: 'The exact webhook body; null once erased.' }),
    attemptLog: Type.Array(LoggedAttempt),
  },
  { additionalProperties: false },
);

export const MessagePage = Type.Object(
  {
    items: Type.Array(LoggedMessage),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass back as `cursor`; null on the last page.' }),
  },
  { additionalProperties: false },
);

export const Replayed = Type.Object(
  {
    id: Type.Integer({ minimum: 0 }),
    series: Type.Integer({ minimum: 0 }),
    state: Type.Literal('pending'),
  },
  { additionalProperties: false },
);

export const RecoverRequest = Type.Object(
  {
    source: Type.String({ minLength: 1 }),
    since: Type.Union([Type.String(), Type.Number()], { description: 'ISO 8601 or epoch ms.' }),
    until: Type.Optional(Type.Union([Type.String(), Type.Number()], { description: 'Default: now.' })),
  },
  { additionalProperties: false },
);

export const Recovered = Type.Object(
  {
    source: Type.String(),
    since: Type.String({ format: 'date-time' }),
    until: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Null when not given.' }),
    queued: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

export const TimelinePoint = Type.Object(
  {
    at: Type.Integer({ description: 'Start of the minute, epoch ms.', minimum: 0 }),
    accepted: Type.Integer({ minimum: 0 }),
    delivered: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
    queueDepth: Type.Union([Type.Integer(), Type.Null()]),
  },
  { additionalProperties: false },
);

export const Overview = Type.Object(
  {
    sources: Type.Array(Type.String()),
    instances: Type.Integer({ minimum: 0 }),
    stats: Stats,
    chart: Type.Array(TimelinePoint),
    disabled: Type.Array(Type.Object({ source: Type.String(), url: Type.String(), disabledAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]), reason: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

export const DeletionRequest = Type.Object(
  {
    userId: Type.String({ minLength: 1 }),
    sources: Type.Optional(Type.Array(Type.String(), { description: 'Default: every source.', [EXPECTED]: 'a list of source names' })),
  },
  { additionalProperties: false },
);

export const DeletionResult = Type.Object(
  {
    userId: Type.String(),
    notified: Type.Array(Type.String()),
    skipped: Type.Array(Type.String()),
  },
  { additionalProperties: false },
);

export const AudienceSyncRequest = Type.Object(
  {
    source: Type.String(),
    audience: Type.String(),
    members: Type.Array(Type.String(), { description: 'The whole membership now.' }),
  },
  { additionalProperties: false },
);

export const AudienceSyncResult = Type.Object(
  {
    source: Type.String(),
    audience: Type.String(),
    trait: Type.String({ description: 'snake_case of the audience name.' }),
    firstSync: Type.Boolean(),
    added: Type.Integer({ minimum: 0 }),
    removed: Type.Integer({ minimum: 0 }),
    sent: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

export const IngestRateLimit = Type.Object(
  {
    perSecond: Type.Number({ exclusiveMinimum: 0 }),
    burst: Type.Integer({ minimum: 1 }),
  },
  { additionalProperties: false },
);

export const SourceSettings = Type.Object(
  {
    allowedOrigins: Type.Union([Type.Array(Type.String()), Type.Null()]),
    ingestRateLimit: OneOf([Type.Null(), IngestRateLimit]),
  },
  { additionalProperties: false },
);

export const SourceSettingsInput = Type.Object(
  {
    allowedOrigins: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
    ingestRateLimit: Type.Optional(OneOf([Type.Null(), IngestRateLimitInput])),
  },
  { additionalProperties: false },
);

/** A URL's batching as shown: every field, the defaults filled. */
export const WebhookBatch = Type.Object(
  {
    maxEvents: Type.Integer({ minimum: BATCH_SETTING_RANGES.maxEvents[0], maximum: BATCH_SETTING_RANGES.maxEvents[1] }),
    maxBytes: Type.Integer({ minimum: BATCH_SETTING_RANGES.maxBytes[0], maximum: BATCH_SETTING_RANGES.maxBytes[1] }),
    maxWaitMs: Type.Integer({ minimum: BATCH_SETTING_RANGES.maxWaitMs[0], maximum: BATCH_SETTING_RANGES.maxWaitMs[1] }),
  },
  { additionalProperties: false },
);

export const WebhooksDestination = Type.Object(
  {
    enabled: Type.Boolean(),
    signing: Enum(['x-signature', 'standard-webhooks', 'both']),
    ordering: Enum(['none', 'user']),
    hasSharedSecret: Type.Boolean(),
    webhooks: Type.Array(Type.Object({ url: Type.String({ description: 'No credentials, no query.' }), headerNames: Type.Array(Type.String()), rateLimit: OneOf([Type.Null(), Type.Object({ perSecond: Type.Number() }, { additionalProperties: false })]), filter: OneOf([Type.Null(), WebhookFilter]), transform: OneOf([Type.Null(), Type.Object({ code: Type.String(), timeoutMs: Type.Integer({ minimum: 1, maximum: 1000 }) }, { additionalProperties: false })]), batch: OneOf([Type.Null(), WebhookBatch]) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

export const SourceSchema = Type.Object(
  {
    blockedEvents: Type.Array(Type.String()),
    allowedEvents: Type.Union([Type.Array(Type.String()), Type.Null()]),
    blockedTypes: Type.Array(Type.String()),
  },
  { additionalProperties: false },
);

export const WriteKey = Type.Object(
  {
    id: Type.String(),
    last4: Type.String(),
    origin: Enum(['api', 'config']),
    createdAt: Type.String({ format: 'date-time' }),
    expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When it stops working; null: never.' }),
  },
  { additionalProperties: false },
);

export const Source = Type.Object(
  {
    name: Type.String(),
    allowedOrigins: Type.Union([Type.Array(Type.String()), Type.Null()]),
    ingestRateLimit: OneOf([Type.Null(), IngestRateLimit]),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    writeKeys: Type.Array(WriteKey),
    destinations: Type.Object({ Webhooks: OneOf([Type.Null(), WebhooksDestination]) }, { additionalProperties: false }),
    schema: SourceSchema,
  },
  { additionalProperties: false },
);

export const CreateSourceRequest = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    allowedOrigins: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
    ingestRateLimit: Type.Optional(OneOf([Type.Null(), IngestRateLimitInput])),
  },
  { additionalProperties: false },
);

export const CreatedSource = Type.Object(
  {
    name: Type.String(),
    writeKey: Type.String({ description: 'Shown this once; stored only as a digest.' }),
    keyId: Type.String(),
  },
  { additionalProperties: false },
);

export const RotateWriteKeyRequest = Type.Object(
  {
    graceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_GRACE_SECONDS, default: DEFAULT_GRACE_SECONDS, description: 'How long the other keys keep working, in seconds: at most 30 days.' })),
  },
  { additionalProperties: false },
);

export const IssuedWriteKey = Type.Object(
  {
    source: Type.String(),
    id: Type.String(),
    writeKey: Type.String({ description: 'Shown this once.' }),
    previousKeysExpireAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

export const DeletedSource = Type.Object(
  {
    name: Type.String(),
    failedDeliveries: Type.Integer({ description: 'Pending deliveries failed by the deletion.', minimum: 0 }),
  },
  { additionalProperties: false },
);

export const TestResult = Type.Object(
  {
    type: Enum(['track', 'identify', 'page', 'screen', 'group', 'alias', 'delete']),
    messageId: Type.String(),
    delivered: Type.Boolean({ description: 'Whether a URL answered 2xx.' }),
    results: Type.Array(
      Type.Object(
        {
          url: Type.String(),
          status: Type.Union([Type.Integer(), Type.Null()]),
          durationMs: Type.Union([Type.Number(), Type.Null()]),
          error: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const ApplyRequest = Type.Object(
  {
    sources: Type.Array(Type.Object({ }), { description: "The config file's `sources`, secrets read." }),
    dryRun: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);

export const ApplyResult = Type.Object(
  {
    dryRun: Type.Boolean(),
    applied: Type.Boolean(),
    text: Type.String({ description: 'The difference as `eventrelay apply` prints it.' }),
    lines: Type.Array(Type.Object({ source: Type.String(), action: Enum(['create', 'update', 'unchanged', 'kept']), changes: Type.Array(Type.String()) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

export const EndpointState = Type.Object(
  {
    url: Type.String(),
    disabled: Type.Boolean(),
    disabledAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    reason: Type.Union([Type.String(), Type.Null()]),
    failures: Type.Integer({ minimum: 0 }),
    failingSince: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    lastError: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

export const EnabledEndpoint = Type.Object({ source: Type.String(), url: Type.String(), wasDisabled: Type.Boolean() }, { additionalProperties: false });

export const RotatedSecret = Type.Object(
  {
    source: Type.String(),
    signing: Enum(['x-signature', 'standard-webhooks', 'both']),
    previousSecretsValidUntil: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { additionalProperties: false },
);

export const ShownSchema = Type.Object(
  {
    source: Type.String(),
    blockedEvents: Type.Array(Type.String()),
    allowedEvents: Type.Union([Type.Array(Type.String()), Type.Null()]),
    blockedTypes: Type.Array(Type.String()),
    events: Type.Array(Type.Object({ type: Type.String(), event: Type.Optional(Type.String({ description: 'Track events only.' })), count: Type.Integer({ minimum: 0 }), firstSeen: Type.String({ format: 'date-time' }), lastSeen: Type.String({ format: 'date-time' }), blocked: Type.Boolean() }, { additionalProperties: false })),
    otherEvents: OneOf([Type.Null(), Type.Object({ count: Type.Integer({ minimum: 0 }), firstSeen: Type.String({ format: 'date-time' }), lastSeen: Type.String({ format: 'date-time' }) }, { additionalProperties: false })]),
  },
  { additionalProperties: false },
);

export const UsageReport = Type.Object(
  {
    since: Type.String({ format: 'date' }),
    until: Type.String({ format: 'date' }),
    sources: Type.Array(Type.Object({ source: Type.String(), received: Type.Integer({ minimum: 0 }), filtered: Type.Integer({ minimum: 0 }), rejected: Type.Integer({ minimum: 0 }), delivered: Type.Integer({ minimum: 0 }), failed: Type.Integer({ minimum: 0 }), days: Type.Array(Type.Object({ day: Type.String({ format: 'date' }), received: Type.Integer({ minimum: 0 }), filtered: Type.Integer({ minimum: 0 }), rejected: Type.Integer({ minimum: 0 }), delivered: Type.Integer({ minimum: 0 }), failed: Type.Integer({ minimum: 0 }) }, { additionalProperties: false })) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);
