import { ConfigError } from '../../errors';
import type { AnalyticsOptions } from '../../client/options';
import { defaultTransport } from '../../transport/default';
import type { Transport } from '../../transport/transport';
import { warnAboutOptions, type OptionCatalog } from '../warnings';
import { HttpClientTransport } from './http-client';
import type { AnalyticsSettings } from './types';

/** Segment's own defaults (`@segment/analytics-node` 3.x), kept so that moving over changes nothing. */
export const SEGMENT_DEFAULTS = {
  host: 'https://api.segment.io',
  path: '/v1/batch',
  flushAt: 15,
  flushInterval: 10_000,
  maxRetries: 10,
  httpRequestTimeout: 10_000,
} as const;

const CATALOG: OptionCatalog = {
  layer: 'eventrelay/segment',
  known: new Set([
    'writeKey',
    'host',
    'path',
    'maxRetries',
    'flushAt',
    'maxEventsInBatch',
    'flushInterval',
    'httpRequestTimeout',
    'disable',
    'httpClient',
    'transport',
    'maxQueueSize',
    'concurrency',
    'minRetryDelay',
    'maxRetryDelay',
    'spool',
  ]),
  unsupported: {
    oauthSettings: 'requests authenticate with the write key (HTTP Basic), as eventrelay forwarders expect',
    maxTotalBackoffDuration: "retries end after `maxRetries` attempts with eventrelay's backoff (capped by `maxRetryDelay`)",
    maxRateLimitDuration: "a 429's Retry-After is honoured per retry, within `maxRetries`",
  },
};

export interface ResolvedSettings {
  readonly options: AnalyticsOptions;
  /** The default `closeAndFlush` timeout: Segment's 1.25 × max(60 s, flushInterval). */
  readonly closeTimeout: number;
}

/** Segment's batch URL: `path` resolved against `host`, trailing slash removed. */
function batchUrl(host: unknown, path: unknown): URL {
  if (typeof host !== 'string' || typeof path !== 'string') {
    throw new ConfigError('Expected `host` and `path` to be strings, e.g. host "https://events.example.com" and path "/v1/batch"', 'host');
  }
  try {
    return new URL(path.replace(/\/$/, ''), host);
  } catch {
    throw new ConfigError('Expected `host` to be an absolute http or https URL, e.g. "https://events.example.com", got a string that is not a URL', 'host');
  }
}

/** Maps Segment's settings onto eventrelay's client options; warns once about the ones it cannot honour. */
export function resolveSettings(settings: AnalyticsSettings, wrap: (transport: Transport) => Transport): ResolvedSettings {
  if (typeof settings !== 'object' || settings === null) {
    throw new ConfigError('Expected a settings object with at least `writeKey`, e.g. new Analytics({ writeKey, host })', 'writeKey');
  }
  if (!settings.writeKey) throw new ConfigError('writeKey is missing: pass the source\'s write key as `writeKey`', 'writeKey');
  warnAboutOptions(settings, CATALOG);
  const url = batchUrl(settings.host ?? SEGMENT_DEFAULTS.host, settings.path ?? SEGMENT_DEFAULTS.path);
  const flushAt = settings.flushAt ?? settings.maxEventsInBatch ?? SEGMENT_DEFAULTS.flushAt;
  const flushInterval = settings.flushInterval ?? SEGMENT_DEFAULTS.flushInterval;
  // Without either, the transport eventrelay's client picks on this runtime: node:http on Node, Bun and Deno, fetch on Workers and Vercel Edge.
  const base = settings.httpClient !== undefined ? new HttpClientTransport(settings.httpClient) : (settings.transport ?? defaultTransport());
  return {
    options: {
      writeKey: settings.writeKey,
      endpoint: url.origin,
      path: url.pathname,
      // Segment keeps a batch at least one message long; anything else is eventrelay's ConfigError.
      flushAt: typeof flushAt === 'number' ? Math.max(flushAt, 1) : flushAt,
      flushInterval,
      maxRetries: settings.maxRetries ?? SEGMENT_DEFAULTS.maxRetries,
      timeout: settings.httpRequestTimeout ?? SEGMENT_DEFAULTS.httpRequestTimeout,
      disable: settings.disable ?? false,
      maxQueueSize: settings.maxQueueSize,
      concurrency: settings.concurrency,
      minRetryDelay: settings.minRetryDelay,
      maxRetryDelay: settings.maxRetryDelay,
      spool: settings.spool,
      transport: wrap(base),
    },
    closeTimeout: typeof flushInterval === 'number' ? Math.max(60_000, flushInterval) * 1.25 : 75_000,
  };
}
