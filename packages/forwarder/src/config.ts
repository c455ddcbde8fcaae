import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { ConfigError } from 'eventrelay/internal';
import { DESTINATION_DEFAULTS, MAX_WEBHOOKS, resolveWebhook, SIGNING_SCHEMES } from './delivery/options';
import { standardSigningKey } from './delivery/signing';
import { rateLimitOption } from './delivery/rate-limit';
import { DEFAULT_DISABLE_AFTER } from './store/endpoint-state';
import { checkSourceUrls, NetworkPolicy } from './delivery/network-policy';
import type { NetworkPolicyOptions } from './delivery/network-policy';
import { refuseControlCharacters } from './delivery/url-text';
import { checkSourceName } from './source-names';
import { parseFilter, parseSchema } from './schema-rules';
import { booleanOption, durationOption, enumOption, integerOption, objectOption, stringOption, urlOption } from 'eventrelay/internal';
import { describeType, describeValue, isPlainObject, showValue } from 'eventrelay/internal';
import type { IngestRateLimit, SigningScheme, RateLimit, SourceSchema, SourceSettings, WebhookFilter } from './store/contract';
import type { ResolvedWebhookEntry, StoredWebhooks } from './store/contract';

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

export const CONFIG_DEFAULTS = {
  host: '127.0.0.1',
  port: 8787,
  storage: {
    type: 'sqlite',
    dataDir: './eventrelay-data',
    synchronous: 'full',
    retention: 24 * 3600_000,
    url: undefined,
    poolSize: 10,
    connectTimeout: 5000,
    lease: 30_000,
    keepDelivered: 0,
    deliveryLog: true,
  },
  metricsPath: '/metrics',
  // The destination's own defaults: one place to change them.
  delivery: { ...DESTINATION_DEFAULTS, disableAfter: DEFAULT_DISABLE_AFTER },
} as const;

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The problems of one config, gathered so that one run of `eventrelay check` reports them all:
 * `take` runs one independent check and notes the ConfigError it throws (answering undefined),
 * and the checks that depend on it are skipped. `STRICT` notes nothing: the first problem is
 * thrown, as the admin API answers it.
 */
class Problems {
  readonly found: ConfigError[] = [];

  constructor(private readonly gather: boolean) {}

  take<T>(check: () => T): T | undefined {
    if (!this.gather) return check();
    try {
      return check();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      this.found.push(...(error.problems ?? [error]));
      return undefined;
    }
  }

  /** Notes a problem found without a throw (strict: throws it). */
  add(problem: ConfigError): void {
    if (!this.gather) throw problem;
    this.found.push(problem);
  }

  /** Throws what was found: the one ConfigError, or one that lists them all (`problems`). */
  throwIfAny(): void {
    const found = this.found;
    if (found.length === 0) return;
    if (found.length === 1) throw found[0]!;
    const lines = found.map((p) => `- ${p.field === undefined || p.field === '' ? 'in the file (top level)' : `at ${p.field}`}: ${p.message}`);
    throw new ConfigError(`The config has ${found.length} problems:\n${lines.join('\n')}`, found[0]!.field, [...found]);
  }
}

const STRICT = new Problems(false);

/**
 * An object with only the listed keys: a typo is an error, not a silently ignored field. Every
 * unknown key is a problem of its own; the known ones are read all the same.
 */
