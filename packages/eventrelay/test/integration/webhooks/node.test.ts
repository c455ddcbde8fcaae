import { expect } from 'chai';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { PayloadTooLargeError, TimeoutError } from '../../../src/errors';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import { createWebhookHandler } from '../../../src/webhooks/adapters/node';
import type { NodeWebhookOptions } from '../../../src/webhooks/adapters/node';
import { body, hmacHex, SECRET, signatureOf, vectors } from '../../fixtures/webhooks/load';
import { close, listen, send } from './http-helpers';
import { trickle } from './trickle';

describe('createWebhookHandler (Node http, real server on 127.0.0.1)', () => {
  let server: Server | undefined;
  let port: number;
  let received: WebhookMessage[];
  let errors: [unknown, number][];

  async function start(options: Partial<NodeWebhookOptions> = {}): Promise<void> {
    received = [];
    errors = [];
    server = createServer(
      createWebhookHandler({
        secret: SECRET,
        handler: (message) => void received.push(message),
        onError: (error, status) => void errors.push([error, status]),
        ...options,
      }),
    );
    port = await listen(server);
  }

  afterEach(async () => {
    if (server) await close(server);
    server = undefined;
  });

  it('answers 204 to every signed fixture body and hands over the parsed message', async () => {
    await start();
    const names = [...new Set(vectors.map((v) => v.name))];
    for (const name of names) {
      const reply = await send(port, { body: body(name), headers: { 'x-signature': signatureOf(name) } });
      expect(reply.status, name).to.equal(204);
    }
    expect(received.map((m) => m.type).sort()).to.deep.equal(['alias', 'delete', 'identify', 'page', 'track', 'track']);
  });

  it('verifies the bytes as they came over the wire, in many small chunks (emoji split across chunks)', async () => {
    await start();
    const raw = body('page-emoji-u2028.json');
    const chunks = Array.from({ length: Math.ceil(raw.length / 7) }, (_, i) => raw.subarray(i * 7, i * 7 + 7));
    const reply = await send(port, { chunks, headers: { 'x-signature': signatureOf('page-emoji-u2028.json') } });
    expect(reply.status).to.equal(204);
    expect(received[0]).to.include({ type: 'page', userId: 'u-\u{1F600}' });
  });

  it('answers 401 without a signature, with a wrong one, or with the header repeated', async () => {
    await start();
    const raw = body('track-compact.json');
    const good = signatureOf('track-compact.json');
    const replies = [
      await send(port, { body: raw }),
      await send(port, { body: raw, headers: { 'x-signature': hmacHex(raw, 'another-secret') } }),
      await send(port, { body: raw, headers: { 'x-signature': [good, good] } }),
    ];
    expect(replies.map((r) => r.status)).to.deep.equal([401, 401, 401]);
    expect(JSON.parse(replies[0]!.body)).to.deep.equal({ error: 'Invalid or missing X-Signature.' });
    expect(received).to.have.length(0);
  });

  it('accepts the header in any case and uppercase hex', async () => {
    await start();
    const reply = await send(port, { body: body('delete.json'), headers: { 'X-SIGNATURE': signatureOf('delete.json').toUpperCase() } });
    expect(reply.status).to.equal(204);
  });

  it('answers 400 to a signed body that is not a valid message', async () => {
    await start();
    const raw = '{"version":1,"type":"track","userId":"u","timestamp":"2026-01-01T00:00:00.000Z"}';
    const reply = await send(port, { body: raw, headers: { 'x-signature': hmacHex(raw) } });
    expect(reply.status).to.equal(400);
    expect(JSON.parse(reply.body).error).to.include('`event`');
  });

  it('answers 500 when the handler throws, and 503 when it outlives the timeout', async () => {
    await start({
      timeout: 100,
      handler: (message) => {
        if (message.type === 'delete') throw new Error('boom');
        return new Promise(() => {}); // never finishes
      },
    });
    const failed = await send(port, { body: body('delete.json'), headers: { 'x-signature': signatureOf('delete.json') } });
    expect(failed.status).to.equal(500);
    const slow = await send(port, { body: body('alias.json'), headers: { 'x-signature': signatureOf('alias.json') } });
    expect(slow.status).to.equal(503);
    expect(errors.map(([e, s]) => [(e as Error).name, s])).to.deep.equal([
      ['Error', 500],
      [TimeoutError.name, 503],
    ]);
  });

  it('answers 503 at `timeout` while the body is still trickling in, and never calls the handler', async () => {
    await start({ timeout: 200 });
    const reply = await trickle(port, { body: body('track-compact.json'), headers: { 'x-signature': signatureOf('track-compact.json') } });
    expect(reply.status).to.equal(503);
    expect(received).to.have.length(0);
    expect(errors.map(([e, s]) => [e instanceof TimeoutError, s])).to.deep.equal([[true, 503]]);
  });

  it('answers 405 to anything but POST', async () => {
    await start();
    const reply = await send(port, { method: 'GET' });
    expect(reply.status).to.equal(405);
    expect(reply.headers.allow).to.equal('POST');
  });

  it('answers 413 to a body over maxBodySize, from Content-Length or while streaming', async () => {
    await start({ maxBodySize: 1000 });
    const big = Buffer.alloc(5000, 'a');
    const declared = await send(port, { body: big, headers: { 'x-signature': hmacHex(big) } });
    expect(declared.status).to.equal(413);
    expect(declared.headers.connection).to.equal('close');
    const streamed = await send(port, { chunks: [big.subarray(0, 800), big.subarray(800, 1600)], headers: { 'x-signature': hmacHex(big) } });
    expect(streamed.status).to.equal(413);
    expect(errors.map(([e, s]) => [e instanceof PayloadTooLargeError, s])).to.deep.equal([
      [true, 413],
      [true, 413],
    ]);
    // and the server still works
    const ok = await send(port, { body: body('delete.json'), headers: { 'x-signature': signatureOf('delete.json') } });
    expect(ok.status).to.equal(204);
  });

  it('answers 500 (no hang) when something read the body first, and warns once without onError', async () => {
    received = [];
    const handle = createWebhookHandler({ secret: SECRET, handler: (message) => void received.push(message) });
    server = createServer((req, res) => {
      req.resume(); // another piece of code drains the body
      req.on('end', () => void handle(req, res));
    });
    port = await listen(server);
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 2; i++) {
        const reply = await send(port, { body: body('delete.json'), headers: { 'x-signature': signatureOf('delete.json') } });
        expect(reply.status).to.equal(500);
      }
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(received).to.have.length(0);
    expect(warnings).to.have.length(1);
    expect(warnings[0]!.message).to.include('body parser');
    expect(warnings[0]!.message).to.not.include(SECRET);
  });

  it('never sends the secret back', async () => {
    await start();
    const replies = await Promise.all([
      send(port, { body: '{}', headers: { 'x-signature': hmacHex('{}') } }),
      send(port, { body: '{}' }),
      send(port, { method: 'PUT' }),
    ]);
    for (const reply of replies) expect(reply.body).to.not.include(SECRET);
  });
});
