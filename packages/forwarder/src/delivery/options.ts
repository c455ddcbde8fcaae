import { ConfigError } from 'eventrelay/internal';
import { staticHeaders } from 'eventrelay/internal';
import { durationOption, enumOption, integerOption, objectOption, secretOption, urlOption } from 'eventrelay/internal';
import { describeType, describeValue } from 'eventrelay/internal';
import { redactUrl } from 'eventrelay/internal';
import type { Transport } from 'eventrelay/internal';
import { rateLimitOption } from './rate-limit';
import type { RateLimit } from '../store/contract';
import type { PreviousSecret, SigningScheme } from '../store/contract';
import { NetworkPolicy } from './network-policy';
import { refuseControlCharacters } from './url-text';
import { compileFilter, parseFilter } from '../schema-rules';
import type { UrlFilter } from '../schema-rules';
import type { WebhookBatch, WebhookFilter, WebhookTransform } from '../store/contract';
import { transformOption } from '../transform/options';
import { BATCH_DEFAULTS, BATCH_SETTING_RANGES } from '../batch-body';
import type { BatchSettings } from '../batch-body';

/** One configured webhook (spec 2.1). */
export interface WebhookEntry {
  /** Full http or https URL. `user:password@` in it is sent as Basic auth and never logged. */
  readonly url: string;
  /** Static headers added to every request to this URL (not Content-Type, User-Agent, X-Signature, Host or framing headers). */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Requests a second to this URL at most (`perSecond` from 0.01 to 100 000); a message waits for its turn, which
   * is not an attempt. Default: no limit.
   */
  readonly rateLimit?: RateLimit;
  /**
   * Which messages this URL gets: `types` (`track`, ..., `delete`) and `events` (track event
   * names; other types are not narrowed by it). A message no URL's filter takes fails at once
   * (`deliver()`), never sent. Default: every message.
   */
  readonly filter?: WebhookFilter;
  /**
   * Reshapes the body this URL gets: `code` defines `function transform(message)`, which returns
   * the body to send (signed over the bytes sent) or null to skip the URL for that call; a throw, a
   * timeout (`timeoutMs`, 1 to 1000, default 100) or running out of memory fails the URL for that
   * call, final. Runs in a sandbox (docs/transformations.md). Default: the message as it is.
   */
  readonly transform?: WebhookTransform;
  /**
   * This URL's calls to go together, as one POST whose body is a JSON array of the messages it
   * would have got one by one: at most `maxEvents` (1 to 4000) and `maxBytes` (1024 to 1 MB,
   * default 524288) in one body, sent `maxWaitMs` (0 to 60 000, default 1000) after its first call
   * at the latest. Checked and resolved here (`ResolvedWebhook.batch`); the batching itself is the
   * forwarder's delivery loop's, not `deliver()`'s. Default: one call a request.
   */
  readonly batch?: WebhookBatch;
}

export interface WebhookDestinationOptions {
  /** 1 to 5 webhooks (spec 8); every message goes to all of them at once. */
  readonly webhooks: readonly WebhookEntry[];
  /**
   * When set (non-empty), each request is signed as `signing` says. An array while rotating: the
   * first is the current secret (the only one `X-Signature` uses); Standard Webhooks sends one
   * signature per secret. A `whsec_` secret is base64 after the prefix for Standard Webhooks.
   * Default: none (unsigned).
   */
  readonly sharedSecret?: string | readonly string[];
  /**
   * Secrets replaced by a rotation, each still signed with until `until` (epoch ms): Standard
   * Webhooks sends a signature for each besides the current ones, so that a receiver that only has
   * an old secret keeps accepting during the grace. `X-Signature` holds one value: it is always
   * made with the current secret. Default none.
   */
  readonly previousSecrets?: readonly PreviousSecret[];
  /**
   * `x-signature` (the spec's hex HMAC-SHA1 of the body, default), `standard-webhooks`
   * (`webhook-id`, `webhook-timestamp`, `webhook-signature`) or `both`. Needs `sharedSecret`
   * unless `x-signature`.
   */
  readonly signing?: SigningScheme;
  /** Time a receiver has to answer with a status, in milliseconds. Default 5000 (spec 8). */
  readonly timeout?: number;
  /**
   * Whether the first 2,048 bytes of a 2xx answer are read for the attempt's outcome too (a failed
   * answer's always are). Default true; the forwarder turns it off when its delivery log keeps no
   * delivered body (`storage.keepDelivered` 0), as the answer would be erased with it: a 2xx is then
   * taken at its status line.
   */
  readonly keepSuccessAnswers?: boolean;
  /** How long after the first attempt retries may happen, in milliseconds. Default 4 h (spec 8). */
  readonly retryWindow?: number;
  /** Base delay of the first retry, in milliseconds; grows x2 per attempt with jitter. Default 1000. */
  readonly minRetryDelay?: number;
  /** Largest delay between two attempts, in milliseconds. Default 600 000 (10 min). */
  readonly maxRetryDelay?: number;
  /** Attempts in flight at once; each attempt sends to every URL. Default 32. */
  readonly concurrency?: number;
  /** The HTTP layer. Default: an `UndiciTransport` (undici's HTTP/1.1 client, keep-alive). */
  readonly transport?: Transport;
  /**
   * Extra CA certificates (PEM) the default transport trusts on top of Node's roots, for a
   * private CA. It never disables verification, and a self-signed leaf stays refused.
   */
  readonly ca?: string | Buffer | readonly (string | Buffer)[];
  /**
   * CIDR blocks (`10.0.0.0/8`) the URLs may not reach, on top of the built-in ones (link-local,
   * cloud metadata, unspecified, multicast, broadcast). Checked on each resolved address when
   * connecting, and on literal addresses at construction. Default none.
   */
  readonly denyNetworks?: readonly string[];
  /** When set, the only CIDR blocks the URLs may reach (the denied ones stay refused). Default: any. */
  readonly allowNetworks?: readonly string[];
}

