import createDebug from 'debug';
import { TimeoutError } from '../../errors';
import { statusText } from '../../transport/status-text';
import type { HttpRequest, HttpResponse, Transport } from '../../transport/transport';

const log = createDebug('analytics');

/** Segment's fetch-compatible function type. */
export type HTTPFetchFn = (url: string, requestInit: HTTPFetchRequest) => Promise<HTTPResponse>;

export interface HTTPFetchRequest {
  headers: Record<string, string>;
  body: string;
  method: 'POST';
  signal: AbortSignal;
}

export interface HTTPHeaders {
  get: (key: string) => string | null;
  has: (key: string) => boolean;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  entries: () => IterableIterator<[string, any]>;
}

/** The answer an HTTP client gives: a fetch `Response` fits. */
export interface HTTPResponse {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  headers?: Record<string, any> | HTTPHeaders;
  text?: () => Promise<string>;
  status: number;
  statusText: string;
}

/** One batch request, as Segment's `HTTPClient.makeRequest` receives it. */
export interface HTTPClientRequest {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  /** Milliseconds the client should wait for an answer. */
  httpRequestTimeout: number;
}

/** Segment's injectable HTTP client. */
export interface HTTPClient {
  makeRequest(options: HTTPClientRequest): Promise<HTTPResponse>;
}

/** Segment's fetch-based client: calls `fetchFn` (default: the global fetch) with an abort signal for the timeout. */
export class FetchHTTPClient implements HTTPClient {
  private readonly fetchFn: HTTPFetchFn;

  constructor(fetchFn?: HTTPFetchFn) {
    this.fetchFn = fetchFn ?? ((url, init) => fetch(url, init));
  }

  async makeRequest(options: HTTPClientRequest): Promise<HTTPResponse> {
    const controller = new AbortController();
    const timer: unknown = setTimeout(() => controller.abort(new TimeoutError(options.httpRequestTimeout)), options.httpRequestTimeout);
    // The request holds the process open, not its deadline. On Workers and Vercel Edge a timer is a number, with nothing to unref.
    (timer as { unref?: () => void }).unref?.();
    try {
      return await this.fetchFn(options.url, { method: options.method, headers: options.headers, body: options.body, signal: controller.signal });
    } finally {
      clearTimeout(timer as ReturnType<typeof setTimeout>);
    }
  }
}

/** Reads one header from a plain object or a fetch `Headers`, case-insensitively. */
export function readHeader(headers: HTTPResponse['headers'], name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as HTTPHeaders).get === 'function') return (headers as HTTPHeaders).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? String(value[0]) : String(value);
  }
  return undefined;
}

function isAbort(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'AbortError' || name === 'TimeoutError';
}

/** Adapts a Segment `httpClient` to eventrelay's `Transport`: eventrelay keeps the retry policy. */
export class HttpClientTransport implements Transport {
  private readonly client: HTTPClient;

  constructor(client: HTTPClient | HTTPFetchFn) {
    this.client = typeof client === 'function' ? new FetchHTTPClient(client) : client;
  }

  async send(request: HttpRequest): Promise<HttpResponse> {
    let response: HTTPResponse;
    try {
      response = await this.client.makeRequest({
        url: request.url.href,
        method: 'POST',
        headers: { ...request.headers },
        body: typeof request.body === 'string' ? request.body : request.body.toString(),
        httpRequestTimeout: request.timeout,
      });
    } catch (error) {
      if (error instanceof TimeoutError) throw error;
      if (isAbort(error)) throw new TimeoutError(request.timeout, { cause: error });
      throw error;
    }
    const retryAfter = readHeader(response.headers, 'retry-after');
    // The client reads a 200's body for the messages the server refused (`rejected`).
    if (request.readBody && typeof response.text === 'function') return { status: response.status, retryAfter, body: await response.text() };
    return { status: response.status, retryAfter };
  }
}

/** `http_request` as Segment emits it; eventrelay replaces the credentials in `authorization`. */
export interface HttpRequestEvent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
}

export interface HttpResponseEvent {
  status: number;
  statusText: string;
  url: string;
  body: string;
  headers: Record<string, string>;
}

interface Emitting {
  listenerCount(event: string): number;
  emit(event: string, ...args: unknown[]): boolean;
}

function bodyText(body: Uint8Array | string): string {
  return typeof body === 'string' ? body : new TextDecoder().decode(body);
}

function redacted(headers: Readonly<Record<string, string>>): Record<string, string> {
  const copy: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    copy[name] = name.toLowerCase() === 'authorization' ? `${value.split(' ')[0]} [redacted]` : value;
  }
  return copy;
}

/** Wraps a transport to emit `http_request` before and `http_response` after every attempt, when someone listens. */
export class EmittingTransport implements Transport {
  constructor(
    private readonly inner: Transport,
    private readonly emitter: Emitting,
  ) {}

  async send(request: HttpRequest): Promise<HttpResponse> {
    if (this.emitter.listenerCount('http_request') > 0) {
      const event: HttpRequestEvent = { url: request.url.href, method: 'POST', headers: redacted(request.headers), body: bodyText(request.body) };
      this.safeEmit('http_request', event);
    }
    const response = await this.inner.send(request);
    if (this.emitter.listenerCount('http_response') > 0) {
      const event: HttpResponseEvent = {
        status: response.status,
        statusText: statusText(response.status) ?? '',
        url: request.url.href,
        body: bodyText(request.body),
        headers: response.retryAfter === undefined ? {} : { 'retry-after': response.retryAfter },
      };
      this.safeEmit('http_response', event);
    }
    return response;
  }

  close(): void {
    this.inner.close?.();
  }

  /** A listener that throws must not fail the request: it is the caller's code, not the network. */
  private safeEmit(name: string, event: unknown): void {
    try {
      this.emitter.emit(name, event);
    } catch (thrown) {
      // The request goes on: a listener's own bug is not a delivery failure.
      log('an %s listener threw: %s', name, thrown instanceof Error ? thrown.message : String(thrown));
    }
  }
}