function expectObject(value: unknown, field: string, allowed: readonly string[], problems: Problems = STRICT): Record<string, unknown> {
  const object = objectOption(field, value);
  for (const key of Object.keys(object)) {
    if (!allowed.includes(key)) {
      const path = join(field, key);
      problems.add(new ConfigError(`Unknown field \`${path}\`; expected one of ${allowed.map((k) => `\`${k}\``).join(', ')}`, path));
    }
  }
  return object;
}

function join(base: string, key: string): string {
  return base === '' ? key : `${base}.${key}`;
}

/**
 * Reads a SecretValue. Error messages name the field and the variable, never the value. `env`
 * null: the value comes from the admin API, where `{ "env": NAME }` is refused (an API call must
 * not read the server's environment). `blank` false refuses a value of spaces only.
 */
function secret(value: unknown, field: string, env: Env | null, blank = true): string {
  if (isPlainObject(value)) {
    const keys = Object.keys(value);
    if (env === null) {
      throw new ConfigError(`Expected \`${field}\` to be a non-empty string; { "env": NAME } is read in the config file only, not through the admin API`, field);
    }
    if (keys.length !== 1 || keys[0] !== 'env' || typeof value.env !== 'string' || value.env === '') {
      throw new ConfigError(`Expected \`${field}\` to be a string or { "env": "VARIABLE_NAME" }, got an object with keys ${JSON.stringify(keys)}`, field);
    }
    const resolved = env[value.env];
    if (resolved === undefined || resolved === '') {
      throw new ConfigError(`\`${field}\` reads the environment variable ${value.env}, which is not set or empty`, field);
    }
    if (!blank && resolved.trim() === '') {
      throw new ConfigError(`\`${field}\` reads the environment variable ${value.env}, which holds only spaces`, field);
    }
    return resolved;
  }
  const expected = env === null ? 'a non-empty string' : 'a non-empty string or { "env": "VARIABLE_NAME" }';
  if (typeof value !== 'string' || value === '') {
    throw new ConfigError(`Expected \`${field}\` to be ${expected}, got ${describeType(value)}`, field);
  }
  if (!blank && value.trim() === '') throw new ConfigError(`Expected \`${field}\` to be ${expected}, got a string of spaces only`, field);
  return value;
}

/** Resolves the secrets of one webhook entry, then checks it with the destination's own rules. */
function webhookEntry(value: unknown, index: number, field: string, env: Env | null, problems: Problems): ResolvedWebhookEntry | undefined {
  const entry = expectObject(value, field, ['url', 'headers', 'rateLimit', 'filter'], problems);
  const url = problems.take(() => secret(entry.url, join(field, 'url'), env));
  const headersField = join(field, 'headers');
  const rawHeaders = problems.take(() => (entry.headers === undefined ? {} : objectOption(headersField, entry.headers, 'an object of header names to values')));
  // Secrets are read first, so that the checks see the values the destination will send.
  const read = Object.entries(rawHeaders ?? {}).map(([name, raw]) => [name, problems.take(() => secret(raw, `${headersField}[${JSON.stringify(name)}]`, env))] as const);
  const rateLimit = problems.take(() => (entry.rateLimit === undefined ? undefined : rateLimitOption(join(field, 'rateLimit'), entry.rateLimit)));
  const filter = problems.take(() => (entry.filter === undefined ? undefined : parseFilter(entry.filter, join(field, 'filter'), (p) => problems.add(p))));
  if (url === undefined || rawHeaders === undefined || read.some(([, v]) => v === undefined)) return undefined;
  const headers = Object.fromEntries(read) as Record<string, string>;
  if (problems.take(() => resolveWebhook({ url, headers }, index, field)) === undefined) return undefined;
  return { url, headers, ...(rateLimit === undefined ? {} : { rateLimit }), ...(filter === undefined ? {} : { filter }) };
}

/** `storage.url`: required for postgres, refused for the others; never echoed (it may hold a password). */
function storageUrl(type: ResolvedStorage['type'], value: unknown, env: Env): string | undefined {
  if (type !== 'postgres') {
    if (value !== undefined) throw new ConfigError(`\`storage.url\` applies to "type": "postgres" only; the storage type is "${type}"`, 'storage.url');
    return undefined;
  }
  if (value === undefined) {
    throw new ConfigError('`storage.url` is required with "type": "postgres": a URL such as postgres://user@host:5432/db, or { "env": "DATABASE_URL" }', 'storage.url');
  }
  const text = secret(value, 'storage.url', env);
  urlOption('storage.url', text, { example: 'postgres://user@host:5432/db', schemes: ['postgres:', 'postgresql:'] });
  return text;
}

/**
 * A Webhooks destination: `sources[i].destinations.Webhooks` in the config file (`env` given), or
 * the body of `PUT /admin/sources/{name}/destinations/Webhooks` (`field` '', `env` null): the same
 * rules and the same paths below the destination.
 */
