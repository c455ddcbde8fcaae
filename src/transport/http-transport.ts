/**
 * The HTTP seam of the webhook destination: one POST, one answer. The destination keeps
 * the policy (which statuses count, retries, signing); a transport only moves bytes, so
 * tests inject a fake and the default can change without touching the policy.
 */
export interface WebhookRequest {
  /** Target, parsed once per destination. Credentials in it become Basic auth. */
  readonly url: URL;
  /** Complete header set, names as they go on the wire. */
  readonly headers: Readonly<Record<string, string>>;
  /** The exact bytes to send (the signed ones). */
  readonly body: Buffer;
  /** Milliseconds the receiver has to send its status line and headers. */
  readonly timeout: number;
}

export interface WebhookResponse {
  readonly status: number;
  /** The raw `Retry-After` header, when the receiver sent one. */
  readonly retryAfter?: string;
}

export interface WebhookTransport {
  /**
   * Sends one request. Resolves with the status as soon as the headers are in (the body of
   * the answer is not used, spec 4.1); rejects with a `NetworkError` or `TimeoutError`.
   */
  send(request: WebhookRequest): Promise<WebhookResponse>;
  /** Releases sockets. Called by `WebhookDestination.close()` once nothing is in flight. */
  close(): void;
}
