/**
 * The rules for a webhook's static headers, shared by `WebhookDestination` and the forwarder's
 * config file, so that `eventrelay check` refuses exactly what `eventrelay serve` refuses.
 */
import { ConfigError } from '../errors';
import { describeType, describeValue, isPlainObject } from './values';

/** RFC 9110 token: the characters a header name may have. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Visible ASCII, space and tab: no CR, LF, NUL or non-ASCII (which Node would send as latin1). */
export const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/**
 * Headers a static header may not set, lowercase: those the destination owns (spec 4.1 and 5.1, trace context),
 * `Host` (it comes from the URL; a second one would be sent beside it), and the framing headers
 * that would corrupt the request.
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'content-type',
  'user-agent',
  'x-signature',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  // W3C Trace Context: with tracing on, each request carries its attempt span's.
  'traceparent',
  'tracestate',
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
]);

/**
 * Checks a `{ name: value }` object of static headers and returns a copy. Refuses a name that is
 * not an RFC 9110 token, a reserved header, one name twice in different case, and a value with
 * CR, LF, NUL or non-ASCII. Messages name the header, never its value (it may be a credential).
 */
export function staticHeaders(field: string, headers: unknown): Record<string, string> {
  if (headers === undefined || headers === null) return {};
  if (!isPlainObject(headers)) {
    throw new ConfigError(`Expected \`${field}\` to be an object of header names to string values, got ${describeValue(headers)}`, field);
  }
  const seen = new Set<string>();
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    // JSON.stringify escapes CR/LF, so a bad name cannot forge a log line.
    const shown = JSON.stringify(name);
    const where = `${field}[${shown}]`;
    if (!HEADER_NAME.test(name)) {
      throw new ConfigError(`Expected \`${where}\` to have a valid HTTP header name (letters, digits, !#$%&'*+-.^_\`|~), got ${shown}`, where);
    }
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) {
      throw new ConfigError(
        `The static header ${shown} in \`${field}\` is not allowed: Content-Type, User-Agent, X-Signature, webhook-*, traceparent and tracestate are set by the destination, ` +
        'Host comes from the URL, and framing headers from HTTP',
        where,
      );
    }
    if (seen.has(lower)) {
      throw new ConfigError(`The static header ${shown} appears twice in \`${field}\` (header names ignore case)`, where);
    }
    seen.add(lower);
    if (typeof value !== 'string' || !HEADER_VALUE.test(value)) {
      const came = typeof value === 'string' ? 'a string with other characters' : describeType(value);
      throw new ConfigError(
        `Expected the value of header ${shown} in \`${field}\` to be a string of printable ASCII without CR or LF, got ${came} (value not shown: it may be a credential)`,
        where,
      );
    }
    result[name] = value;
  }
  return result;
}
