import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, it } from 'mocha';
import { expect } from 'chai';
import { NetworkError } from '../../../../eventrelay/src/errors';
import { UndiciTransport } from '../../../src/delivery/undici-transport';
import type { WebhookRequest, WebhookResponse } from '../../../src/delivery/undici-transport';

/** The transport's send as the webhook destination calls it (with `keepBytes`). */
function sendOf(transport: UndiciTransport): (request: WebhookRequest) => Promise<WebhookResponse> {
  return transport.send;
}

/**
 * A raw TCP receiver: answers 200 to the first `answered` requests of each connection, then
 * closes the connection when the next one arrives, as a receiver whose idle timeout ends just as
 * a kept-alive connection is used again.
 */
async function receiverClosingAfter(answered: number): Promise<{ url: URL; connections: () => number; requests: () => number; close: () => Promise<void> }> {
  let connections = 0;
  let requests = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let seen = 0;
    let buffer = '';
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: *(\d+)/i.exec(buffer.slice(0, end))?.[1] ?? 0);
        if (buffer.length < end + 4 + length) return;
        buffer = buffer.slice(end + 4 + length);
        requests++;
        if (seen++ < answered) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
        else socket.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/hook`),
    connections: () => connections,
    requests: () => requests,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('UndiciTransport (real sockets on 127.0.0.1)', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const request = (url: URL) => ({ url, headers: { 'Content-Type': 'application/json' }, body: '{"a":1}', timeout: 2000 });

  it('sends a request once more on a new connection when a kept-alive one was closed by the receiver', async () => {
    const receiver = await receiverClosingAfter(1);
    const transport = new UndiciTransport();
    cleanups.push(() => receiver.close(), () => transport.close());
    expect(await transport.send(request(receiver.url))).to.deep.equal({ status: 200 });
    // The answer resolves at its status line; once its end is read, the connection is idle.
    await new Promise((resolve) => setTimeout(resolve, 50));
    // The second request goes on the kept-alive connection, which the receiver closes.
    expect(await transport.send(request(receiver.url))).to.deep.equal({ status: 200 });
    expect(receiver.connections()).to.equal(2);
    expect(receiver.requests()).to.equal(3);
  });

  it('does not send again when a new connection is closed before its answer: that is the delivery\'s retry to make', async () => {
    const receiver = await receiverClosingAfter(0);
    const transport = new UndiciTransport();
    cleanups.push(() => receiver.close(), () => transport.close());
    const error = await transport.send(request(receiver.url)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(NetworkError);
    expect((error as NetworkError).retryable).to.equal(true);
    expect(receiver.requests()).to.equal(1);
  });

  it('reads the answer body when asked, and passes Retry-After', async () => {
    const server = net.createServer((socket) => {
      socket.once('data', () => socket.write('HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\nContent-Length: 5\r\n\r\nbusy!'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const transport = new UndiciTransport();
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())), () => transport.close());
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    expect(await transport.send({ ...request(url), readBody: true })).to.deep.equal({ status: 503, retryAfter: '7', body: 'busy!' });
  });

  /** A raw receiver that writes `answer()` to each request and then stalls, and a transport to it (both closed after the test). */
  async function stalledAnswers(answer: () => string): Promise<{ url: URL; transport: UndiciTransport }> {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      sockets.add(socket);
      socket.once('data', () => socket.write(answer()));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const transport = new UndiciTransport();
    cleanups.push(
      () => new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
      () => transport.close(),
    );
    return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`), transport };
  }

  it('with keepBytes: answers with the first bytes of the body once they are in, without waiting for (or keeping) the rest', async () => {
    // 3 KB of a 1 MB answer, then nothing: the rest never comes while the test runs.
    const { url, transport } = await stalledAnswers(() => `HTTP/1.1 401 Unauthorized\r\nContent-Length: 1048576\r\n\r\nbad signature ${'x'.repeat(3072)}`);
    // A timeout far longer than the test: the answer comes from the 2 KB, not the deadline.
    const answer = await sendOf(transport)({ ...request(url), timeout: 600_000, keepBytes: 2048 });
    expect(answer.status).to.equal(401);
    expect(answer.head).to.have.length(2048);
    expect(Buffer.from(answer.head!).toString('utf8')).to.equal(`bad signature ${'x'.repeat(2048 - 14)}`);
  });

  it('with keepBytes: a short answer whole, and none for an empty body', async () => {
    const bodies = ['ok', ''];
    const server = net.createServer((socket) => {
      const body = bodies.shift()!;
      socket.once('data', () => socket.end(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const transport = new UndiciTransport();
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())), () => transport.close());
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const short = await sendOf(transport)({ ...request(url), keepBytes: 2048 });
    expect(Buffer.from(short.head!).toString()).to.equal('ok');
    const empty = await sendOf(transport)({ ...request(url), keepBytes: 2048 });
    expect(empty).to.deep.equal({ status: 200 });
  });

  it('with keepBytes and keepOnSuccess false: a 2xx is taken at its status line (its body never waited for), a failure still with its first bytes', async () => {
    const statuses = ['200 OK', '500 Internal Server Error'];
    // The status line and the start of a body whose rest never comes while the test runs.
    const { url, transport } = await stalledAnswers(() => `HTTP/1.1 ${statuses.shift()!}\r\nContent-Length: 1048576\r\n\r\nstarted`);
    // A deadline far longer than the test: the 2xx must not wait for its body.
    const ok = await sendOf(transport)({ ...request(url), timeout: 600_000, keepBytes: 2048, keepOnSuccess: false });
    expect(ok).to.deep.equal({ status: 200 });
    // The failure's answer is read to its 2 KB or its deadline: a short one here.
    const failed = await sendOf(transport)({ ...request(url), timeout: 2_000, keepBytes: 2048, keepOnSuccess: false });
    expect(failed.status).to.equal(500);
    expect(Buffer.from(failed.head!).toString()).to.equal('started');
  });
});
