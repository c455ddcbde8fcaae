import http from 'node:http';
import https from 'node:https';
import { toNetworkError } from './errors';
import type { HttpRequest, HttpResponse, Transport } from './transport';

export interface NodeTransportOptions {
  /** Sockets kept alive per host. Default 8. */
  readonly maxSockets?: number;
}

/**
 * A transport on bare `node:http`/`node:https` with keep-alive agents: one request,
 * any status resolved, no redirects, response body discarded, certificates always verified.
 */
export class NodeTransport implements Transport {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(options: NodeTransportOptions = {}) {
    const maxSockets = options.maxSockets ?? 8;
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets, rejectUnauthorized: true });
  }

  post(request: HttpRequest): Promise<HttpResponse> {
    return new Promise((resolve, reject) => {
      const url = new URL(request.url);
      const secure = url.protocol === 'https:';
      const body = request.body;
      const req = (secure ? https : http).request(
        url,
        {
          method: 'POST',
          agent: secure ? this.httpsAgent : this.httpAgent,
          headers: { ...request.headers, 'content-length': String(Buffer.byteLength(body)) },
          timeout: request.timeout,
        },
        (res) => {
          // Read the (unused) body to its end so the socket goes back to the pool first.
          const answer = { status: res.statusCode ?? 0, headers: res.headers };
          res.on('error', () => resolve(answer));
          res.on('end', () => resolve(answer));
          res.resume();
        },
      );
      req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
      req.on('error', (error) => reject(toNetworkError(error, request.url, request.timeout)));
      req.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