export function webhooksDestination(value: unknown, field: string, env: Env | null): ResolvedWebhooks {
  // Every problem at once: one ConfigError, or one that lists them all (`problems`).
  const problems = new Problems(true);
  const read = readWebhooksDestination(value, field, env, problems);
  problems.throwIfAny();
  return read!;
}

/** `webhooksDestination`, noting its problems in `problems` (undefined when there were any). */
function readWebhooksDestination(value: unknown, field: string, env: Env | null, problems: Problems): ResolvedWebhooks | undefined {
  const raw = expectObject(value, field, ['enabled', 'webhooks', 'sharedSecret', 'signing', 'ordering'], problems);
  const before = problems.found.length;
  const enabled = problems.take(() => booleanOption(join(field, 'enabled'), raw.enabled ?? true));
  const listField = join(field, 'webhooks');
  const list = raw.webhooks;
  let webhooks: (ResolvedWebhookEntry | undefined)[] = [];
  if (!Array.isArray(list) || list.length < 1 || list.length > MAX_WEBHOOKS) {
    problems.add(
      new ConfigError(
        `Expected \`${listField}\` to be a list of 1 to ${MAX_WEBHOOKS} entries ({ "url": ..., "headers": ... }), got ${Array.isArray(list) ? `${list.length} entries` : describeValue(list)}`,
        listField,
      ),
    );
  } else {
    webhooks = list.map((entry, i) => problems.take(() => webhookEntry(entry, i, `${listField}[${i}]`, env, problems)));
  }
  const secretField = join(field, 'sharedSecret');
  const sharedSecret =
    raw.sharedSecret === undefined
      ? undefined
      : Array.isArray(raw.sharedSecret) && raw.sharedSecret.length > 0
        ? raw.sharedSecret.map((item: unknown, i) => problems.take(() => secret(item, `${secretField}[${i}]`, env)))
        : problems.take(() => secret(raw.sharedSecret, secretField, env));
  const signing = problems.take(() => enumOption(join(field, 'signing'), raw.signing ?? 'x-signature', SIGNING_SCHEMES));
  if (signing !== undefined && signing !== 'x-signature' && raw.sharedSecret === undefined) {
    problems.add(new ConfigError(`\`${join(field, 'signing')}\` is "${signing}", which needs \`${secretField}\` to sign with`, secretField));
  }
  // The destination decodes a whsec_ secret at start; checked here too, so that `check` refuses what `serve` would.
  if (signing !== undefined && signing !== 'x-signature' && sharedSecret !== undefined) {
    const all = typeof sharedSecret === 'string' ? [sharedSecret] : sharedSecret;
    all.forEach((one, i) => {
      if (one !== undefined) problems.take(() => standardSigningKey(one, typeof sharedSecret === 'string' ? secretField : `${secretField}[${i}]`));
    });
  }
  // Kept only when on: settings stored before the option read the same as before.
  const ordering = problems.take(() => enumOption(join(field, 'ordering'), raw.ordering ?? 'none', ORDERINGS));
  if (problems.found.length > before) return undefined;
  return {
    enabled: enabled!,
    webhooks: webhooks as ResolvedWebhookEntry[],
    sharedSecret: sharedSecret as string | string[] | undefined,
    signing: signing!,
    ...(ordering === 'user' ? { ordering } : {}),
  };
}

/** The values of `Webhooks.ordering`. */
const ORDERINGS = ['none', 'user'] as const;

/** A source name, in the config file and the admin API: see `checkSourceName` for the rules. */
export function sourceName(value: unknown, field: string): string {
  return checkSourceName(value, field);
}

/** Most origins one source may list. */
export const MAX_ALLOWED_ORIGINS = 100;
/** Longest origin a source may list, in characters. */
export const MAX_ORIGIN_LENGTH = 2048;
/** Bounds of `ingestRateLimit.perSecond` and `.burst`. */
export const INGEST_LIMIT_BOUNDS = { minPerSecond: 0.01, maxPerSecond: 100_000, maxBurst: 100_000 } as const;

