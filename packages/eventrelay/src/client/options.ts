import { ConfigError } from '../errors';
import { booleanOption, durationOption, integerOption, objectOption, secretOption, urlOption } from '../internal/options';
import { describeValue, showValue } from '../internal/values';
import type { Transport } from '../transport/transport';
import { resolveSpoolOptions, type ResolvedSpoolOptions, type SpoolOptions } from './spool/options';

export interface AnalyticsOptions {
  /** The source's write key. Required. Sent as HTTP Basic auth; never logged. */
  readonly writeKey: string;
  /**
   * Base URL of the ingestion API, e.g. `https://events.example.com`. Required (or `host`). One
   * that ends in `/v1` (or `/v1/batch`) is taken as the API's own path: `/v1` is not doubled.
   */
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
  /** Gzip request bodies (`Content-Encoding: gzip`), with the runtime's `CompressionStream` (a `ConfigError` where there is none). Default false. */
  readonly gzip?: boolean;
  /** Validate and call back, but send nothing (tests, local development). Default false. */
  readonly disable?: boolean;
  /**
   * The HTTP layer. Default: a `NodeTransport` (node:http keep-alive) where the runtime has
   * `node:http` (Node, Bun, Deno), a `FetchTransport` elsewhere (Cloudflare Workers, Vercel Edge).
   * `new FetchTransport()` sends with `fetch` on any runtime; `GotTransport` is the got-based one.
   */
  readonly transport?: Transport;
  /**
   * Handed a promise for each batch when its first message is queued, settled once the batch is
   * delivered or failed and its callbacks ran, so that a serverless function that answers before
   * the batch is sent still delivers it: `(promise) => ctx.waitUntil(promise)` on Cloudflare
   * Workers, `waitUntil` from `@vercel/functions` on Vercel. Default: none.
   */
  readonly waitUntil?: (promise: Promise<void>) => void;
  /**
   * Keep accepted calls in files in `spool.dir` until they are delivered, so that a process that is
   * killed or crashes loses none: a later client on the same directory sends them (docs/spool.md).
   * `{ dir, maxBytes = 104857600, sync: 'none' | 'always' }`; Node.js only. Default: none (memory only).
   */
  readonly spool?: SpoolOptions;
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
  readonly waitUntil: ((promise: Promise<void>) => void) | undefined;
  readonly spool: ResolvedSpoolOptions | undefined;
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
  'waitUntil',
  'spool',
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

/** An option key set to something but unknown is a `ConfigError` naming it (a key set to undefined counts as not given). */
function checkKeys(options: Record<string, unknown>): void {
  for (const key of Object.keys(options)) {
    if (KNOWN_OPTIONS.has(key) || options[key] === undefined) continue;
    const hint = Object.hasOwn(HINTS, key) ? `; ${HINTS[key]}` : '';
    throw new ConfigError(`Unknown option ${showValue(key)}${hint}. Known options: ${[...KNOWN_OPTIONS].join(', ')}`, key.length <= 40 ? key : undefined);
  }
}

function checkTransport(value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'object' || value === null || typeof (value as { send?: unknown }).send !== 'function') {
    throw new ConfigError(`Expected \`transport\` to be an object with a send(request) method, got ${describeValue(value)}`, 'transport');
  }
}

function gzipOption(value: unknown): boolean {
  const gzip = booleanOption('gzip', value);
  if (gzip && typeof globalThis.CompressionStream !== 'function') {
    throw new ConfigError('Expected `gzip` to be false on this runtime: it has no CompressionStream (Vercel\'s Edge runtime lacks it), so bodies cannot be gzipped here', 'gzip');
  }
  return gzip;
}

function checkWaitUntil(value: unknown): ((promise: Promise<void>) => void) | undefined {
  if (value === undefined || typeof value === 'function') return value as ((promise: Promise<void>) => void) | undefined;
  throw new ConfigError(
    'Expected `waitUntil` to be a function that takes a promise, such as `(promise) => ctx.waitUntil(promise)` on Cloudflare Workers ' +
    `or \`waitUntil\` from @vercel/functions, got ${describeValue(value)}`,
    'waitUntil',
  );
}

function batchUrl(endpoint: unknown, path: unknown): URL {
  if (endpoint === undefined) {
    throw new ConfigError('Expected `endpoint` (or its alias `host`) to be the base URL of the ingestion API, e.g. "https://events.example.com", got nothing', 'endpoint');
  }
  const url = urlOption('endpoint', endpoint, { example: 'https://events.example.com' });
  if (path === undefined) {
    // An endpoint given with the API's own path (`.../v1`, or the whole `.../v1/batch`) is where
    // the batch API is: the default path is not added a second time.
    const base = url.pathname.replace(/\/+$/, '');
    if (/\/v1\/batch$/.test(base)) return new URL(url.origin + base);
    return new URL(url.origin + base.replace(/\/v1$/, '') + DEFAULTS.path);
  }
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new ConfigError(`Expected \`path\` to be a string starting with "/", got ${showValue(path)}`, 'path');
  }
  return new URL(url.origin + url.pathname.replace(/\/+$/, '') + path);
}

/** Validates the options once, filling defaults field by field (`{ flushAt: undefined }` keeps the default). */
export function resolveOptions(options: AnalyticsOptions): ResolvedOptions {
  checkKeys(objectOption('', options, 'an options object with at least `writeKey` and `endpoint`'));
  checkTransport(options.transport);
  const writeKey = secretOption('writeKey', options.writeKey, "the source's write key");
  if (options.endpoint !== undefined && options.host !== undefined && options.endpoint !== options.host) {
    throw new ConfigError('Got both `endpoint` and `host` with different values; `host` is an alias of `endpoint`, pass one', 'endpoint');
  }
  const minRetryDelay = durationOption('minRetryDelay', options.minRetryDelay ?? DEFAULTS.minRetryDelay, 0);
  return {
    writeKey,
    url: batchUrl(options.endpoint ?? options.host, options.path),
    flushAt: integerOption('flushAt', options.flushAt ?? DEFAULTS.flushAt, 1),
    flushInterval: durationOption('flushInterval', options.flushInterval ?? DEFAULTS.flushInterval, 1),
    maxRetries: integerOption('maxRetries', options.maxRetries ?? DEFAULTS.maxRetries, 0),
    minRetryDelay,
    maxRetryDelay: durationOption('maxRetryDelay', options.maxRetryDelay ?? DEFAULTS.maxRetryDelay, minRetryDelay),
    timeout: durationOption('timeout', options.timeout ?? DEFAULTS.timeout, 1),
    maxQueueSize: integerOption('maxQueueSize', options.maxQueueSize ?? DEFAULTS.maxQueueSize, 1),
    concurrency: integerOption('concurrency', options.concurrency ?? DEFAULTS.concurrency, 1, 256),
    gzip: gzipOption(options.gzip ?? DEFAULTS.gzip),
    disable: booleanOption('disable', options.disable ?? DEFAULTS.disable),
    waitUntil: checkWaitUntil(options.waitUntil),
    spool: resolveSpoolOptions(options.spool),
  };
}
