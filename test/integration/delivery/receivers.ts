import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  /** Header names exactly as they came on the wire. */
  readonly rawHeaderNames: readonly string[];
  readonly body: Buffer;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, received: ReceivedRequest, count: number) => void;

export interface Receiver {
  readonly url: string;
  readonly port: number;
  readonly requests: ReceivedRequest[];
  /** TLS handshakes that failed on the server side (https only). */
  readonly tlsErrors: string[];
  close(): Promise<void>;
}

/** A real webhook receiver on 127.0.0.1 that records every complete request, then lets `handler` answer. */
export async function startReceiver(handler: Handler, tls?: { key: string; cert: string }): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const tlsErrors: string[] = [];
  const sockets = new Set<Socket>();
  const listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawHeaderNames: req.rawHeaders.filter((_, i) => i % 2 === 0),
        body: Buffer.concat(chunks),
      };
      requests.push(received);
      handler(req, res, received, requests.length);
    });
  };
  const server = tls ? https.createServer({ key: tls.key, cert: tls.cert }, listener) : http.createServer(listener);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('tlsClientError', (error: Error) => tlsErrors.push(error.message));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}/hook`,
    port,
    requests,
    tlsErrors,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Answers every request with `status`. */
export const answer =
  (status: number, headers: http.OutgoingHttpHeaders = {}): Handler =>
  (_req, res) => {
    res.writeHead(status, headers).end('ok');
  };

/** Polls until `predicate` holds; for waiting on real sockets without timing assertions. */
export async function until(predicate: () => boolean, what = 'condition', limitMs = 10_000): Promise<void> {
  const started = Date.now();
  while (!predicate()) {
    if (Date.now() - started > limitMs) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
