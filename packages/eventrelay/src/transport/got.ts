import type Http from 'node:http';
import type Https from 'node:https';
import type { Got } from 'got';
import { EventRelayError, TimeoutError } from '../errors';
import { toNetworkError } from './network-errors';
import { integerOption } from '../internal/options';
import { nodeBuiltins } from './node-builtins';
import { redactUrl } from './redact';
import type { HttpRequest, HttpResponse, Transport } from './transport';

/**
 * The module name in a variable: a bundler for Workers or Edge leaves `import(GOT)` alone instead
 * of failing on got (an optional peer, seldom installed there) or bundling its Node-only code.
 */
const GOT = 'got';

export interface GotTransportOptions {
  /** Sockets kept alive per host. Default 8. */
  readonly maxSockets?: number;
}

/**
 * A got-based alternative to `NodeTransport`, with keep-alive agents; `got` is an optional
 * peer dependency, loaded on first use. got's own retries, redirects and
 * HTTP-error throwing are off, so the caller sees every status and owns the retry policy.
 */
export class GotTransport implements Transport {
  private readonly httpAgent: Http.Agent;
  private readonly httpsAgent: Https.Agent;
  private client: Promise<Got> | undefined;

  constructor(options: GotTransportOptions = {}) {
    const maxSockets = integerOption('maxSockets', options.maxSockets ?? 8, 1);
    const builtins = nodeBuiltins();
    if (builtins === undefined) throw new EventRelayError('GotTransport needs node:http, which this runtime does not provide. Use FetchTransport.', 'ERR_UNSUPPORTED_RUNTIME');
    const { http, https } = builtins;
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets });
    // Certificates are always verified: a self-signed certificate is an error, never a warning.
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets, rejectUnauthorized: true });
  }

  /** got is loaded on first use, so apps on the default transport never load it. */
  private load(): Promise<Got> {
    this.client ??= (import(GOT) as Promise<typeof import('got')>).then(({ default: got }) =>
      got.extend({
        retry: { limit: 0 },
        throwHttpErrors: false,
        followRedirect: false,
        decompress: false,
        agent: { http: this.httpAgent, https: this.httpsAgent },
      }),
    );
    return this.client;
  }

  async send(request: HttpRequest): Promise<HttpResponse> {
    const client = await this.load();
    try {
      const response = await client.post(request.url, {
        body: request.body,
        headers: request.headers,
        timeout: { request: request.timeout },
      });
      const retryAfter = response.headers['retry-after'];
      const answer = retryAfter === undefined ? { status: response.statusCode } : { status: response.statusCode, retryAfter };
      return request.readBody === true ? { ...answer, body: response.body } : answer;
    } catch (error) {
      if ((error as { name?: unknown }).name === 'TimeoutError') throw new TimeoutError(request.timeout, { cause: error });
      throw toNetworkError(error, redactUrl(request.url));
    }
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