/** One entry of `allowedOrigins`: `*`, or an origin exactly as a browser sends it. */
function originOption(value: unknown, field: string): string {
  if (value === '*') return value;
  if (typeof value !== 'string' || value === '' || value.length > MAX_ORIGIN_LENGTH) {
    throw new ConfigError(`Expected \`${field}\` to be an origin such as "https://shop.example" (or "*" for any), got ${describeValue(value)}`, field);
  }
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ConfigError(`Expected \`${field}\` to be an http or https origin such as "https://shop.example" (or "*" for any), got ${showValue(value)}`, field);
  }
  if (url.origin !== value) {
    // Browsers send the scheme, the lower-case host and a port other than the scheme's own: nothing else.
    throw new ConfigError(`Expected \`${field}\` to be an origin as browsers send it, scheme, host and port only: "${url.origin}", got ${showValue(value)}`, field);
  }
  return value;
}

/** `ingestRateLimit`: `{ perSecond, burst? }`; `burst` defaults to one second's worth (at least 1). */
function ingestRateLimitOption(value: unknown, field: string): IngestRateLimit {
  const raw = expectObject(value, field, ['perSecond', 'burst']);
  const { minPerSecond, maxPerSecond, maxBurst } = INGEST_LIMIT_BOUNDS;
  const perSecond = raw.perSecond;
  if (typeof perSecond !== 'number' || !Number.isFinite(perSecond) || perSecond < minPerSecond || perSecond > maxPerSecond) {
    throw new ConfigError(
      `Expected \`${join(field, 'perSecond')}\` to be a number of requests a second, from ${minPerSecond} to ${maxPerSecond}, got ${describeValue(perSecond)}`,
      join(field, 'perSecond'),
    );
  }
  const burst = integerOption(join(field, 'burst'), raw.burst ?? Math.max(1, Math.ceil(perSecond)), 1, maxBurst);
  return { perSecond, burst };
}

/**
 * A source's settings: `allowedOrigins` and `ingestRateLimit` of a config file entry (`field` its
 * path), or the body of `PUT /admin/sources/{name}/settings` (`field` ''). Origins are kept in
 * the order given, without repeats.
 */
export function sourceSettings(raw: Record<string, unknown>, field: string): SourceSettings {
  const settings: { allowedOrigins?: readonly string[]; ingestRateLimit?: IngestRateLimit } = {};
  if (raw.allowedOrigins !== undefined) {
    const listField = join(field, 'allowedOrigins');
    const list = raw.allowedOrigins;
    if (!Array.isArray(list) || list.length > MAX_ALLOWED_ORIGINS) {
      throw new ConfigError(
        `Expected \`${listField}\` to be a list of at most ${MAX_ALLOWED_ORIGINS} origins such as ["https://shop.example"], got ${Array.isArray(list) ? `${list.length} entries` : describeValue(list)}`,
        listField,
      );
    }
    settings.allowedOrigins = [...new Set(list.map((entry: unknown, i) => originOption(entry, `${listField}[${i}]`)))];
  }
  if (raw.ingestRateLimit !== undefined) settings.ingestRateLimit = ingestRateLimitOption(raw.ingestRateLimit, join(field, 'ingestRateLimit'));
  return settings;
}

/** True when settings set nothing. */
export function emptySettings(settings: SourceSettings | undefined): boolean {
  return settings === undefined || (settings.allowedOrigins === undefined && settings.ingestRateLimit === undefined);
}

/** A source of the file; its name and write key are undefined when they have a problem (noted). */
/** What `source` read of an entry: a field with a problem is undefined. */
interface ReadSource {
  readonly name?: string;
  readonly writeKey?: string;
  readonly webhooks?: ResolvedWebhooks;
  readonly settings?: SourceSettings;
  readonly schema?: SourceSchema;
}

