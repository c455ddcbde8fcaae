import http from 'node:http';
import https from 'node:https';
import { toNetworkError } from './errors';
import type { HttpRequest, HttpResponse, Transport } from './transport';

export interface NodeTransportOptions {
  /** Sockets kept alive per host. Default 8. */
  readonly maxSockets?: number;
}

interface Target {
  readonly url: string;
  readonly secure: boolean;
  readonly options: http.RequestOptions;
}

/**
 * The default transport: bare `node:http`/`node:https` with keep-alive agents. One
 * request, any status resolved, no redirects, the response body read and discarded,
 * certificates always verified. Parsed URL options are kept: a client posts to one URL.
 */
export class NodeTransport implements Transport {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private target: Target | undefined;

  constructor(options: NodeTransportOptions = {}) {
    const maxSockets = options.maxSockets ?? 8;
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets, rejectUnauthorized: true });
  }

  post(request: HttpRequest): Promise<HttpResponse> {
    const target = this.resolve(request.url);
    return new Promise((resolve, reject) => {
      const body = request.body;
      const req = (target.secure ? https : http).request({
        ...target.options,
        headers: { ...request.headers, 'content-length': Buffer.byteLength(body) },
      });
      // A deadline for the whole exchange: a server that drips its answer times out too.
      const deadline = setTimeout(() => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })), request.timeout);
      req.once('response', (res) => {
        // Read the (unused) body to its end so the socket goes back to the pool first.
        const answer = { status: res.statusCode ?? 0, headers: res.headers };
        const done = () => {
          clearTimeout(deadline);
          resolve(answer);
        };
        res.on('error', done);
        res.on('end', done);
        res.resume();
      });
      req.on('error', (error) => {
        clearTimeout(deadline);
        reject(toNetworkError(error, request.url, request.timeout));
      });
      req.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private resolve(url: string): Target {
    if (this.target?.url === url) return this.target;
    const parsed = new URL(url);
    const secure = parsed.protocol === 'https:';
    this.target = {
      url,
      secure,
      options: {
        method: 'POST',
        protocol: parsed.protocol,
        hostname: parsed.hostname.replace(/^\[|\]$/g, ''),
        port: parsed.port || (secure ? 443 : 80),
        path: parsed.pathname + parsed.search,
        auth: parsed.username ? `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}` : undefined,
        agent: secure ? this.httpsAgent : this.httpAgent,
      },
    };
    return this.target;
  }
}
