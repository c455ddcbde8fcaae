import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'mocha';
import { expect } from 'chai';
import { NodeTransport } from '../../../src/transport/node';

/** A server answering each request with `status` and the raw header lines given. */
async function answering(status: number, headers: string[]): Promise<{ url: URL; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, headers);
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/v1/batch`), close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('NodeTransport: the Retry-After header', () => {
  const cases: { headers: string[]; expected: string | undefined }[] = [
    { headers: ['Retry-After', '7'], expected: '7' },
    { headers: ['retry-after', 'Wed, 21 Oct 2026 07:28:00 GMT'], expected: 'Wed, 21 Oct 2026 07:28:00 GMT' },
    // Node keeps the first of duplicate Retry-After headers; so does the transport.
    { headers: ['X-Other', 'a', 'RETRY-AFTER', '2', 'Retry-After', '5'], expected: '2' },
    { headers: ['X-Retry-After', '9'], expected: undefined },
  ];
  for (const { headers, expected } of cases) {
    it(`reads ${JSON.stringify(headers)} as ${String(expected)}, with or without the body`, async () => {
      const server = await answering(503, headers);
      const transport = new NodeTransport();
      try {
        for (const readBody of [false, true]) {
          const response = await transport.send({ url: server.url, headers: { 'content-type': 'application/json' }, body: '{}', timeout: 5000, readBody });
          expect(response.status).to.equal(503);
          expect(response.retryAfter).to.equal(expected);
        }
      } finally {
        transport.close();
        await server.close();
      }
    });
  }
});