function source(value: unknown, field: string, env: Env | null, problems: Problems): ReadSource {
  const raw = expectObject(value, field, ['name', 'writeKey', 'destinations', 'allowedOrigins', 'ingestRateLimit', 'schema'], problems);
  const name = problems.take(() => sourceName(raw.name, join(field, 'name')));
  const writeKey = problems.take(() => secret(raw.writeKey, join(field, 'writeKey'), env, false));
  let webhooks: ResolvedWebhooks | undefined;
  if (raw.destinations !== undefined) {
    const destField = join(field, 'destinations');
    const destinations = problems.take(() => expectObject(raw.destinations, destField, ['Webhooks'], problems));
    if (destinations?.Webhooks !== undefined) {
      webhooks = problems.take(() => readWebhooksDestination(destinations.Webhooks, join(destField, 'Webhooks'), env, problems));
    }
  }
  const settings = problems.take(() => sourceSettings(raw, field));
  const schema = problems.take(() => (raw.schema === undefined ? undefined : parseSchema(raw.schema, join(field, 'schema'), (p) => problems.add(p))));
  return {
    name,
    writeKey,
    webhooks,
    ...(emptySettings(settings) ? {} : { settings }),
    ...(schema === undefined ? {} : { schema }),
  };
}

/**
 * The config file's `sources` (absent: none, since sources may all be made at runtime), checked
 * with unique names and write keys. `env` null: the list came through the admin API
 * (`POST /admin/apply`), where secrets are values, never `{ "env": NAME }`.
 */
export function parseSources(value: unknown, env: Env | null): ResolvedSource[] {
  // Every problem of every source at once: one ConfigError, or one that lists them all (`problems`).
  const problems = new Problems(true);
  const sources = readSources(value, env, problems);
  problems.throwIfAny();
  return sources;
}

/** `parseSources`, noting every problem of every source in `problems`. */
function readSources(value: unknown, env: Env | null, problems: Problems): ResolvedSource[] {
  const list = value ?? [];
  if (!Array.isArray(list)) {
    throw new ConfigError(`Expected \`sources\` to be a list of sources ({ "name", "writeKey", "destinations", "schema" }), got ${describeValue(value)}`, 'sources');
  }
  const sources = list.map((item, i) => problems.take(() => source(item, `sources[${i}]`, env, problems)) ?? {});
  sources.forEach((s, i) => {
    const earlier = sources.findIndex((o) => o.name === s.name);
    if (s.name !== undefined && earlier !== i) problems.add(new ConfigError(`\`sources[${i}].name\` repeats the name of sources[${earlier}]; names must be unique`, `sources[${i}].name`));
    const sameKey = sources.findIndex((o) => o.writeKey === s.writeKey);
    if (s.writeKey !== undefined && sameKey !== i) {
      problems.add(new ConfigError(`\`sources[${i}].writeKey\` is the same as the write key of sources[${sameKey}]; write keys must be unique`, `sources[${i}].writeKey`));
    }
  });
  return sources as ResolvedSource[];
}

/** The top-level parts of a config a command may read on their own (`ParseOptions.parts`). */
export type ConfigPart = 'host' | 'port' | 'adminToken' | 'http' | 'storage' | 'delivery' | 'metrics' | 'debugger' | 'log' | 'sources' | 'notify';

export interface ParseOptions {
  /**
   * Only these parts are read and checked (their secrets included); the others keep their
   * defaults, so that a command reads only the settings it uses (`eventrelay endpoints` reads
   * `adminToken`, not every source's secrets). Default: every part.
   */
  readonly parts?: readonly ConfigPart[];
}

const STORAGE_KEYS = ['type', 'dataDir', 'synchronous', 'retention', 'url', 'poolSize', 'connectTimeout', 'lease', 'keepDelivered', 'deliveryLog'];
const DELIVERY_KEYS = ['concurrency', 'sourceConcurrency', 'timeout', 'retryWindow', 'minRetryDelay', 'maxRetryDelay', 'disableAfter', 'denyNetworks', 'allowNetworks'];

/**
 * Checks a forwarder config and fills in its defaults. Every problem is found in one pass (every
 * environment variable that is not set, every bad field, each unknown key): one problem is thrown
 * as a ConfigError whose `field` is its path (e.g. `sources[1].destinations.Webhooks.webhooks[0].url`)
 * and whose message says what was expected; several as one ConfigError that lists them, with each
 * in `problems` (its `field` the first's). A check that depends on a field with a problem is
 * skipped. Secrets are never part of a message.
 */
