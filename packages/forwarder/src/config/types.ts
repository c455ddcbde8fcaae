import type { NetworkPolicy, NetworkPolicyOptions } from '../delivery/network-policy';
import type { RateLimit, SigningScheme, SourceSchema, SourceSettings, StoredWebhooks, WebhookBatch, WebhookFilter, WebhookTransform } from '../store/contract';

/*
 * The config file's types as a program writes it (`createForwarder(config)`), and as the
 * forwarder reads it once checked (`Resolved*`). Their shape is checked by the schemas of
 * config/shapes.ts; `config/index.ts` checks that the two agree.
 */

/**
 * A secret written inline, or `{ "env": "NAME" }` to read it from the environment variable
 * NAME when the config is loaded (so the file can be committed without secrets).
 */
export type SecretValue = string | { readonly env: string };

export interface WebhookEntryConfig {
  /** Full URL with the http or https scheme. May be a SecretValue (URLs often carry tokens). */
  readonly url: SecretValue;
  /** Static headers added to every request sent to this URL; values may be SecretValues. */
  readonly headers?: Readonly<Record<string, SecretValue>>;
  /** At most `perSecond` requests a second to this URL, over all instances. Default: no limit. */
  readonly rateLimit?: RateLimit;
  /** Which calls this URL gets: `types` (call types, `delete`) and `events` (track event names). Default: every call. */
  readonly filter?: WebhookFilter;
  /**
   * `{ code, timeoutMs? }`: `code` defines `function transform(message)`, which returns the body
   * this URL gets, or null to skip it (docs/transformations.md). Default: the message as it is.
   */
  readonly transform?: WebhookTransform;
  /**
   * `{ maxEvents, maxBytes?, maxWaitMs? }`: this URL's calls go together, as one POST of a JSON
   * array: at most `maxEvents` (1 to 4000) and `maxBytes` (1024 to 1048576, default 524288) in one
   * body, sent `maxWaitMs` (0 to 60000, default 1000) after its first call. Default: one call a request.
   */
  readonly batch?: WebhookBatch;
}

/** A source's schema controls (docs/source-schema.md). Each list defaults to none. */
export interface SourceSchemaConfig {
  /** Track event names never forwarded. */
  readonly blockedEvents?: readonly string[];
  /** A tracking plan: track events not in it are never forwarded. Default (or null): no plan. */
  readonly allowedEvents?: readonly string[] | null;
  /** Call types never forwarded (`track`, `identify`, `page`, `screen`, `group`, `alias`). */
  readonly blockedTypes?: readonly string[];
}

export interface WebhooksDestinationConfig {
  /** Whether messages of this source are forwarded. Default true; `false` pauses the destination. */
  readonly enabled?: boolean;
  /** 1 to 5 URLs; each message goes to all of them until one answers 2xx. */
  readonly webhooks: readonly WebhookEntryConfig[];
  /** When set, each body is signed as `signing` says. A list while rotating, current first. */
  readonly sharedSecret?: SecretValue | readonly SecretValue[];
  /** `x-signature` (default, the spec's), `standard-webhooks` or `both`; the latter two need `sharedSecret`. */
  readonly signing?: SigningScheme;
  /**
   * `user`: a source's calls that share a user key (`userId`, else `anonymousId`; an alias's
   * `previousId`) are delivered in the order they were accepted, one at a time. Default `none`.
   */
  readonly ordering?: 'none' | 'user';
}

export interface SourceConfig {
  /** Unique name; used by the admin endpoints and in logs. */
  readonly name: string;
  /** The key clients send with Basic auth (or `writeKey` in the body). Unique across sources. */
  readonly writeKey: SecretValue;
  /** Destinations of this source; the forwarder has one kind, `Webhooks` (spec 4.3 key). */
  readonly destinations?: { readonly Webhooks?: WebhooksDestinationConfig };
  /**
   * Origins browser requests may come from, as browsers send `Origin` (`"https://shop.example"`),
   * or `"*"` for any. Default none: a request that carries an `Origin` is refused (403).
   */
  readonly allowedOrigins?: readonly string[];
  /** At most `burst` requests at once, then `perSecond`, over all instances; past it 429. Default: no limit. */
  readonly ingestRateLimit?: { readonly perSecond: number; readonly burst?: number };
  /** What of what the source sends is never forwarded. Default: nothing is blocked. */
  readonly schema?: SourceSchemaConfig;
}

