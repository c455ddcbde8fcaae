import { NetworkError } from '../../../src/errors';
import type { WebhookRequest, WebhookResponse, WebhookTransport } from '../../../src/transport/http-transport';

export type Answer = number | WebhookResponse | Error | Promise<number | WebhookResponse>;

/** A transport that records requests and answers from a script: (url, call number for that url). */
export class FakeTransport implements WebhookTransport {
  readonly requests: WebhookRequest[] = [];
  inFlight = 0;
  maxInFlight = 0;
  closed = false;

  constructor(private readonly script: (url: string, call: number) => Answer) {}

  async send(request: WebhookRequest): Promise<WebhookResponse> {
    const call = this.requests.filter((r) => r.url.href === request.url.href).length + 1;
    this.requests.push(request);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      const answer = await this.script(request.url.href, call);
      if (answer instanceof Error) throw answer;
      return typeof answer === 'number' ? { status: answer } : answer;
    } finally {
      this.inFlight--;
    }
  }

  close(): void {
    this.closed = true;
  }

  to(url: string): WebhookRequest[] {
    return this.requests.filter((r) => r.url.href === url);
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