export function parseConfig(input: unknown, env: Env = process.env, options: ParseOptions = {}): ResolvedConfig {
  // The field of the whole config is '' (the top level).
  if (!isPlainObject(input)) throw new ConfigError(`Expected the config to be a JSON object, got ${describeValue(input)}`, '');
  const problems = new Problems(true);
  const take = <T>(check: () => T): T | undefined => problems.take(check);
  const uses = (part: ConfigPart): boolean => options.parts === undefined || options.parts.includes(part);
  const raw = expectObject(input, '', ['host', 'port', 'adminToken', 'http', 'storage', 'delivery', 'metrics', 'debugger', 'log', 'sources', 'notify', '$comment'], problems);
  const host = uses('host') ? take(() => hostOption(raw.host ?? CONFIG_DEFAULTS.host)) : CONFIG_DEFAULTS.host;
  const port = uses('port') ? take(() => integerOption('port', raw.port ?? CONFIG_DEFAULTS.port, 0, 65535)) : CONFIG_DEFAULTS.port;
  const adminToken = uses('adminToken') && raw.adminToken !== undefined ? take(() => secret(raw.adminToken, 'adminToken', env, false)) : undefined;
  const http = uses('http') ? (take(() => httpOption(raw.http)) ?? httpOption(undefined)) : httpOption(undefined);

  const s = (uses('storage') && raw.storage !== undefined ? take(() => expectObject(raw.storage, 'storage', STORAGE_KEYS, problems)) : undefined) ?? {};
  const d = CONFIG_DEFAULTS.storage;
  const type = take(() => enumOption('storage.type', s.type ?? d.type, ['sqlite', 'postgres', 'memory'] as const));
  const storage = {
    type,
    dataDir: take(() => stringOption('storage.dataDir', s.dataDir ?? d.dataDir)),
    synchronous: take(() => enumOption('storage.synchronous', s.synchronous ?? d.synchronous, ['full', 'normal'] as const)),
    retention: take(() => durationOption('storage.retention', s.retention ?? d.retention, 1000, Number.MAX_SAFE_INTEGER)),
    url: type === undefined ? undefined : take(() => storageUrl(type, s.url, env)),
    poolSize: take(() => integerOption('storage.poolSize', s.poolSize ?? d.poolSize, 1, 1000)),
    connectTimeout: take(() => durationOption('storage.connectTimeout', s.connectTimeout ?? d.connectTimeout, 1, 600_000)),
    lease: take(() => durationOption('storage.lease', s.lease ?? d.lease, 1000, 3600_000)),
    keepDelivered: take(() => durationOption('storage.keepDelivered', s.keepDelivered ?? d.keepDelivered, 0, Number.MAX_SAFE_INTEGER)),
    deliveryLog: take(() => booleanOption('storage.deliveryLog', s.deliveryLog ?? d.deliveryLog)),
  };
  const metricsPath = uses('metrics') ? take(() => metricsOption(raw.metrics)) : CONFIG_DEFAULTS.metricsPath;
  const debuggerOn = uses('debugger') ? take(() => booleanOption('debugger', raw.debugger ?? true)) : true;
  const l = (uses('log') && raw.log !== undefined ? take(() => expectObject(raw.log, 'log', ['level', 'format'], problems)) : undefined) ?? {};
  const log = {
    level: take(() => enumOption('log.level', l.level ?? 'info', LOG_LEVELS)) ?? 'info',
    format: take(() => enumOption('log.format', l.format ?? 'auto', ['auto', 'json', 'pretty'] as const)) ?? 'auto',
  };

  const r = (uses('delivery') && raw.delivery !== undefined ? take(() => expectObject(raw.delivery, 'delivery', DELIVERY_KEYS, problems)) : undefined) ?? {};
  const dd = CONFIG_DEFAULTS.delivery;
  const concurrency = take(() => integerOption('delivery.concurrency', r.concurrency ?? dd.concurrency, 1, 1024));
  const networks: NetworkPolicyOptions = {
    ...(r.denyNetworks === undefined ? {} : { denyNetworks: r.denyNetworks as readonly string[] }),
    ...(r.allowNetworks === undefined ? {} : { allowNetworks: r.allowNetworks as readonly string[] }),
  };
  const delivery = {
    concurrency,
    // 0 until the sources are known: filled in below.
    sourceConcurrency:
      r.sourceConcurrency === undefined ? 0 : concurrency === undefined ? undefined : take(() => integerOption('delivery.sourceConcurrency', r.sourceConcurrency, 1, concurrency)),
    timeout: take(() => durationOption('delivery.timeout', r.timeout ?? dd.timeout, 1, 60_000)),
    retryWindow: take(() => durationOption('delivery.retryWindow', r.retryWindow ?? dd.retryWindow, 0, 30 * 24 * 3600_000)),
    minRetryDelay: take(() => durationOption('delivery.minRetryDelay', r.minRetryDelay ?? dd.minRetryDelay, 1, 24 * 3600_000)),
    maxRetryDelay: take(() => durationOption('delivery.maxRetryDelay', r.maxRetryDelay ?? dd.maxRetryDelay, 1, 24 * 3600_000)),
    disableAfter: take(() => durationOption('delivery.disableAfter', r.disableAfter ?? dd.disableAfter, 0, 365 * 24 * 3600_000)),
    networks,
    networkPolicy: take(() => new NetworkPolicy(networks, 'delivery')),
  };
  const { lease } = storage;
  if (lease !== undefined && delivery.timeout !== undefined && lease < delivery.timeout + 1000) {
    problems.add(
      new ConfigError(
        `Expected \`storage.lease\` (${lease} ms) to be at least \`delivery.timeout\` + 1000 ms (${delivery.timeout + 1000} ms): ` +
        'a lease must outlast an attempt, or another instance may take the delivery over while it runs',
        'storage.lease',
      ),
    );
  }
  const { minRetryDelay, maxRetryDelay } = delivery;
  if (minRetryDelay !== undefined && maxRetryDelay !== undefined && minRetryDelay > maxRetryDelay) {
    problems.add(
      new ConfigError(`Expected \`delivery.minRetryDelay\` (${minRetryDelay} ms) to be at most \`delivery.maxRetryDelay\` (${maxRetryDelay} ms)`, 'delivery.minRetryDelay'),
    );
  }

  const sources = (uses('sources') ? take(() => readSources(raw.sources, env, problems)) : undefined) ?? [];
  const notify = uses('notify') ? take(() => notifyOption(raw.notify, env, problems)) : undefined;
  const policy = delivery.networkPolicy;
  if (policy !== undefined) {
    take(() => checkSourceUrls(policy, sources));
    if (notify !== undefined) take(() => policy.checkUrl(new URL(notify.url.trim()), 'notify.url'));
  }
  problems.throwIfAny();

  // No problem: every field is set.
  const resolvedDelivery = delivery as ResolvedConfig['delivery'];
  const sourceConcurrencyAuto = resolvedDelivery.sourceConcurrency === 0;
  if (sourceConcurrencyAuto) {
    const delivering = sources.filter((one) => one.webhooks?.enabled === true).length;
    resolvedDelivery.sourceConcurrency = delivering <= 1 ? concurrency! : Math.ceil(concurrency! / 2);
  }
  const resolved: ResolvedConfig = {
    host: host!,
    port: port!,
    adminToken,
    http,
    storage: storage as ResolvedStorage,
    delivery: resolvedDelivery,
    metricsPath,
    log,
    debugger: debuggerOn!,
    sources,
    sourceConcurrencyAuto,
  };
  return notify === undefined ? resolved : { ...resolved, notify };
}

