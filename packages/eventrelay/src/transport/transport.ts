/**
 * The one HTTP seam of the package: one POST, one answer. The client's batches and the
 * forwarder's webhook deliveries both go through it; the callers keep the policy (which
 * statuses count, retries, signing), a transport only moves bytes. Pass your own as the
 * client's `transport` option or `WebhookDestination`'s `transport` option (a proxy, a
 * recording fake in tests); the client's default is `NodeTransport` where the runtime has
 * `node:http` and `FetchTransport` elsewhere, the destination's `UndiciTransport`.
 */
export interface HttpRequest {
  /** Target, parsed once by the caller. Credentials in it become Basic auth. */
  readonly url: URL;
  /** Complete header set, names as they go on the wire. */
  readonly headers: Readonly<Record<string, string>>;
  /** The exact bytes to send (the signed ones, for a webhook); a string goes as UTF-8. A `Buffer` is a `Uint8Array`. */
  readonly body: Uint8Array | string;
  /** Milliseconds for the whole exchange, until the status line is in (and the body, with `readBody`). */
  readonly timeout: number;
  /** Resolve only once the answer's body is read (capped), and pass it as `body`. Default false. */
  readonly readBody?: boolean;
}

export interface HttpResponse {
  readonly status: number;
  /** The raw `Retry-After` header, when the server sent one. */
  readonly retryAfter?: string | undefined;
  /** The answer's body as UTF-8 text, when the request asked for it with `readBody`. */
  readonly body?: string | undefined;
}

export interface Transport {
  /**
   * Sends one request. Resolves with any status as soon as the headers are in (no throwing
   * on 4xx/5xx, no redirects followed, no retries); rejects only with a `NetworkError` or
   * `TimeoutError` when no answer came.
   */
  send(request: HttpRequest): Promise<HttpResponse>;
  /** Releases kept-alive sockets. Called once nothing is in flight. */
  close?(): void;
}

/** A transport made of a `send` and a `close` function: the shape of the built-in transports. */
export class SenderTransport implements Transport {
  readonly send: (request: HttpRequest) => Promise<HttpResponse>;
  readonly close: () => void;

  constructor(sender: Required<Transport>) {
    this.send = sender.send;
    this.close = sender.close;
  }
}