export interface HttpConfig {
  /**
   * Proxies in front of the forwarder whose `X-Forwarded-For` and `X-Forwarded-Proto` are
   * believed: 0 (default, the connection's address), 1 (the last `X-Forwarded-For` entry, the one
   * your proxy added), n (the n-th from the end); `true` is 1.
   */
  readonly trustProxy?: boolean | number;
  /**
   * The forwarder's address as browsers and apps reach it (`https://events.example.com`): what the
   * settings route hands to analytics.js and the mobile libraries. Default: the request's `Host`.
   */
  readonly publicUrl?: string;
}

export interface DeliveryConfig {
  /** Webhook attempts in flight at once, over all sources. Default 32. */
  readonly concurrency?: number;
  /**
   * Attempts in flight at once for one source, so that one receiver that hangs until the timeout
   * cannot hold every slot. Default: `concurrency` with one delivering source, else half of it.
   */
  readonly sourceConcurrency?: number;
  /** Time a receiver has to answer, in ms. Default 5000 (spec 8). */
  readonly timeout?: number;
  /** How long a message is retried after its first attempt, in ms. Default 4 h (spec 7). */
  readonly retryWindow?: number;
  /** Base delay before the first retry, in ms. Default 1000. */
  readonly minRetryDelay?: number;
  /** Longest delay between two attempts, in ms. Default 600000 (10 min). */
  readonly maxRetryDelay?: number;
  /**
   * A webhook URL whose every attempt failed for this long, in ms, with at least 10 attempts, is
   * disabled: deliveries skip it until it is enabled again. Default 86400000 (24 h); 0 never.
   */
  readonly disableAfter?: number;
  /**
   * CIDR blocks webhook and notice URLs may not reach, on top of the built-in ones (link-local,
   * cloud metadata, unspecified, multicast, broadcast); checked on the resolved address when
   * connecting. Default none.
   */
  readonly denyNetworks?: readonly string[];
  /** When set, the only CIDR blocks webhook and notice URLs may reach. Default: any not denied. */
  readonly allowNetworks?: readonly string[];
}

export interface StorageConfig {
  /**
   * `sqlite` (durable, one process, default), `postgres` (durable, shared by any number of
   * forwarder processes) or `memory` (nothing survives a restart: tests, benchmarks).
   */
  readonly type?: 'sqlite' | 'postgres' | 'memory';
  /** PostgreSQL connection URL (`postgres://user:password@host:5432/db`), or `{ "env": "DATABASE_URL" }`. Required for `postgres`. */
  readonly url?: SecretValue;
  /** PostgreSQL connections per forwarder process. Default 10. */
  readonly poolSize?: number;
  /** Longest wait for a PostgreSQL connection, in ms; an unreachable server fails the start after it. Default 5000. */
  readonly connectTimeout?: number;
  /**
   * How long a claimed delivery stays reserved for the instance that claimed it, in ms; if that
   * instance dies, another takes the delivery over after it. Default 30000; at least
   * `delivery.timeout` + 1000.
   */
  readonly lease?: number;
  /** Directory of the SQLite database. Default `./eventrelay-data`; the CLI's `--data` wins. */
  readonly dataDir?: string;
  /**
   * SQLite `synchronous` in WAL mode. `full` (default): an acknowledged message survives a power
   * loss (one fsync per request). `normal`: it survives a crash or kill of the process, not a
   * power loss, for more throughput.
   */
  readonly synchronous?: 'full' | 'normal';
  /**
   * How long finished deliveries (without the body once delivered) and seen messageIds are kept,
   * in ms: the window in which a client's resent batch is recognised. Default 24 h.
   */
  readonly retention?: number;
  /**
   * How long a delivered body stays in the delivery log (for inspection and replay), in ms.
   * Default 0: erased when delivered, so personal data is not kept by surprise. Failed and
   * pending bodies are kept for `retention`.
   */
  readonly keepDelivered?: number;
  /** The delivery log (every call and attempt, for the admin API and the debugger). Default true. */
  readonly deliveryLog?: boolean;
}

export interface NotifyConfig {
  /** An http or https URL; may be a SecretValue. */
  readonly url: SecretValue;
  /** Signs each notice (`X-Signature`, hex HMAC-SHA1 of the body). Required. */
  readonly sharedSecret: SecretValue;
}

export interface MetricsConfig {
  /** Path of the Prometheus endpoint. Default `/metrics`. */
  readonly path?: string;
}