/**
 * `host`: an IPv4 or IPv6 address, or a host name; checked here so that a bad one is a ConfigError
 * naming the field, not a socket error at start.
 */
function hostOption(value: unknown): string {
  const host = stringOption('host', value);
  if (isIP(host) === 0 && !/^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(host)) {
    throw new ConfigError(`Expected \`host\` to be an IP address (such as "127.0.0.1", "0.0.0.0" or "::") or a host name, got ${describeValue(host)}`, 'host');
  }
  return host;
}

/** Most proxies `http.trustProxy` may name. */
export const MAX_TRUSTED_PROXIES = 10;

/** `http`: `{ trustProxy?, publicUrl? }`. */
function httpOption(value: unknown): ResolvedHttp {
  if (value === undefined) return { trustProxy: 0, publicUrl: undefined };
  const raw = expectObject(value, 'http', ['trustProxy', 'publicUrl']);
  const trust = raw.trustProxy ?? 0;
  const trustProxy = typeof trust === 'boolean' ? (trust ? 1 : 0) : integerOption('http.trustProxy', trust, 0, MAX_TRUSTED_PROXIES);
  let publicUrl: string | undefined;
  if (raw.publicUrl !== undefined) {
    const text = stringOption('http.publicUrl', raw.publicUrl);
    const url = urlOption('http.publicUrl', refuseControlCharacters('http.publicUrl', text), { example: 'https://events.example.com' });
    if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
      throw new ConfigError(`Expected \`http.publicUrl\` to be the forwarder's address, such as "https://events.example.com", without credentials, query or fragment`, 'http.publicUrl');
    }
    publicUrl = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  }
  return { trustProxy, publicUrl };
}

