import { gunzipSync } from 'node:zlib';
import type { HttpRequest, HttpResponse, Transport } from '../../src/transport/transport';

export type Responder = (request: HttpRequest, index: number) => HttpResponse | Error | Promise<HttpResponse | Error>;

export interface SentBatch {
  readonly request: HttpRequest;
  readonly body: { batch: Record<string, unknown>[]; sentAt: string };
  readonly bytes: number;
}

/** Records every request; answers 200 unless a responder says otherwise. */
export class FakeTransport implements Transport {
  readonly requests: SentBatch[] = [];
  closed = false;

  constructor(private responder: Responder = () => ({ status: 200, headers: {} })) {}

  respondWith(responder: Responder): void {
    this.responder = responder;
  }

  async post(request: HttpRequest): Promise<HttpResponse> {
    const raw = typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
    const text = request.headers['content-encoding'] === 'gzip' ? gunzipSync(raw).toString() : raw.toString();
    this.requests.push({ request, body: JSON.parse(text), bytes: raw.length });
    const answer = await this.responder(request, this.requests.length - 1);
    if (answer instanceof Error) throw answer;
    return answer;
  }

  close(): void {
    this.closed = true;
  }

  /** Every message of every request, in order. */
  get messages(): Record<string, unknown>[] {
    return this.requests.flatMap((r) => r.body.batch);
  }
}
