import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** One request as the sink received it, complete. */
export interface ReceivedRequest {
  readonly method: string;
  /** Path and query, as sent. */
  readonly url: string;
  /** Same as `url`. */
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  /** Header names exactly as they came on the wire. */
  readonly rawHeaderNames: readonly string[];
  /** The body's bytes (gunzipped when sent with `Content-Encoding: gzip`). */
  readonly bytes: Buffer;
  /** The body as UTF-8 text. */
  readonly body: string;
  readonly remotePort: number | undefined;
}

/** Answers a recorded request; `index` counts from 0. Without a handler the sink answers 200 `{}`. */
export type SinkHandler = (request: ReceivedRequest, res: http.ServerResponse, index: number) => void;

export interface SinkOptions {
  /** Serve HTTPS with this key and certificate. */
  readonly tls?: { readonly key: string | Buffer; readonly cert: string | Buffer };
  /** Appended to the sink's base URL in `url`, e.g. `/hook`. */
  readonly path?: string;
}

export interface Sink {
  /** `http(s)://127.0.0.1:<port>` plus `options.path`. */
  readonly url: string;
  readonly port: number;
  readonly requests: ReceivedRequest[];
  /** TLS handshakes that failed on the server side (https only). */
  readonly tlsErrors: string[];
  /** The messages of every `{ batch: [...] }` body received. */
  messages(): Record<string, unknown>[];
  /** Stops the server and destroys open connections. */
  close(): Promise<void>;
}

/**
 * The one recording HTTP(S) server of the tests, on 127.0.0.1 and a free port: ingestion sinks
 * for the client, webhook receivers for the destination and the forwarder.
 */
export async function startSink(handler?: SinkHandler, options: SinkOptions = {}): Promise<Sink> {
  const requests: ReceivedRequest[] = [];
  const tlsErrors: string[] = [];
  const sockets = new Set<Socket>();
  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let bytes = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') bytes = gunzipSync(bytes);
      const request: ReceivedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawHeaderNames: req.rawHeaders.filter((_, i) => i % 2 === 0),
        bytes,
        body: bytes.toString('utf8'),
        remotePort: req.socket.remotePort,
      };
      requests.push(request);
      if (handler) handler(request, res, requests.length - 1);
      else res.end('{}');
    });
  };
  const server = options.tls ? https.createServer({ key: options.tls.key, cert: options.tls.cert }, listener) : http.createServer(listener);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('tlsClientError', (error: Error) => tlsErrors.push(error.message));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}${options.path ?? ''}`,
    port,
    requests,
    tlsErrors,
    messages: () => requests.flatMap((r) => (JSON.parse(r.body) as { batch: Record<string, unknown>[] }).batch),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A handler answering every request with `status`. */
export const answer =
  (status: number, headers: http.OutgoingHttpHeaders = {}): SinkHandler =>
    (_request, res) => {
      res.writeHead(status, headers).end('ok');
    };
