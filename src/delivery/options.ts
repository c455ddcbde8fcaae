import { ConfigError } from '../errors';
import { redactUrl } from '../transport/redact';
import type { Transport } from '../transport/transport';
import { showValue } from '../internal/values';

/** One configured webhook (spec 2.1). */
export interface WebhookEntry {
  /** Full http or https URL. `user:password@` in it is sent as Basic auth and never logged. */
  readonly url: string;
  /** Static headers added to every request to this URL (not Content-Type, User-Agent or X-Signature). */
  readonly headers?: Readonly<Record<string, string>>;
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
   * `x-signature` (the spec's hex HMAC-SHA1 of the body, default), `standard-webhooks`
   * (`webhook-id`, `webhook-timestamp`, `webhook-signature`) or `both`. Needs `sharedSecret`
   * unless `x-signature`.
   */
  readonly signing?: SigningScheme;
  /** Time a receiver has to answer with a status, in milliseconds. Default 5000 (spec 8). */
  readonly timeout?: number;
  /** How long after the first attempt retries may happen, in milliseconds. Default 4 h (spec 8). */
  readonly retryWindow?: number;
  /** Base delay of the first retry, in milliseconds; grows x2 per attempt with jitter. Default 1000. */
  readonly minRetryDelay?: number;
  /** Largest delay between two attempts, in milliseconds. Default 600 000 (10 min). */
  readonly maxRetryDelay?: number;
  /** Attempts in flight at once; each attempt sends to every URL. Default 32. */
  readonly concurrency?: number;
  /** The HTTP layer. Default: a `NodeTransport` (node:http/https keep-alive). */
  readonly transport?: Transport;
  /**
   * Extra CA certificates (PEM) the default transport trusts on top of Node's roots, for a
   * private CA. It never disables verification, and a self-signed leaf stays refused.
   */
  readonly ca?: string | Buffer | readonly (string | Buffer)[];
}

/** How a destination signs its requests. */
export type SigningScheme = 'x-signature' | 'standard-webhooks' | 'both';

const SIGNING_SCHEMES: readonly SigningScheme[] = ['x-signature', 'standard-webhooks', 'both'];

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

/** Headers the destination owns (spec 4.1 and 5.1) or that would corrupt the request framing. */
const RESERVED_HEADERS = new Set([
  'content-type',
  'user-agent',
  'x-signature',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
]);

/** RFC 9110 token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Visible ASCII, space and tab: no CR, LF, NUL or non-ASCII (which Node would send as latin1). */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/** Largest delay Node timers accept. */
const MAX_TIMER = 2 ** 31 - 1;

export interface ResolvedWebhook {
  readonly index: number;
  readonly url: URL;
  /** The URL for logs, errors and results: no credentials, no query. */
  readonly display: string;
  /** Content-Type, User-Agent and the static headers; per body the sender adds length and signature. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface ResolvedDestinationOptions {
  readonly webhooks: readonly ResolvedWebhook[];
  /** The secrets, current first; empty when requests go unsigned. */
  readonly secrets: readonly string[];
  readonly signing: SigningScheme;
  readonly timeout: number;
  readonly retryWindow: number;
  readonly minRetryDelay: number;
  readonly maxRetryDelay: number;
  readonly concurrency: number;
}

/**
 * Validates once, at construction. Messages name the field and what was expected; they never
 * repeat the secret, a header value or a URL that failed to parse (any may hold credentials).
 */
export function resolveDestinationOptions(options: WebhookDestinationOptions): ResolvedDestinationOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError(`Expected WebhookDestination options to be an object, got ${kind(options)}`);
  }
  const list: unknown = options.webhooks;
  if (!Array.isArray(list) || list.length === 0) {
    throw new ConfigError(
      `Expected \`webhooks\` to be a list of 1 to ${MAX_WEBHOOKS} { url, headers } entries, got ${Array.isArray(list) ? 'an empty list' : kind(list)}`,
      'webhooks',
    );
  }
  if (list.length > MAX_WEBHOOKS) {
    throw new ConfigError(`Expected at most ${MAX_WEBHOOKS} webhooks per destination (spec limit), got ${list.length}`, 'webhooks');
  }

  const secrets = resolveSecrets(options.sharedSecret);
  const signing: unknown = options.signing ?? 'x-signature';
  if (!SIGNING_SCHEMES.includes(signing as SigningScheme)) {
    throw new ConfigError(
      `Expected \`signing\` to be one of ${SIGNING_SCHEMES.map((s) => `"${s}"`).join(', ')}, got ${showValue(signing)}`,
      'signing',
    );
  }
  if (signing !== 'x-signature' && secrets.length === 0) {
    throw new ConfigError(`\`signing: "${signing}"\` needs a \`sharedSecret\` to sign with; set one, or use "x-signature" to send unsigned`, 'sharedSecret');
  }

  const minRetryDelay = positive(options.minRetryDelay ?? DESTINATION_DEFAULTS.minRetryDelay, 'minRetryDelay');
  const maxRetryDelay = positive(options.maxRetryDelay ?? DESTINATION_DEFAULTS.maxRetryDelay, 'maxRetryDelay');
  if (maxRetryDelay < minRetryDelay) {
    throw new ConfigError(`Expected \`maxRetryDelay\` (${maxRetryDelay} ms) to be >= \`minRetryDelay\` (${minRetryDelay} ms)`, 'maxRetryDelay');
  }
  const retryWindow = options.retryWindow ?? DESTINATION_DEFAULTS.retryWindow;
  if (typeof retryWindow !== 'number' || !Number.isFinite(retryWindow) || retryWindow < 0) {
    throw new ConfigError(`Expected \`retryWindow\` to be a number of ms >= 0, got ${kind(retryWindow)}`, 'retryWindow');
  }
  const concurrency = options.concurrency ?? DESTINATION_DEFAULTS.concurrency;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new ConfigError(`Expected \`concurrency\` to be an integer >= 1, got ${kind(concurrency)}`, 'concurrency');
  }

  return {
    webhooks: list.map((entry: unknown, index) => resolveWebhook(entry, index)),
    secrets,
    signing: signing as SigningScheme,
    timeout: positive(options.timeout ?? DESTINATION_DEFAULTS.timeout, 'timeout'),
    retryWindow,
    minRetryDelay,
    maxRetryDelay,
    concurrency,
  };
}

