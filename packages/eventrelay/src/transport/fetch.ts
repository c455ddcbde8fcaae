import { ConfigError, TimeoutError } from '../errors';
import { integerOption } from '../internal/options';
import { describeValue } from '../internal/values';
import { errorCode, toNetworkError } from './network-errors';
import { DEFAULT_MAX_RESPONSE_BYTES } from './node';
import { urlTarget } from './target';
import type { UrlTarget } from './target';
import type { HttpRequest, HttpResponse, Transport } from './transport';

/** The shape of `fetch` the transport calls: the runtime's global one, or one you pass. */
export type FetchFunction = (url: string, init: RequestInit) => Promise<Response>;

export interface FetchTransportOptions {
  /** The `fetch` to send with. Default: the runtime's global `fetch`, looked up at each request. */
  readonly fetch?: FetchFunction;
  /** Bytes of an answer's body read at most (the client reads the ingestion answer). Default 64 KiB. */
  readonly maxResponseBytes?: number;
}

interface FetchTarget extends UrlTarget {
  /** The URL without its credentials: `fetch` refuses a URL with `user:password@`, they go as Basic auth. */
  readonly href: string;
}

/**
 * Sends with `fetch`: the client's default where the runtime has no `node:http` (Cloudflare
 * Workers, Vercel Edge), and usable anywhere (`transport: new FetchTransport()`). One POST per
 * request, redirects not followed, one deadline (an `AbortSignal`) for the exchange until the
 * status is in and, when the caller reads the answer, its body; certificates are checked by the
 * runtime's own `fetch`. Rejects only with a `NetworkError` or a `TimeoutError`.
 */
export class FetchTransport implements Transport {
  private readonly fetch: FetchFunction;
  private readonly maxResponseBytes: number;
  private readonly targets = new WeakMap<URL, FetchTarget>();

  constructor(options: FetchTransportOptions = {}) {
    if (options.fetch !== undefined && typeof options.fetch !== 'function') {
      throw new ConfigError(`Expected \`fetch\` to be a function like the global fetch, got ${describeValue(options.fetch)}`, 'fetch');
    }
    // Called as a plain function: Workers refuse a `fetch` called on another object ("Illegal invocation").
    this.fetch = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
    this.maxResponseBytes = integerOption('maxResponseBytes', options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, 0);
  }

  async send(request: HttpRequest): Promise<HttpResponse> {
    const target = this.targetFor(request.url);
    const controller = new AbortController();
    let timedOut = false;
    const deadline = setTimeout(() => {
      timedOut = true;
      controller.abort(new TimeoutError(request.timeout));
    }, request.timeout);
    try {
      let response: Response;
      try {
        response = await this.fetch(target.href, {
          method: 'POST',
          headers: withAuthorization(request.headers, target.authorization),
          body: request.body as RequestInit['body'],
          redirect: 'manual',
          signal: controller.signal,
        });
      } catch (error) {
        if (timedOut) throw new TimeoutError(request.timeout, { cause: error });
        throw toNetworkError(withoutUrl(codedCause(error), request.url.href, target), target.display);
      }
      const retryAfter = response.headers.get('retry-after') ?? undefined;
      const answer: HttpResponse = retryAfter === undefined ? { status: response.status } : { status: response.status, retryAfter };
      if (request.readBody !== true) {
        // Nothing to read: let the connection go back to the pool.
        response.body?.cancel().catch(() => {});
        return answer;
      }
      // The status line came in time: if the body does not, the answer is the status alone.
      const body = await readText(response, this.maxResponseBytes);
      return body === undefined ? answer : { ...answer, body };
    } finally {
      clearTimeout(deadline);
    }
  }

  private targetFor(url: URL): FetchTarget {
    let target = this.targets.get(url);
    if (target === undefined) {
      const bare = new URL(url.href);
      bare.username = '';
      bare.password = '';
      target = { ...urlTarget(url), href: bare.href };
      this.targets.set(url, target);
    }
    return target;
  }
}

/** The request's headers plus the Basic auth of the URL's credentials, unless a header sets Authorization. */
function withAuthorization(headers: Readonly<Record<string, string>>, authorization: string | undefined): Record<string, string> {
  if (authorization === undefined || Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')) return { ...headers };
  return { ...headers, authorization };
}

/**
 * Reads the body as UTF-8 text, at most `limit` bytes (the rest is cancelled). Undefined when
 * the body failed or was cut by the deadline: the status alone is the answer then.
 */
async function readText(response: Response, limit: number): Promise<string | undefined> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let received = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text + decoder.decode();
      received += value.byteLength;
      if (received > limit) {
        reader.cancel().catch(() => {});
        return text + decoder.decode(value.subarray(0, value.byteLength - (received - limit)));
      }
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return undefined;
  }
}

/**
 * The error that says what went wrong: Node's fetch rejects with `TypeError: fetch failed` and
 * the socket's error (`ECONNREFUSED`, a certificate code) as its `cause`.
 */
function codedCause(error: unknown): unknown {
  const cause = (error as { cause?: unknown } | null)?.cause;
  return errorCode(error) === undefined && errorCode(cause) !== undefined ? cause : error;
}

/** Some runtimes name the whole URL in their message; errors show its redacted form only. */
function withoutUrl(error: unknown, href: string, target: FetchTarget): unknown {
  if (!(error instanceof Error) || (!error.message.includes(href) && !error.message.includes(target.href))) return error;
  const message = error.message.split(href).join(target.display).split(target.href).join(target.display);
  return Object.assign(new Error(message, { cause: error }), errorCode(error) === undefined ? {} : { code: errorCode(error) });
}