export interface ForwarderConfig {
  /** Interface the HTTP server binds. Default `127.0.0.1`; use `0.0.0.0` in a container. */
  readonly host?: string;
  /** TCP port. Default 8787; 0 picks a free one. */
  readonly port?: number;
  /** Bearer token for `/admin/*`. Without it the admin endpoints answer 403. */
  readonly adminToken?: SecretValue;
  /** How the forwarder is reached: proxies in front of it and its public address. */
  readonly http?: HttpConfig;
  readonly storage?: StorageConfig;
  readonly delivery?: DeliveryConfig;
  /** Prometheus metrics (`GET /metrics`); `false` turns them off. */
  readonly metrics?: MetricsConfig | false;
  /** The debugger page (`GET /debugger`); `false` turns it off. Default true. */
  readonly debugger?: boolean;
  /** Operator log lines of `eventrelay serve` (see docs/operating-the-forwarder.md#logs). */
  readonly log?: LogConfig;
  /**
   * Where the operator's notices go (a URL disabled or enabled, a delivery given up): a signed JSON
   * POST, retried like any delivery. Default none.
   */
  readonly notify?: NotifyConfig;
  /**
   * Sources applied to the store at start (see docs/sources.md for which wins); more can be made
   * at runtime through the admin API. Default none.
   */
  readonly sources?: readonly SourceConfig[];
}

export interface LogConfig {
  /** The least level written: `debug`, `info` (default), `warn`, `error` or `silent`. */
  readonly level?: LogLevel;
  /** `json` (one object per line), `pretty` (readable), or `auto` (default): pretty on a terminal, JSON otherwise. */
  readonly format?: 'auto' | 'json' | 'pretty';
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** The values of `log.level`. */
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/** A source's Webhooks settings: what the store keeps (`StoredWebhooks`), and whether they are on. */
export interface ResolvedWebhooks extends StoredWebhooks {
  readonly enabled: boolean;
}

export interface ResolvedSource {
  readonly name: string;
  readonly writeKey: string;
  /** Undefined when the source has no Webhooks destination. */
  readonly webhooks: ResolvedWebhooks | undefined;
  /** Allowed origins and ingestion limit; absent or empty when none is set. */
  readonly settings?: SourceSettings;
  /** Present only when the entry sets controls. */
  readonly schema?: SourceSchema;
}

export interface ResolvedHttp {
  /** Proxies whose forwarding headers are believed (0: none). */
  readonly trustProxy: number;
  /** `http.publicUrl` without a trailing slash; undefined: the request's Host. */
  readonly publicUrl: string | undefined;
}

export interface ResolvedStorage {
  readonly type: 'sqlite' | 'postgres' | 'memory';
  readonly dataDir: string;
  readonly synchronous: 'full' | 'normal';
  readonly retention: number;
  /** Set for `postgres` only. */
  readonly url: string | undefined;
  readonly poolSize: number;
  readonly connectTimeout: number;
  readonly lease: number;
  /** How long a delivered body stays in the delivery log, in ms; 0 erases it when delivered. */
  readonly keepDelivered: number;
  readonly deliveryLog: boolean;
}

/** A config with every default filled in and every secret read. */
export interface ResolvedConfig {
  readonly host: string;
  readonly port: number;
  readonly adminToken: string | undefined;
  readonly http: ResolvedHttp;
  readonly storage: ResolvedStorage;
  readonly delivery: { -readonly [K in Exclude<keyof DeliveryConfig, keyof NetworkPolicyOptions>]-?: NonNullable<DeliveryConfig[K]> } & {
    /** `denyNetworks` and `allowNetworks` as written (absent when not set), for the destinations. */
    readonly networks: NetworkPolicyOptions;
    /** The policy they make, built once (a ConfigError naming a bad entry). */
    readonly networkPolicy: NetworkPolicy;
  };
  /** Path of the Prometheus endpoint; undefined when off. */
  readonly metricsPath: string | undefined;
  readonly log: { readonly level: LogLevel; readonly format: 'auto' | 'json' | 'pretty' };
  readonly debugger: boolean;
  readonly sources: readonly ResolvedSource[];
  /** Where notices go; undefined: only the `endpoint` event. */
  readonly notify?: { readonly url: string; readonly sharedSecret: string };
  /**
   * True when `delivery.sourceConcurrency` was not set: the share of one source then follows the
   * sources delivering at the moment (they change at runtime), and `delivery.sourceConcurrency`
   * holds the share for the file's sources.
   */
  readonly sourceConcurrencyAuto?: boolean;
}

/** The environment secrets are read from (`{ "env": NAME }`). */
export type Env = Readonly<Record<string, string | undefined>>;