export const SIGNING_SCHEMES: readonly SigningScheme[] = ['x-signature', 'standard-webhooks', 'both'];

export const DESTINATION_DEFAULTS = {
  timeout: 5000,
  retryWindow: 4 * 60 * 60 * 1000,
  minRetryDelay: 1000,
  maxRetryDelay: 10 * 60 * 1000,
  concurrency: 32,
} as const;

/** The spec's limit of URLs per destination. */
export const MAX_WEBHOOKS = 5;

export const USER_AGENT = 'EventRelay-Webhooks/1.0';

export interface ResolvedWebhook {
  readonly index: number;
  readonly url: URL;
  /** The URL for logs, errors and results: no credentials, no query. */
  readonly display: string;
  /** Content-Type, User-Agent and the static headers; per body the sender adds length and signature. */
  readonly headers: Readonly<Record<string, string>>;
  /** Requests a second, when the entry has a `rateLimit`. */
  readonly perSecond: number | undefined;
  /** Which messages it gets, when the entry has a `filter`. */
  readonly filter: UrlFilter | undefined;
  /** Its transformation, checked (not compiled: the destination compiles it once). */
  readonly transform: WebhookTransform | undefined;
  /** How its calls go together, defaults filled, when the entry has a `batch`. */
  readonly batch: BatchSettings | undefined;
}

export interface ResolvedDestinationOptions {
  readonly webhooks: readonly ResolvedWebhook[];
  /** The secrets, current first; empty when requests go unsigned. */
  readonly secrets: readonly string[];
  /** Secrets still signed with (Standard Webhooks) until their `until`. */
  readonly previousSecrets: readonly PreviousSecret[];
  readonly signing: SigningScheme;
  readonly timeout: number;
  readonly keepSuccessAnswers: boolean;
  readonly retryWindow: number;
  readonly minRetryDelay: number;
  readonly maxRetryDelay: number;
  readonly concurrency: number;
  readonly networkPolicy: NetworkPolicy;
}

/**
 * Validates once, at construction. Messages name the field and what was expected; they never
 * repeat the secret, a header value or a URL that failed to parse (any may hold credentials).
 */
export function resolveDestinationOptions(options: WebhookDestinationOptions): ResolvedDestinationOptions {
  objectOption('', options, 'an object with at least `webhooks`');
  const list: unknown = options.webhooks;
  if (!Array.isArray(list) || list.length === 0) {
    throw new ConfigError(
      `Expected \`webhooks\` to be a list of 1 to ${MAX_WEBHOOKS} { url, headers } entries, got ${Array.isArray(list) ? 'an empty list' : describeValue(list)}`,
      'webhooks',
    );
  }
  if (list.length > MAX_WEBHOOKS) {
    throw new ConfigError(`Expected at most ${MAX_WEBHOOKS} webhooks per destination (spec limit), got ${list.length}`, 'webhooks');
  }

  const secrets = resolveSecrets(options.sharedSecret);
  const signing = enumOption('signing', options.signing ?? 'x-signature', SIGNING_SCHEMES);
  if (signing !== 'x-signature' && secrets.length === 0) {
    throw new ConfigError(`\`signing: "${signing}"\` needs a \`sharedSecret\` to sign with; set one, or use "x-signature" to send unsigned`, 'sharedSecret');
  }

  const defaults = DESTINATION_DEFAULTS;
  const minRetryDelay = durationOption('minRetryDelay', options.minRetryDelay ?? defaults.minRetryDelay, 1);
  const networkPolicy = new NetworkPolicy({ denyNetworks: options.denyNetworks, allowNetworks: options.allowNetworks });
  return {
    webhooks: list.map((entry: unknown, index) => resolveWebhook(entry, index, undefined, networkPolicy)),
    secrets,
    previousSecrets: resolvePreviousSecrets(options.previousSecrets),
    signing,
    timeout: durationOption('timeout', options.timeout ?? defaults.timeout, 1),
    keepSuccessAnswers: options.keepSuccessAnswers !== false,
    retryWindow: durationOption('retryWindow', options.retryWindow ?? defaults.retryWindow, 0, Number.MAX_SAFE_INTEGER),
    minRetryDelay,
    maxRetryDelay: durationOption('maxRetryDelay', options.maxRetryDelay ?? defaults.maxRetryDelay, minRetryDelay),
    concurrency: integerOption('concurrency', options.concurrency ?? defaults.concurrency, 1),
    networkPolicy,
  };
}

