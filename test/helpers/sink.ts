import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface ReceivedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  readonly remotePort: number | undefined;
}

export type SinkHandler = (request: ReceivedRequest, res: http.ServerResponse, index: number) => void;

/** A real HTTP server on 127.0.0.1 that records requests; answers 200 unless a handler does otherwise. */
export async function startSink(handler?: SinkHandler) {
  const requests: ReceivedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      const request = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: raw.toString('utf8'),
        remotePort: req.socket.remotePort,
      };
      requests.push(request);
      if (handler) handler(request, res, requests.length - 1);
      else res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    messages: () => requests.flatMap((r) => (JSON.parse(r.body) as { batch: Record<string, unknown>[] }).batch),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
