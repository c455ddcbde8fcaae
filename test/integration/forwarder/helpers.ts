import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly json: Record<string, unknown>;
}

export interface Receiver {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** Requests answered 2xx, i.e. deliveries. */
  readonly delivered: ReceivedRequest[];
  /** Status for the next requests to `path`: e.g. failFirst('/a', 2) answers 503 twice. */
  failFirst(path: string, times: number, status?: number): void;
  close(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1 that records every request and answers 200 unless told otherwise. */
export async function startReceiver(delayMs = 0): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const delivered: ReceivedRequest[] = [];
  const failures = new Map<string, { left: number; status: number }>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '/';
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(body) as Record<string, unknown>;
      } catch {
        // recorded as {}
      }
      const record = { path, headers: req.headers, body, json };
      requests.push(record);
      const failure = failures.get(path);
      const answer = () => {
        if (failure !== undefined && failure.left > 0) {
          failure.left--;
          res.writeHead(failure.status).end();
          return;
        }
        delivered.push(record);
        res.writeHead(200).end('ok');
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    delivered,
    failFirst(path, times, status = 503) {
      failures.set(path, { left: times, status });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Polls `condition` every 20 ms until it holds; fails after `timeoutMs` (a bound, not a timing assertion). */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Basic auth header for a write key, as the client sends it. */
export function basic(writeKey: string): string {
  return `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`;
}

export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; headers: Headers }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, json, headers: response.headers };
}
