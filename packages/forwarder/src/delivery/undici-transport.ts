import tls from 'node:tls';
import { Agent, buildConnector } from 'undici';
import type { Dispatcher } from 'undici';
import { TimeoutError } from 'eventrelay/internal';
import { integerOption } from 'eventrelay/internal';
import { errorCode, toNetworkError } from 'eventrelay/internal';
import { DEFAULT_MAX_RESPONSE_BYTES, flatHeaders, refuseSelfSignedLeaf, trustedCertificates, urlTarget } from 'eventrelay/internal';
import type { NodeTransportOptions, UrlTarget } from 'eventrelay/internal';
import { SenderTransport } from 'eventrelay/internal';
import type { HttpRequest, HttpResponse, Transport } from 'eventrelay/internal';
import { NetworkPolicy } from './network-policy';

/*
 * Why undici for webhooks: Node's own HTTP/1.1 client (the engine of `fetch`), driven here through
 * its dispatcher API, with no stream per response: a request costs the sending process less CPU
 * than through node:http's ClientRequest (bench/delivery.mjs and its README give the figures), and
 * the forwarder sends one per message and URL. The promises of `NodeTransport` hold: one deadline, a capped drain, certificates verified
 * whatever the environment says, self-signed receivers refused.
 */

export interface UndiciTransportOptions extends NodeTransportOptions {
  /** Longest wait for a connection (TCP and TLS), in ms. Default 5000, the webhooks' timeout. */
  readonly connectTimeout?: number;
  /** Which addresses connections may go to, checked on each resolved address. Default: the built-in denied networks only. */
  readonly networkPolicy?: NetworkPolicy;
}

const DEFAULT_CONNECT_TIMEOUT = 5000;

/** A webhook request: with `keepBytes`, the answer comes with the first that many bytes of its body. */
export interface WebhookRequest extends HttpRequest {
  /**
   * Resolve once this many bytes of the answer's body are in, or it ended, and pass them as
   * `head`; the rest is read and dropped, never buffered. Default 0: resolve at the status line.
   */
  readonly keepBytes?: number;
  /** With `keepBytes`: false takes a 2xx at its status line, without its body (default true). */
  readonly keepOnSuccess?: boolean;
}

/** The answer to a `WebhookRequest`. */
export interface WebhookResponse extends HttpResponse {
  /** The body's first `keepBytes` bytes (fewer when it was shorter, or cut by the deadline); absent when empty. */
  readonly head?: Uint8Array;
}

interface Target extends UrlTarget {
  readonly origin: string;
  readonly path: string;
}

/**
 * The webhook destination's default transport: undici's HTTP/1.1 client with keep-alive
 * connections per receiver, one deadline per request (connect, TLS, sending and the status
 * line; after the status it bounds the drain), at most `maxResponseBytes` of an answer read,
 * certificates always verified and self-signed receivers refused, whatever
 * `NODE_TLS_REJECT_UNAUTHORIZED` says. A request on a kept-alive connection the receiver had
 * closed is sent once more on a new one (not a retry of the delivery).
 */
export class UndiciTransport extends SenderTransport {
  constructor(options: UndiciTransportOptions = {}) {
    super(createUndiciSender(options));
  }
}

