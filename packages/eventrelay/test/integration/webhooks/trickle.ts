import { request as httpRequest } from 'node:http';

export interface Trickle {
  readonly path?: string;
  readonly headers?: Record<string, string>;
  readonly body: string | Buffer;
  /** Milliseconds between two bytes. Default 20. */
  readonly everyMs?: number;
}

/**
 * POSTs `body` with its full Content-Length, one byte at a time (the first at once), and never
 * sends the last byte: the body cannot be complete when the server answers, so any answer comes
 * from the adapter's timeout. Resolves with the status and how many bytes had gone out; then
 * stops sending and closes the connection.
 */
export function trickle(port: number, options: Trickle): Promise<{ status: number; sent: number }> {
  const bytes = Buffer.from(options.body);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const request = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: options.path ?? '/',
      headers: { 'content-type': 'application/json', ...options.headers, 'content-length': bytes.length },
      agent: false,
    });
    const next = (): void => {
      if (sent < bytes.length - 1) request.write(bytes.subarray(sent, ++sent));
    };
    const timer = setInterval(next, options.everyMs ?? 20);
    request.on('response', (response) => {
      answered = true;
      clearInterval(timer);
      response.on('error', () => {});
      resolve({ status: response.statusCode ?? 0, sent });
      request.destroy();
    });
    // Writing on after the server closed its side is expected; only an error before the answer counts.
    request.on('error', (error) => {
      clearInterval(timer);
      if (!answered) reject(error);
    });
    next();
  });
}
