/** One HTTP POST as the client and the forwarder make it. */
export interface HttpRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Buffer;
  /** Milliseconds until the request is abandoned with a `TimeoutError`. */
  readonly timeout: number;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/**
 * The HTTP seam. Resolves with any status (no throwing on 4xx/5xx, no redirects
 * followed, no retries: one retry policy lives with the caller); rejects only with
 * a `NetworkError` or `TimeoutError` when no response came.
 */
export interface Transport {
  post(request: HttpRequest): Promise<HttpResponse>;
  /** Frees sockets kept alive. */
  close?(): void;
}