function createUndiciSender(options: UndiciTransportOptions): Required<Transport> {
  const maxResponseBytes = integerOption('maxResponseBytes', options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, 0);
  const connectTimeout = integerOption('connectTimeout', options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT, 1);
  const policy = options.networkPolicy ?? new NetworkPolicy();
  const connect = buildConnector({
    timeout: connectTimeout,
    // Every address a name resolves to passes the network policy before a socket is opened.
    lookup: policy.lookup,
    // Explicit, so NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment cannot turn checks off.
    rejectUnauthorized: true,
    checkServerIdentity: refuseSelfSignedLeaf,
    ...(options.ca === undefined ? {} : { ca: trustedCertificates(tls, options.ca) }),
  });
  const agent = new Agent({ connect: policy.connector(connect) });
  const targets = new WeakMap<URL, Target>();

  function targetFor(url: URL): Target {
    let target = targets.get(url);
    if (target === undefined) {
      target = { origin: url.origin, path: `${url.pathname}${url.search}`, ...urlTarget(url) };
      targets.set(url, target);
    }
    return target;
  }

  function send(request: WebhookRequest): Promise<WebhookResponse> {
    const target = targetFor(request.url);
    const headers = flatHeaders(request.headers, target.authorization);
    return new Promise((resolve, reject) => {
      let answered = false;
      let retriedStaleSocket = false;
      let controller: Dispatcher.DispatchController | undefined;
      let headersIn: WebhookResponse | undefined;
      // With `keepBytes`: the body's first bytes, until that many are in.
      const keep = request.readBody === true ? 0 : (request.keepBytes ?? 0);
      let head: Buffer[] | undefined;
      let headLength = 0;
      const withHead = (): WebhookResponse => (head === undefined ? headersIn! : { ...headersIn!, head: Buffer.concat(head, headLength) });
      // Made when the deadline passes: an error's stack costs more than the rest of a request.
      let timeoutError: TimeoutError | undefined;
      const deadline = setTimeout(() => {
        timeoutError = new TimeoutError(request.timeout);
        controller?.abort(timeoutError);
        if (answered) return;
        answered = true;
        // The status line came in time: it is the answer, without the body that did not.
        if (headersIn !== undefined) resolve(withHead());
        else reject(timeoutError);
      }, request.timeout);

      const start = (): void => {
        let received = 0;
        const chunks: Buffer[] = [];
        // With `readBody`: the answer with what was read of its body (all of it, unless cut at the cap).
        const withBody = (): HttpResponse => (request.readBody === true ? { ...headersIn!, body: Buffer.concat(chunks).toString('utf8') } : headersIn!);
        const handler: Dispatcher.DispatchHandler = {
          onRequestStart(c) {
            controller = c;
            // The deadline passed while the request waited for a connection.
            if (timeoutError !== undefined) c.abort(timeoutError);
          },
          onResponseStart(_c, status, responseHeaders) {
            if (status < 200) return;
            const value = responseHeaders['retry-after'];
            const retryAfter = Array.isArray(value) ? value[0] : value;
            headersIn = retryAfter === undefined ? { status } : { status, retryAfter };
            if (request.readBody === true || answered) return;
            if (keep > 0 && (request.keepOnSuccess !== false || status >= 300)) return;
            answered = true;
            resolve(headersIn);
          },
          onResponseData(c, chunk) {
            received += chunk.length;
            // Past the cap the connection is dropped: a receiver cannot make us read a flood.
            if (received > maxResponseBytes) c.abort(new Error('response body over the limit'));
            else if (request.readBody === true) chunks.push(chunk);
            else if (keep > 0 && !answered) {
              // Only what is kept is held: past `keep` bytes the answer goes, the rest is drained.
              const part = headLength + chunk.length > keep ? chunk.subarray(0, keep - headLength) : chunk;
              (head ??= []).push(part);
              headLength += part.length;
              if (headLength >= keep) {
                answered = true;
                resolve(withHead());
              }
            }
          },
          onResponseEnd() {
            clearTimeout(deadline);
            if (answered) return;
            answered = true;
            resolve(keep > 0 ? withHead() : withBody());
          },
          onResponseError(_c, error) {
            if (answered) {
              clearTimeout(deadline);
              return;
            }
            // A kept-alive connection the receiver closed while idle fails before any answer;
            // it has read an earlier answer, which a new connection has not: one more try.
            if (!retriedStaleSocket && headersIn === undefined && isStaleSocket(error)) {
              retriedStaleSocket = true;
              start();
              return;
            }
            clearTimeout(deadline);
            answered = true;
            if (headersIn !== undefined) resolve(keep > 0 ? withHead() : withBody());
            else reject(toNetworkError(error, target.display));
          },
        };
        try {
          agent.dispatch(
            {
              origin: target.origin,
              path: target.path,
              method: 'POST',
              headers,
              body: request.body,
              // The deadline above bounds the exchange; these only stop undici's own, longer, timers.
              headersTimeout: request.timeout + 1000,
              bodyTimeout: request.timeout + 1000,
            },
            handler,
          );
        } catch (error) {
          clearTimeout(deadline);
          answered = true;
          reject(toNetworkError(error, target.display));
        }
      };
      start();
    });
  }

  return {
    send,
    close() {
      void agent.destroy().catch(() => {});
    },
  };
}

/** Closed by the peer on a connection that had answered before (undici's SocketError carries its counters). */
function isStaleSocket(error: unknown): boolean {
  const code = errorCode(error);
  if (code !== 'UND_ERR_SOCKET' && code !== 'ECONNRESET' && code !== 'EPIPE') return false;
  const socket = (error as { socket?: { bytesRead?: number } }).socket;
  return (socket?.bytesRead ?? 0) > 0;
}
