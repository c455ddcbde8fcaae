import { Type } from '@sinclair/typebox';
import type { TInteger } from '@sinclair/typebox';
import { EXPECTED } from '../validation/check';
import { Enum } from '../validation/kinds';
import { MAX_WEBHOOKS, SIGNING_SCHEMES } from '../delivery/options';
import { MAX_PER_SECOND, MIN_PER_SECOND } from '../delivery/rate-limit';
import { BATCH_DEFAULTS, BATCH_SETTING_RANGES } from '../batch-body';
import { SourceSchemaInput, WebhookFilterSchema as WebhookFilter } from '../schema-rules';

// The schema controls' and URL filters' shapes live with their rules (schema-rules.ts), below delivery.
export { SourceSchemaInput, WebhookFilter };

/*
 * The config file's shape, one TypeBox schema per part: checked by Ajv (validation/check.ts) with
 * every problem at once and its field path. The parts the admin API takes too (a Webhooks
 * destination, a source's schema controls, a URL's filter) are these same schemas: the routes
 * declare them as their bodies (http/routes/shapes.ts). What a schema cannot say (URL schemes,
 * secrets from the environment, unique names, CIDR blocks, rules between fields) is checked after
 * it, in config/rules.ts and config/sources.ts.
 */

/** Most proxies `http.trustProxy` may name. */
export const MAX_TRUSTED_PROXIES = 10;
/** Most origins one source may list. */
export const MAX_ALLOWED_ORIGINS = 100;
/** Longest origin a source may list, in characters. */
export const MAX_ORIGIN_LENGTH = 2048;
/** Bounds of `ingestRateLimit.perSecond` and `.burst`. */
export const INGEST_LIMIT_BOUNDS = { minPerSecond: 0.01, maxPerSecond: 100_000, maxBurst: 100_000 } as const;

const closed = { additionalProperties: false } as const;

function range(min: number, max: number): string {
  return max >= Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
}

/** A duration in whole milliseconds, from `min` to `max`. */
function Duration(min: number, max: number, description: string): TInteger {
  return Type.Integer({ minimum: min, maximum: max, description, [EXPECTED]: `a duration in milliseconds, an integer ${range(min, max)}` });
}

/** A string with something other than spaces in it. */
const Text = (options: object = {}) => Type.String({ minLength: 1, pattern: '\\S', ...options });

/**
 * A secret: the value, or `{ "env": "NAME" }` to read it from the environment variable NAME when
 * the config file is loaded (the admin API takes values only).
 */
export const SecretValue = Type.Union([Type.String({ minLength: 1 }), Type.Object({ env: Type.String({ minLength: 1 }) }, closed)], {
  description: 'The value, or `{ "env": "NAME" }` to read it from an environment variable (in the config file only; the admin API takes the value).',
  [EXPECTED]: 'a non-empty string or { "env": "VARIABLE_NAME" }',
});

/** At most `perSecond` requests a second to one URL, over all instances. */
export const WebhookRateLimit = Type.Object(
  { perSecond: Type.Number({ minimum: MIN_PER_SECOND, maximum: MAX_PER_SECOND, [EXPECTED]: `a number of requests a second, from ${MIN_PER_SECOND} (one every 100 s) to ${MAX_PER_SECOND}` }) },
  closed,
);

/** A URL's transformation (docs/transformations.md): the code of `function transform(message)`, and its time limit. */
export const WebhookTransformInput = Type.Object(
  {
    code: Type.String({ minLength: 1, pattern: '\\S', description: 'JavaScript that defines `function transform(message)`; at most 64 KB.', [EXPECTED]: 'the source of `function transform(message)`' }),
    timeoutMs: Type.Optional(Duration(1, 1000, 'CPU time one call may use; default 100.')),
  },
  closed,
);