/** `notify`: absent, or `{ "url", "sharedSecret" }` (both may be `{ "env": NAME }`). */
function notifyOption(value: unknown, env: Env, problems: Problems): { url: string; sharedSecret: string } | undefined {
  if (value === undefined) return undefined;
  const raw = expectObject(value, 'notify', ['url', 'sharedSecret'], problems);
  const url = problems.take(() => {
    const text = secret(raw.url, 'notify.url', env);
    urlOption('notify.url', refuseControlCharacters('notify.url', text));
    return text;
  });
  if (raw.sharedSecret === undefined) {
    throw new ConfigError('`notify.sharedSecret` is required: notices are signed (X-Signature) so that their receiver can tell them from forgeries', 'notify.sharedSecret');
  }
  const sharedSecret = secret(raw.sharedSecret, 'notify.sharedSecret', env, false);
  return url === undefined ? undefined : { url, sharedSecret };
}

/** `metrics`: absent (on, at /metrics), `false` (off) or `{ "path": "/..." }`. */
function metricsOption(value: unknown): string | undefined {
  if (value === undefined) return CONFIG_DEFAULTS.metricsPath;
  if (value === false) return undefined;
  const m = expectObject(value, 'metrics', ['path']);
  if (m.path === undefined) return CONFIG_DEFAULTS.metricsPath;
  const path = stringOption('metrics.path', m.path);
  if (!/^\/[A-Za-z0-9._~/-]*[A-Za-z0-9._~-]$/.test(path) || /^\/(v1|admin|debugger|health|stats)(\/|$)/.test(path)) {
    throw new ConfigError(`Expected \`metrics.path\` to be a path such as "/metrics", not under /v1, /admin or /debugger, got ${describeValue(path)}`, 'metrics.path');
  }
  return path;
}

/** Where a JSON syntax error is, without V8's excerpt of the text (which may hold a secret). */
function jsonErrorWhere(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  const position = /at position (\d+)/.exec(message)?.[1];
  if (position === undefined) return /end of JSON input/.test(message) ? 'it ends too early' : 'an unexpected token';
  const before = text.slice(0, Number(position)).split('\n');
  return `syntax error at line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
}

/** Reads and checks a JSON config file; a syntax error is a ConfigError that names the file. */
export function loadConfigFile(path: string, env: Env = process.env, options: ParseOptions = {}): ResolvedConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`Cannot read the config file ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, '');
  }
  let json: unknown;
  try {
    // A byte order mark (some editors write one) is not part of the JSON.
    json = JSON.parse(text.startsWith('\ufeff') ? text.slice(1) : text);
  } catch (error) {
    throw new ConfigError(`The config file ${path} is not valid JSON (${jsonErrorWhere(text, error)}); check quotes, commas and braces`, '');
  }
  return parseConfig(json, env, options);
}
