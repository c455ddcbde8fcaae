import { gunzipSync } from 'node:zlib';
import { NetworkError } from '../../packages/eventrelay/src/errors';
import type { HttpRequest, HttpResponse, Transport } from '../../packages/eventrelay/src/transport/transport';

/** A status, a whole response, or an error to reject with (a `NetworkError`, say). */
export type Answer = number | HttpResponse | Error;

/**
 * Decides the answer to a request: `index` counts every request from 0, `call` counts the
 * requests to the same URL from 1 (the webhook destination's "attempt at this URL").
 */
export type Responder = (request: HttpRequest, index: number, call: number) => Answer | Promise<Answer>;

/** A client batch as the ingestion API would read it. */
export interface SentBatch {
  readonly request: HttpRequest;
  readonly body: { batch: Record<string, unknown>[]; sentAt: string };
  readonly bytes: number;
}

/** The one fake transport of the tests: records every request, answers 200 unless told otherwise. */
export class FakeTransport implements Transport {
  readonly requests: HttpRequest[] = [];
  inFlight = 0;
  maxInFlight = 0;
  closed = false;

  constructor(private responder: Responder = () => 200) {}

  respondWith(responder: Responder): void {
    this.responder = responder;
  }

  async send(request: HttpRequest): Promise<HttpResponse> {
    const call = this.to(request.url.href).length + 1;
    this.requests.push(request);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      const answer = await this.responder(request, this.requests.length - 1, call);
      if (answer instanceof Error) throw answer;
      return typeof answer === 'number' ? { status: answer } : answer;
    } finally {
      this.inFlight--;
    }
  }

  close(): void {
    this.closed = true;
  }

  /** The requests sent to one URL. */
  to(url: string): HttpRequest[] {
    return this.requests.filter((r) => r.url.href === url);
  }

  /** The requests read as client batches (gunzipped when they were gzipped). */
  get batches(): SentBatch[] {
    return this.requests.map((request) => {
      const raw = typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
      const text = request.headers['content-encoding'] === 'gzip' ? gunzipSync(raw).toString() : raw.toString();
      return { request, body: JSON.parse(text) as SentBatch['body'], bytes: raw.length };
    });
  }

  /** Every message of every batch, in order. */
  get messages(): Record<string, unknown>[] {
    return this.batches.flatMap((b) => b.body.batch);
  }
}

export const refused = (): NetworkError => new NetworkError('Request failed: connection refused', { code: 'ERR_NETWORK', retryable: true });

/** A promise the test resolves by hand. */
export function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