/** A URL's batching (issue 45): its calls go as one POST whose body is a JSON array of their messages. */
export const WebhookBatchInput = Type.Object(
  {
    maxEvents: Type.Integer({ minimum: BATCH_SETTING_RANGES.maxEvents[0], maximum: BATCH_SETTING_RANGES.maxEvents[1], description: 'Most calls in one body.' }),
    maxBytes: Type.Optional(
      Type.Integer({
        minimum: BATCH_SETTING_RANGES.maxBytes[0],
        maximum: BATCH_SETTING_RANGES.maxBytes[1],
        description: `Most bytes in one body (a larger call goes alone); default ${BATCH_DEFAULTS.maxBytes}.`,
      }),
    ),
    maxWaitMs: Type.Optional(Duration(BATCH_SETTING_RANGES.maxWaitMs[0], BATCH_SETTING_RANGES.maxWaitMs[1], `Longest wait after a body's first call; default ${BATCH_DEFAULTS.maxWaitMs}.`)),
  },
  closed,
);

/** One URL of a Webhooks destination. */
export const WebhookEntryInput = Type.Object(
  {
    url: SecretValue,
    headers: Type.Optional(Type.Object({}, { additionalProperties: SecretValue, description: 'Static headers sent to this URL.' })),
    rateLimit: Type.Optional(WebhookRateLimit),
    filter: Type.Optional(WebhookFilter),
    transform: Type.Optional(WebhookTransformInput),
    batch: Type.Optional(WebhookBatchInput),
  },
  closed,
);

/** A source's Webhooks destination: `sources[i].destinations.Webhooks`, and the body of `PUT /admin/sources/{name}/destinations/Webhooks`. */
export const WebhooksDestinationInput = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ default: true })),
    webhooks: Type.Array(WebhookEntryInput, { minItems: 1, maxItems: MAX_WEBHOOKS }),
    sharedSecret: Type.Optional(Type.Union([SecretValue, Type.Array(SecretValue, { minItems: 1 })], { [EXPECTED]: 'a secret (a non-empty string or { "env": "VARIABLE_NAME" }) or a list of them, current first' })),
    signing: Type.Optional(Enum(SIGNING_SCHEMES, { default: 'x-signature' })),
    ordering: Type.Optional(Enum(['none', 'user'] as const, { default: 'none' })),
  },
  { ...closed, description: "A source's Webhooks destination, as the config file's `destinations.Webhooks`." },
);

/** A source's ingestion limit. */
export const IngestRateLimitInput = Type.Object(
  {
    perSecond: Type.Number({ minimum: INGEST_LIMIT_BOUNDS.minPerSecond, maximum: INGEST_LIMIT_BOUNDS.maxPerSecond, [EXPECTED]: `a number of requests a second, from ${INGEST_LIMIT_BOUNDS.minPerSecond} to ${INGEST_LIMIT_BOUNDS.maxPerSecond}` }),
    burst: Type.Optional(Type.Integer({ minimum: 1, maximum: INGEST_LIMIT_BOUNDS.maxBurst })),
  },
  closed,
);

/** Origins browser requests may come from (`"https://shop.example"`), or `"*"` for any. */
const AllowedOrigins = Type.Array(Type.String({ minLength: 1, maxLength: MAX_ORIGIN_LENGTH }), { maxItems: MAX_ALLOWED_ORIGINS });

/** A source's settings: in the config file's source, and the body of `PUT /admin/sources/{name}/settings` (its nulls read as left out). */
export const SourceSettingsFields = Type.Object(
  { allowedOrigins: Type.Optional(AllowedOrigins), ingestRateLimit: Type.Optional(IngestRateLimitInput) },
  closed,
);

/** One entry of the config file's `sources`. */
export const SourceInput = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    writeKey: SecretValue,
    destinations: Type.Optional(Type.Object({ Webhooks: Type.Optional(WebhooksDestinationInput) }, closed)),
    allowedOrigins: Type.Optional(AllowedOrigins),
    ingestRateLimit: Type.Optional(IngestRateLimitInput),
    schema: Type.Optional(SourceSchemaInput),
  },
  closed,
);