/** One secret or a rotation list, current first; `''` (and an unset variable) means unsigned. */
function resolveSecrets(secret: unknown): string[] {
  if (secret === undefined || secret === '') return [];
  if (typeof secret === 'string') return [secret];
  if (!Array.isArray(secret) || secret.length === 0) {
    throw new ConfigError(
      `Expected \`sharedSecret\` to be a string, or a non-empty list of strings while rotating (current first), got ${kind(secret)}`,
      'sharedSecret',
    );
  }
  secret.forEach((item: unknown, i) => {
    if (typeof item !== 'string' || item === '') {
      throw new ConfigError(`Expected \`sharedSecret[${i}]\` to be a non-empty string, got ${kind(item)}`, `sharedSecret[${i}]`);
    }
  });
  return secret as string[];
}

function resolveWebhook(entry: unknown, index: number): ResolvedWebhook {
  const field = `webhooks[${index}]`;
  if (typeof entry !== 'object' || entry === null) {
    throw new ConfigError(`Expected \`${field}\` to be an object { url, headers }, got ${kind(entry)}`, field);
  }
  const { url: raw, headers } = entry as { url?: unknown; headers?: unknown };
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw new ConfigError(`Expected \`${field}.url\` to be a full http or https URL, got ${kind(raw)}`, `${field}.url`);
  }
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ConfigError(
      `Expected \`${field}.url\` to be a full URL with http:// or https://, got a malformed URL of ${raw.length} characters (not shown: it may hold credentials)`,
      `${field}.url`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`Expected \`${field}.url\` to use http or https, got \`${url.protocol.slice(0, -1)}\``, `${field}.url`);
  }
  if (url.hostname === '') {
    throw new ConfigError(`Expected \`${field}.url\` to name a host, got none`, `${field}.url`);
  }
  return {
    index,
    url,
    display: redactUrl(url),
    headers: { 'Content-Type': 'application/json', 'User-Agent': USER_AGENT, ...staticHeaders(headers, field) },
  };
}

function staticHeaders(headers: unknown, field: string): Record<string, string> {
  if (headers === undefined || headers === null) return {};
  if (typeof headers !== 'object' || Array.isArray(headers)) {
    throw new ConfigError(`Expected \`${field}.headers\` to be an object of name: value strings, got ${kind(headers)}`, `${field}.headers`);
  }
  const seen = new Set<string>();
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    // JSON.stringify escapes CR/LF, so a bad name cannot forge a log line.
    const shown = JSON.stringify(name);
    const where = `${field}.headers[${shown}]`;
    if (!HEADER_NAME.test(name)) {
      throw new ConfigError(`Expected \`${where}\` to have a valid HTTP header name (letters, digits, !#$%&'*+-.^_\`|~), got ${shown}`, where);
    }
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) {
      throw new ConfigError(
        `The static header ${shown} in \`${field}.headers\` is not allowed: Content-Type, User-Agent, X-Signature and the webhook-* ` +
          'signature headers are set by the destination, and framing headers by HTTP',
        where,
      );
    }
    if (seen.has(lower)) {
      throw new ConfigError(`The static header ${shown} appears twice in \`${field}.headers\` (header names ignore case)`, where);
    }
    seen.add(lower);
    if (typeof value !== 'string' || !HEADER_VALUE.test(value)) {
      throw new ConfigError(
        `Expected the value of header ${shown} in \`${field}.headers\` to be a string of printable ASCII without CR or LF, got ${typeof value === 'string' ? 'a string with other characters' : kind(value)} (value not shown: it may be a credential)`,
        where,
      );
    }
    result[name] = value;
  }
  return result;
}

function positive(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_TIMER) {
    throw new ConfigError(`Expected \`${field}\` to be a number of ms > 0 and <= ${MAX_TIMER}, got ${kind(value)}`, field);
  }
  return value;
}

/** The value for numbers, the type for everything else (strings may be secrets). */
function kind(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return `\`${value}\` (${typeof value})`;
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return value.trim() === '' ? 'an empty string' : 'a string';
  return typeof value === 'object' ? 'an object' : typeof value;
}