/** One secret or a rotation list, current first; `''` (and an unset variable) means unsigned. */
function resolveSecrets(secret: unknown): string[] {
  if (secret === undefined || secret === '') return [];
  if (typeof secret === 'string') return [secret];
  if (!Array.isArray(secret) || secret.length === 0) {
    throw new ConfigError(
      `Expected \`sharedSecret\` to be a string, or a non-empty list of strings while rotating (current first), got ${describeType(secret)}`,
      'sharedSecret',
    );
  }
  secret.forEach((item: unknown, i) => secretOption(`sharedSecret[${i}]`, item, 'a shared secret'));
  return secret as string[];
}

/** `previousSecrets`: a list of `{ secret, until }`; messages never show a secret. */
function resolvePreviousSecrets(value: unknown): PreviousSecret[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ConfigError(`Expected \`previousSecrets\` to be a list of { secret, until }, got ${describeType(value)}`, 'previousSecrets');
  return value.map((item: unknown, i) => {
    const field = `previousSecrets[${i}]`;
    const { secret, until } = objectOption(field, item, 'an object { secret, until }');
    secretOption(`${field}.secret`, secret, 'a shared secret replaced by a rotation');
    if (typeof until !== 'number' || !Number.isFinite(until)) {
      throw new ConfigError(`Expected \`${field}.until\` to be a time in epoch milliseconds, got ${describeValue(until)}`, `${field}.until`);
    }
    return { secret: secret as string, until };
  });
}

/** One `webhooks` entry: its URL (http or https, with a host, allowed by `policy` when given) and static headers. */
export function resolveWebhook(entry: unknown, index: number, field = `webhooks[${index}]`, policy?: NetworkPolicy): ResolvedWebhook {
  const { url: raw, headers, rateLimit, filter, transform, batch } = objectOption(field, entry, 'an object { url, headers }');
  const url = urlOption(`${field}.url`, refuseControlCharacters(`${field}.url`, raw));
  policy?.checkUrl(url, `${field}.url`);
  return {
    index,
    url,
    display: redactUrl(url),
    headers: { 'Content-Type': 'application/json', 'User-Agent': USER_AGENT, ...staticHeaders(`${field}.headers`, headers) },
    perSecond: rateLimit === undefined ? undefined : rateLimitOption(`${field}.rateLimit`, rateLimit).perSecond,
    filter: filter === undefined ? undefined : compileFilter(parseFilter(filter, `${field}.filter`)),
    transform: transform === undefined ? undefined : transformOption(transform, `${field}.transform`),
    batch: batch === undefined ? undefined : batchOption(`${field}.batch`, batch),
  };
}

/**
 * Checks a `batch` object and fills its defaults; `field` is its path (`webhooks[1].batch`). A
 * problem is a ConfigError naming the field (`webhooks[1].batch.maxEvents`) and its range; a
 * field left out takes its default, a null is refused.
 */
export function batchOption(field: string, value: unknown): BatchSettings {
  const raw = objectOption(field, value, 'an object { "maxEvents": number, "maxBytes"?: number, "maxWaitMs"?: number }');
  for (const key of Object.keys(raw)) {
    if (!Object.hasOwn(BATCH_SETTING_RANGES, key)) throw new ConfigError(`Unknown field \`${field}.${key}\`; expected \`maxEvents\`, \`maxBytes\` or \`maxWaitMs\``, `${field}.${key}`);
  }
  const { maxEvents, maxBytes, maxWaitMs } = BATCH_SETTING_RANGES;
  return {
    maxEvents: integerOption(`${field}.maxEvents`, raw.maxEvents, maxEvents[0], maxEvents[1]),
    maxBytes: integerOption(`${field}.maxBytes`, raw.maxBytes === undefined ? BATCH_DEFAULTS.maxBytes : raw.maxBytes, maxBytes[0], maxBytes[1]),
    maxWaitMs: durationOption(`${field}.maxWaitMs`, raw.maxWaitMs === undefined ? BATCH_DEFAULTS.maxWaitMs : raw.maxWaitMs, maxWaitMs[0], maxWaitMs[1]),
  };
}