/** The config file's `sources`, and what `POST /admin/apply` takes. */
export const SourcesInput = Type.Array(SourceInput, { [EXPECTED]: 'a list of sources ({ "name", "writeKey", "destinations", "schema" })' });

export const HttpInput = Type.Object(
  {
    trustProxy: Type.Optional(Type.Union([Type.Boolean(), Type.Integer({ minimum: 0, maximum: MAX_TRUSTED_PROXIES })])),
    publicUrl: Type.Optional(Text()),
  },
  closed,
);

const DAY = 24 * 3600_000;

export const StorageInput = Type.Object(
  {
    type: Type.Optional(Enum(['sqlite', 'postgres', 'memory'] as const)),
    dataDir: Type.Optional(Text()),
    synchronous: Type.Optional(Enum(['full', 'normal'] as const)),
    retention: Type.Optional(Duration(1000, Number.MAX_SAFE_INTEGER, 'How long finished deliveries and seen messageIds are kept.')),
    url: Type.Optional(SecretValue),
    poolSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    connectTimeout: Type.Optional(Duration(1, 600_000, 'Longest wait for a PostgreSQL connection.')),
    lease: Type.Optional(Duration(1000, 3600_000, 'How long a claimed delivery stays reserved.')),
    keepDelivered: Type.Optional(Duration(0, Number.MAX_SAFE_INTEGER, 'How long a delivered body stays in the delivery log.')),
    deliveryLog: Type.Optional(Type.Boolean()),
  },
  closed,
);

export const DeliveryInput = Type.Object(
  {
    concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024 })),
    sourceConcurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024 })),
    timeout: Type.Optional(Duration(1, 60_000, 'Time a receiver has to answer.')),
    retryWindow: Type.Optional(Duration(0, 30 * DAY, 'How long a message is retried.')),
    minRetryDelay: Type.Optional(Duration(1, DAY, 'Base delay before the first retry.')),
    maxRetryDelay: Type.Optional(Duration(1, DAY, 'Longest delay between two attempts.')),
    disableAfter: Type.Optional(Duration(0, 365 * DAY, 'A URL failing this long is disabled; 0 never.')),
    denyNetworks: Type.Optional(Type.Array(Type.String(), { [EXPECTED]: 'a list of CIDR blocks such as "10.0.0.0/8"' })),
    allowNetworks: Type.Optional(Type.Array(Type.String(), { [EXPECTED]: 'a list of CIDR blocks such as "10.0.0.0/8"' })),
  },
  closed,
);

export const LogInput = Type.Object(
  {
    level: Type.Optional(Enum(['debug', 'info', 'warn', 'error', 'silent'] as const)),
    format: Type.Optional(Enum(['auto', 'json', 'pretty'] as const)),
  },
  closed,
);

export const NotifyInput = Type.Object({ url: SecretValue, sharedSecret: SecretValue }, closed);

export const MetricsInput = Type.Union([Type.Literal(false), Type.Object({ path: Type.Optional(Type.String()) }, closed)]);

/** The whole config file. */
export const ConfigFile = Type.Object(
  {
    $comment: Type.Optional(Type.Unknown()),
    host: Type.Optional(Type.String({ minLength: 1, maxLength: 253, [EXPECTED]: 'an IP address (such as "127.0.0.1", "0.0.0.0" or "::") or a host name' })),
    port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
    adminToken: Type.Optional(SecretValue),
    http: Type.Optional(HttpInput),
    storage: Type.Optional(StorageInput),
    delivery: Type.Optional(DeliveryInput),
    metrics: Type.Optional(MetricsInput),
    debugger: Type.Optional(Type.Boolean()),
    log: Type.Optional(LogInput),
    sources: Type.Optional(SourcesInput),
    notify: Type.Optional(NotifyInput),
  },
  { ...closed, [EXPECTED]: 'a JSON object' },
);
