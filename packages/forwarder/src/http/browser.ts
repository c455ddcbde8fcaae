import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';

/**
 * What browsers need of the ingestion API (CORS), and what the forwarder reads of the request it
 * came in: the client's address and the forwarder's own public address. Written here rather than
 * taken from the `cors` package: which origin is allowed depends on the source, known only once
 * the write key is read (a preflight carries none), so such a package would only write the
 * headers below.
 */

/** How long a browser may keep a preflight's answer, in seconds (Chromium caps it at 7200). */
export const PREFLIGHT_MAX_AGE = 7200;

/**
 * Request headers a preflight is granted when it asks for none: the write key (`authorization`),
 * `content-type` (analytics.js sends `text/plain`), `content-encoding` (gzip bodies) and
 * `x-retry-count`, which analytics.js adds to its retries.
 */
export const ALLOWED_REQUEST_HEADERS = 'authorization, content-type, content-encoding, x-retry-count';

/** Longest `Access-Control-Request-Headers` a preflight is granted, in characters. */
export const MAX_REQUEST_HEADERS_LENGTH = 2048;

/** A header name: an RFC 9110 token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The headers a preflight from an allowed origin is granted: every one it asks for
 * (`Access-Control-Request-Headers`), lower-cased, so that a browser library that adds headers of
 * its own (RudderStack's `SentAt` and `AnonymousId`, retry counters) is not refused by the browser.
 * Safe because the preflight is only answered for allowed origins, the answer exposes nothing, and
 * the request that follows is checked as any other. A list that is not comma-separated header
 * names, or longer than `MAX_REQUEST_HEADERS_LENGTH`, is not echoed: the fixed list is granted.
 */
export function grantedHeaders(requested: string | string[] | undefined): string {
  const text = Array.isArray(requested) ? requested.join(',') : requested;
  if (text === undefined || text.length > MAX_REQUEST_HEADERS_LENGTH) return ALLOWED_REQUEST_HEADERS;
  const names = text.split(',').map((name) => name.trim().toLowerCase()).filter((name) => name !== '');
  if (names.length === 0 || !names.every((name) => HEADER_NAME.test(name))) return ALLOWED_REQUEST_HEADERS;
  return [...new Set([...ALLOWED_REQUEST_HEADERS.split(', '), ...names])].join(', ');
}

/** The headers of an answer to an allowed origin: it may read the answer, and `Retry-After` in it. */
export function corsHeaders(origin: string): Record<string, string> {
  return { 'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': 'Retry-After', Vary: 'Origin' };
}

/**
 * Whether a refusal may carry the CORS headers of `origin`: any origin a browser sends (a
 * refusal's body holds no secret, only why), unless it is too long or not printable ASCII to
 * echo in a header.
 */
export function echoable(origin: string): boolean {
  return origin.length <= 2048 && /^[\x21-\x7e]+$/.test(origin);
}

/** The headers of a preflight's answer to an allowed origin, granting the headers it asks for. */
export function preflightHeaders(origin: string, methods: string, requested?: string | string[]): Record<string, string> {
  return {
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Allow-Methods': methods,
    'Access-Control-Allow-Headers': grantedHeaders(requested),
    'Access-Control-Max-Age': String(PREFLIGHT_MAX_AGE),
    Vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
  };
}

/** The request's `Origin` header; undefined when it has none (a server-side client). */
export function requestOrigin(req: IncomingMessage): string | undefined {
  const origin = req.headers.origin;
  return typeof origin === 'string' ? origin : undefined;
}

/** An origin as an answer may show it: short ones whole, never thousands of characters. */
export function shownOrigin(origin: string): string {
  return origin.length <= 200 ? origin : `(an origin of ${origin.length} characters)`;
}

/** `::ffff:1.2.3.4` (an IPv4 client on a dual-stack socket) as `1.2.3.4`. */
function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/**
 * The client's IP address: the connection's, or with `trustProxy` proxies in front the entry of
 * `X-Forwarded-For` the outermost trusted proxy added (the `trustProxy`-th from the end). An entry
 * that is not an IP address is not believed: the connection's address is used.
 */
export function clientAddress(req: IncomingMessage, trustProxy: number): string | undefined {
  const socket = req.socket.remoteAddress;
  const fallback = socket === undefined ? undefined : plainAddress(socket);
  if (trustProxy === 0) return fallback;
  const header = req.headers['x-forwarded-for'];
  const text = Array.isArray(header) ? header.join(',') : header;
  if (text === undefined || text.length > 4096) return fallback;
  const entries = text.split(',').map((e) => e.trim()).filter((e) => e !== '');
  if (entries.length === 0) return fallback;
  const entry = entries[Math.max(0, entries.length - trustProxy)]!;
  return isIP(entry) === 0 ? fallback : plainAddress(entry);
}

/** A Host header the settings route may hand back: a host name or IP address, and a port. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * Where browsers and apps reach this forwarder, for the settings route: `apiHost` (host, port and
 * path, no scheme, as Segment's libraries take it) and `protocol`. From `http.publicUrl` when set;
 * else the request's Host (refused unless it is a plain host and port: it is handed back) and
 * `http`, or `X-Forwarded-Proto` from a trusted proxy. Undefined for a Host that is not plain.
 */
export function publicAddress(req: IncomingMessage, publicUrl: string | undefined, trustProxy: number): { apiHost: string; protocol: 'http' | 'https' } | undefined {
  if (publicUrl !== undefined) {
    const url = new URL(publicUrl);
    return { apiHost: `${url.host}${url.pathname.replace(/\/+$/, '')}/v1`, protocol: url.protocol === 'https:' ? 'https' : 'http' };
  }
  const host = req.headers.host;
  if (host === undefined || !HOST.test(host)) return undefined;
  const forwarded = trustProxy > 0 ? req.headers['x-forwarded-proto'] : undefined;
  const protos = typeof forwarded === 'string' ? forwarded.split(',').map((p) => p.trim().toLowerCase()) : [];
  const proto = protos.length === 0 ? undefined : protos[Math.max(0, protos.length - trustProxy)];
  return { apiHost: `${host.toLowerCase()}/v1`, protocol: proto === 'https' ? 'https' : 'http' };
}
