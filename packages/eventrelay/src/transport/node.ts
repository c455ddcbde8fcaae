import type Http from 'node:http';
import type Https from 'node:https';
import { TimeoutError } from '../errors';
import { errorCode, toNetworkError } from './network-errors';
import { integerOption } from '../internal/options';
import { refuseSelfSignedLeaf, requireBuiltins, trustedCertificates } from './node-builtins';
import { urlTarget } from './target';
import type { UrlTarget } from './target';
import { SenderTransport } from './transport';
import type { HttpRequest, HttpResponse, Transport } from './transport';

export { urlTarget } from './target';
export type { UrlTarget } from './target';

/*
 * Why node:http and not got (the design first named got 14): with many requests in flight to a
 * local receiver, got 14 (retry off, keep-alive agent) made a fraction of the requests a bare
 * keep-alive http.request loop made (bench/README.md), far from the delivery target set against
 * that floor; the per-request work here is
 * what any webhook sender needs (one timer, a capped drain) and nothing more. The client sends
 * its batches with it too; got stays available as the optional `GotTransport`.
 */

export interface NodeTransportOptions {
  /**
   * Extra CA certificates (PEM) trusted IN ADDITION to Node's root store, for tests with a
   * private CA. Verification stays on: a self-signed leaf is refused even if listed here.
   */
  readonly ca?: string | Uint8Array | readonly (string | Uint8Array)[];
  /** Bytes of a response body read and thrown away before the socket is dropped. Default 64 KiB. */
  readonly maxResponseBytes?: number;
}

/** Bytes of an answer read before the connection is dropped, by default. */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

interface Target extends UrlTarget {
  readonly module: typeof Http | typeof Https;
  readonly options: Readonly<Https.RequestOptions>;
  /** `host[:port]` as the Host header wants it. */
  readonly host: string;
}

/**
 * The client's default transport where the runtime has `node:http` (Node, Bun, Deno; the
 * webhook destination's is `UndiciTransport`): `node:http`/`node:https` with keep-alive, one
 * deadline per request, a capped drain of the answer, certificates always verified and
 * self-signed receivers refused, whatever `NODE_TLS_REJECT_UNAUTHORIZED` says. Throws
 * `ERR_UNSUPPORTED_RUNTIME` where there is no `node:http`: use `FetchTransport` there.
 */
export class NodeTransport extends SenderTransport {
  constructor(options: NodeTransportOptions = {}) {
    super(createNodeSender(options));
  }
}

