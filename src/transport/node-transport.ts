import { createNodeTransport } from './http-node-transport';
import type { WebhookTransport } from './http-transport';
import type { HttpRequest, HttpResponse, Transport } from './transport';

/**
 * The client's default transport: the same `node:http`/`node:https` sender the forwarder
 * delivers webhooks with (keep-alive, one deadline per request, capped drain of the answer,
 * certificates always verified, self-signed receivers refused), behind the client's
 * `Transport` interface. The parsed URL is kept: a client posts to one URL.
 */
export class NodeTransport implements Transport {
  private readonly sender: WebhookTransport = createNodeTransport();
  private url: URL | undefined;

  async post(request: HttpRequest): Promise<HttpResponse> {
    if (this.url?.href !== request.url) this.url = new URL(request.url);
    const body = typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
    const response = await this.sender.send({ url: this.url, headers: request.headers, body, timeout: request.timeout });
    return { status: response.status, headers: { 'retry-after': response.retryAfter } };
  }

  close(): void {
    this.sender.close();
  }
}
