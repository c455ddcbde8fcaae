import { request as httpRequest } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

export interface Send {
  readonly method?: string;
  readonly path?: string;
  readonly headers?: Record<string, string | string[] | number>;
  /** Sent with Content-Length. */
  readonly body?: string | Buffer;
  /** Sent one by one with Transfer-Encoding: chunked (no Content-Length). */
  readonly chunks?: readonly (string | Buffer)[];
}

/** Starts `server` on 127.0.0.1 and a free port; returns the port. */
export function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

export function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** One HTTP/1.1 request with node:http (which can send repeated headers and chunked bodies). */
export function send(port: number, options: Send): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[] | number> = { 'content-type': 'application/json', ...options.headers };
    if (options.body !== undefined) headers['content-length'] = Buffer.byteLength(options.body);
    const req = httpRequest(
      { host: '127.0.0.1', port, method: options.method ?? 'POST', path: options.path ?? '/', headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    // The server may answer (413) and close before the whole body is written.
    req.on('error', reject);
    if (options.chunks) for (const chunk of options.chunks) req.write(chunk);
    req.end(options.body);
  });
}