function createNodeSender(options: NodeTransportOptions): Required<Transport> {
  const maxResponseBytes = integerOption('maxResponseBytes', options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, 0);
  const { http, https, tls, url: urlModule } = requireBuiltins();
  const httpAgent = new http.Agent({ keepAlive: true, scheduling: 'lifo' });
  const httpsAgent = new https.Agent({
    keepAlive: true,
    scheduling: 'lifo',
    // Explicit, so NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment cannot turn checks off;
    // agent options take precedence over request options in Node's https agent.
    rejectUnauthorized: true,
    checkServerIdentity: refuseSelfSignedLeaf,
    ...(options.ca === undefined ? {} : { ca: trustedCertificates(tls, options.ca) }),
  });
  const targets = new WeakMap<URL, Target>();

  function targetFor(url: URL): Target {
    let target = targets.get(url);
    if (target === undefined) {
      const parts = urlModule.urlToHttpOptions(url);
      const secure = url.protocol === 'https:';
      target = {
        module: secure ? https : http,
        ...urlTarget(url),
        host: url.host,
        options: {
          protocol: parts.protocol,
          hostname: parts.hostname,
          port: parts.port,
          path: parts.path,
          method: 'POST',
          agent: secure ? httpsAgent : httpAgent,
          ...(secure ? { rejectUnauthorized: true } : {}),
        },
      };
      targets.set(url, target);
    }
    return target;
  }

  function send(request: HttpRequest): Promise<HttpResponse> {
    const target = targetFor(request.url);
    return new Promise((resolve, reject) => {
      let answered = false;
      let finished = false;
      let retriedStaleSocket = false;
      let current: Http.ClientRequest | undefined;

      const finish = (): void => {
        finished = true;
        clearTimeout(deadline);
      };
      // One deadline for connect, TLS, sending and the status line; after the status it
      // bounds the drain, so a receiver that drips its body cannot hold a socket forever.
      // With `readBody`: the status, once in, while the body is still being read.
      let headersIn: HttpResponse | undefined;
      const deadline = setTimeout(() => {
        const error = new TimeoutError(request.timeout);
        current?.destroy(error);
        if (!answered) {
          answered = true;
          // The status line came in time: it is the answer, without the body that did not.
          if (headersIn !== undefined) resolve(headersIn);
          else reject(error);
        }
        finish();
      }, request.timeout);

      const start = (): void => {
        const req = target.module.request(requestOptions(target.options, rawHeaders(target, request.headers)));
        current = req;
        req.on('response', (res) => {
          const retryAfter = retryAfterOf(res.rawHeaders);
          const status = res.statusCode ?? 0;
          if (request.readBody === true) {
            headersIn = { status, retryAfter };
            collect(res, maxResponseBytes, (body) => {
              if (answered) return;
              answered = true;
              finish();
              resolve({ status, retryAfter, body });
            });
            return;
          }
          answered = true;
          resolve(retryAfter === undefined ? { status } : { status, retryAfter });
          drain(res, maxResponseBytes, finish);
        });
        req.on('error', (error) => {
          if (answered || finished) return;
          // A kept-alive socket the receiver closed while idle fails at once; Node's docs
          // advise one more try on a fresh socket, which is not a retry of the delivery.
          if (!retriedStaleSocket && req.reusedSocket && isStaleSocketError(error)) {
            retriedStaleSocket = true;
            start();
            return;
          }
          answered = true;
          finish();
          if (headersIn !== undefined) resolve(headersIn);
          else reject(toNetworkError(error, target.display));
        });
        req.end(request.body);
      };
      start();
    });
  }

  return {
    send,
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

/** The target's options plus headers, field by field (object spread is slow on this path). */
function requestOptions(options: Readonly<Https.RequestOptions>, headers: string[]): Https.RequestOptions {
  return {
    protocol: options.protocol,
    hostname: options.hostname,
    port: options.port,
    path: options.path,
    method: options.method,
    agent: options.agent,
    rejectUnauthorized: options.rejectUnauthorized,
    headers,
  };
}

/**
 * Headers as a flat [name, value, ...] list: Node still validates each one but skips its
 * per-header bookkeeping, a cost per request. In that form Node adds neither
 * Host nor the Basic auth of the URL, so they are added here.
 */
function rawHeaders(target: Target, headers: Readonly<Record<string, string>>): string[] {
  return flatHeaders(headers, target.authorization, ['Host', target.host]);
}

/**
 * `headers` appended to `list` as [name, value, ...], then `authorization` (the Basic auth of
 * the URL's credentials) unless a header sets Authorization. Shared with `UndiciTransport`.
 */
export function flatHeaders(headers: Readonly<Record<string, string>>, authorization: string | undefined, list: string[] = []): string[] {
  let set = false;
  for (const name in headers) {
    list.push(name, headers[name] as string);
    if (authorization !== undefined && name.toLowerCase() === 'authorization') set = true;
  }
  if (authorization !== undefined && !set) list.push('Authorization', authorization);
  return list;
}

/** Reads and discards the answer's body (spec 4.1: not used), dropping the socket past `limit` bytes. */
function drain(res: Http.IncomingMessage, limit: number, done: () => void): void {
  let received = 0;
  res.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (received > limit) res.destroy();
  });
  res.on('error', () => {});
  res.on('end', done);
  res.on('close', done);
}

/** Reads the answer's body as text, up to `limit` bytes (the rest is dropped with the socket). */
function collect(res: Http.IncomingMessage, limit: number, done: (body: string) => void): void {
  const chunks: Buffer[] = [];
  let received = 0;
  // An ingestion answer is a few bytes, in one chunk: read as it is, without a copy.
  const end = () => done(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
  res.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (received <= limit) chunks.push(chunk);
    else res.destroy();
  });
  res.on('error', () => {});
  res.on('end', end);
  res.on('close', end);
}

/**
 * The answer's first Retry-After header, as `res.headers['retry-after']` gives it (Node keeps the
 * first of duplicates), read from the raw list: `res.headers` parses every header into an object
 * on first use, a cost per request for the one header wanted.
 */
function retryAfterOf(raw: readonly string[]): string | undefined {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 11 && name.toLowerCase() === 'retry-after') return raw[i + 1];
  }
  return undefined;
}

function isStaleSocketError(error: unknown): boolean {
  const code = errorCode(error);
  return code === 'ECONNRESET' || code === 'EPIPE';
}
