import { ConfigError } from '../errors';
import { describeValue, showValue } from '../internal/values';
import type { Transport } from '../transport/transport';

export interface AnalyticsOptions {
  /** The source's write key. Required. Sent as HTTP Basic auth; never logged. */
  readonly writeKey: string;
  /** Base URL of the ingestion API, e.g. `https://events.example.com`. Required (or `host`). */
  readonly endpoint?: string;
  /** Alias of `endpoint`, for code written for Segment's Node SDK. */
  readonly host?: string;
  /** Path of the batch API under `endpoint`. Default `/v1/batch`. */
  readonly path?: string;
  /** Send a batch when this many messages are queued. Default 20; 1 sends every call at once. */
  readonly flushAt?: number;
  /** Send a batch this many milliseconds after the first message queued since the last send. Default 5000. */
  readonly flushInterval?: number;
  /** Retries of one batch after its first attempt, for network errors, timeouts, 5xx and 429. Default 10. */
  readonly maxRetries?: number;
  /** Delay before the first retry, in milliseconds; doubles each retry, with jitter. Default 100. */
  readonly minRetryDelay?: number;
  /** Largest delay between two attempts, in milliseconds (also caps `Retry-After`). Default 30000. */
  readonly maxRetryDelay?: number;
  /** Time allowed for one HTTP request, in milliseconds. Default 10000. */
  readonly timeout?: number;
  /** Messages held at most (queued and in flight); further calls get `QueueFullError`. Default 100000. */
  readonly maxQueueSize?: number;
  /** Batches in flight at once. Default 4. */
  readonly concurrency?: number;
  /** Gzip request bodies (`Content-Encoding: gzip`). Default false. */
  readonly gzip?: boolean;
  /** Validate and call back, but send nothing (tests, local development). Default false. */
  readonly disable?: boolean;
  /** The HTTP layer. Default: a `NodeTransport` (node:http keep-alive); `GotTransport` is the got-based one. */
  readonly transport?: Transport;
}

export interface ResolvedOptions {
  readonly writeKey: string;
  readonly url: URL;
  readonly flushAt: number;
  readonly flushInterval: number;
  readonly maxRetries: number;
  readonly minRetryDelay: number;
  readonly maxRetryDelay: number;
  readonly timeout: number;
  readonly maxQueueSize: number;
  readonly concurrency: number;
  readonly gzip: boolean;
  readonly disable: boolean;
}

export const DEFAULTS = {
  path: '/v1/batch',
  flushAt: 20,
  flushInterval: 5000,
  maxRetries: 10,
  minRetryDelay: 100,
  maxRetryDelay: 30_000,
  timeout: 10_000,
  maxQueueSize: 100_000,
  concurrency: 4,
  gzip: false,
  disable: false,
} as const;

/** Every option `Analytics` knows; any other key is a `ConfigError`, never silently ignored. */
const KNOWN_OPTIONS: ReadonlySet<string> = new Set([
  'writeKey',
  'endpoint',
  'host',
  'path',
  'flushAt',
  'flushInterval',
  'maxRetries',
  'minRetryDelay',
  'maxRetryDelay',
  'timeout',
  'maxQueueSize',
  'concurrency',
  'gzip',
  'disable',
  'transport',
]);

/** Options of other SDKs that mean something here under another name. */
const HINTS: Readonly<Record<string, string>> = {
  enable: 'use `disable: true` to send nothing',
  flushAfter: 'use `flushInterval` (milliseconds)',
  maxEventsInBatch: 'use `flushAt`',
  httpRequestTimeout: 'use `timeout` (milliseconds)',
  httpClient: 'use `transport`',
  dataPlaneUrl: 'use `endpoint`',
};

function checkKeys(options: object): void {
  for (const key of Object.keys(options)) {
    if (KNOWN_OPTIONS.has(key)) continue;
    const hint = Object.hasOwn(HINTS, key) ? `; ${HINTS[key]}` : '';
    throw new ConfigError(
      `Unknown option ${showValue(key)}${hint}. Known options: ${[...KNOWN_OPTIONS].join(', ')}`,
      key.length <= 40 ? key : undefined,
    );
  }
}

function transport(value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'object' || value === null || typeof (value as { send?: unknown }).send !== 'function') {
    throw new ConfigError(`Expected \`transport\` to be an object with a send(request) method, got ${describeValue(value)}`, 'transport');
  }
}

function integer(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new ConfigError(`Expected \`${name}\` to be an integer ${range}, got ${showValue(value)}`, name);
  }
  return value;
}

function boolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') {
    throw new ConfigError(`Expected \`${name}\` to be a boolean, got ${showValue(value)}`, name);
  }
  return value;
}

function batchUrl(endpoint: unknown, path: unknown): URL {
  if (typeof endpoint !== 'string' || endpoint.trim() === '') {
    throw new ConfigError(
      'Expected `endpoint` (or its alias `host`) to be the base URL of the ingestion API, e.g. "https://events.example.com", ' +
        `got ${showValue(endpoint)}`,
      'endpoint',
    );
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new ConfigError('Expected `endpoint` to be an absolute http or https URL, got a string that is not a URL', 'endpoint');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`Expected \`endpoint\` to use http or https, got \`${url.protocol}\``, 'endpoint');
  }
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new ConfigError(`Expected \`path\` to be a string starting with "/", got ${showValue(path)}`, 'path');
  }
  return new URL(url.origin + url.pathname.replace(/\/+$/, '') + path);
}

/** Validates the options once, filling defaults field by field (`{ flushAt: undefined }` keeps the default). */
export function resolveOptions(options: AnalyticsOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError(`Expected an options object with at least \`writeKey\` and \`endpoint\`, got ${describeValue(options)}`);
  }
  checkKeys(options);
  transport(options.transport);
  const { writeKey } = options;
  if (typeof writeKey !== 'string' || writeKey.length === 0) {
    // The value itself is never echoed: it may be a misplaced secret.
    throw new ConfigError(
      `Expected \`writeKey\` to be a non-empty string (the source's write key), got ${typeof writeKey === 'string' ? 'an empty string' : `a value of type ${typeof writeKey}`}`,
      'writeKey',
    );
  }
  if (options.endpoint !== undefined && options.host !== undefined && options.endpoint !== options.host) {
    throw new ConfigError('Got both `endpoint` and `host` with different values; `host` is an alias of `endpoint`, pass one', 'endpoint');
  }
  const minRetryDelay = integer('minRetryDelay', options.minRetryDelay ?? DEFAULTS.minRetryDelay, 0);
  return {
    writeKey,
    url: batchUrl(options.endpoint ?? options.host, options.path ?? DEFAULTS.path),
    flushAt: integer('flushAt', options.flushAt ?? DEFAULTS.flushAt, 1),
    flushInterval: integer('flushInterval', options.flushInterval ?? DEFAULTS.flushInterval, 1),
    maxRetries: integer('maxRetries', options.maxRetries ?? DEFAULTS.maxRetries, 0),
    minRetryDelay,
    maxRetryDelay: integer('maxRetryDelay', options.maxRetryDelay ?? DEFAULTS.maxRetryDelay, minRetryDelay),
    timeout: integer('timeout', options.timeout ?? DEFAULTS.timeout, 1),
    maxQueueSize: integer('maxQueueSize', options.maxQueueSize ?? DEFAULTS.maxQueueSize, 1),
    concurrency: integer('concurrency', options.concurrency ?? DEFAULTS.concurrency, 1, 256),
    gzip: boolean('gzip', options.gzip ?? DEFAULTS.gzip),
    disable: boolean('disable', options.disable ?? DEFAULTS.disable),
  };
}
