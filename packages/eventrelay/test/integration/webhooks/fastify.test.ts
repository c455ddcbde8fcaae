import { expect } from 'chai';
import Fastify from 'fastify';
import { createGunzip, gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { PayloadTooLargeError, TimeoutError } from '../../../src/errors';
import { fastifyWebhook } from '../../../src/webhooks/adapters/fastify';
import type { FastifyWebhookOptions } from '../../../src/webhooks/adapters/fastify';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import { body, hmacHex, SECRET, signatureOf } from '../../fixtures/webhooks/load';
import { send } from './http-helpers';
import { trickle } from './trickle';

describe('fastifyWebhook (Fastify 5 plugin, real server on 127.0.0.1)', () => {
  let app: FastifyInstance | undefined;
  let received: WebhookMessage[];
  let errors: [unknown, number][];

  async function start(options: Partial<FastifyWebhookOptions> = {}): Promise<number> {
    received = [];
    errors = [];
    app = Fastify();
    await app.register(fastifyWebhook, {
      prefix: '/webhooks',
      secret: SECRET,
      handler: (message) => void received.push(message),
      onError: (error, status) => void errors.push([error, status]),
      ...options,
    });
    app.post('/api/echo', async (request) => ({ parsed: request.body }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return address.port;
  }

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('verifies the raw bytes on its route while the app\'s other routes still parse JSON', async () => {
    const port = await start();
    const signed = await send(port, { path: '/webhooks', body: body('page-emoji-u2028.json'), headers: { 'x-signature': signatureOf('page-emoji-u2028.json') } });
    expect(signed.status).to.equal(204);
    expect(received[0]).to.include({ type: 'page' });
    const echo = await send(port, { path: '/api/echo', body: '{ "a" : 1 }' });
    expect(echo.status).to.equal(200);
    expect(JSON.parse(echo.body)).to.deep.equal({ parsed: { a: 1 } });
  });

  it('answers 401 unsigned, 400 invalid, whatever the content type', async () => {
    const port = await start();
    expect((await send(port, { path: '/webhooks', body: body('track-compact.json') })).status).to.equal(401);
    const invalid = '{"type":"group","version":1}';
    expect((await send(port, { path: '/webhooks', body: invalid, headers: { 'x-signature': hmacHex(invalid) } })).status).to.equal(400);
    const asText = await send(port, {
      path: '/webhooks',
      body: body('delete.json'),
      headers: { 'content-type': 'text/plain; charset=utf-8', 'x-signature': signatureOf('delete.json') },
    });
    expect(asText.status).to.equal(204);
  });

  it('answers 413 over maxBodySize, from Content-Length or while streaming, and reports it to onError', async () => {
    const port = await start({ maxBodySize: 50 });
    const raw = body('track-compact.json');
    // Answered unread: the connection is closed, also for a client that asked to keep it.
    const declared = await send(port, { path: '/webhooks', body: raw, headers: { 'x-signature': hmacHex(raw), connection: 'keep-alive' } });
    expect(declared.status).to.equal(413);
    expect(declared.headers.connection).to.equal('close');
    const streamed = await send(port, { path: '/webhooks', chunks: [raw.subarray(0, 40), raw.subarray(40)], headers: { 'x-signature': hmacHex(raw) } });
    expect(streamed.status).to.equal(413);
    expect(received).to.have.length(0);
    expect(errors.map(([e, s]) => [e instanceof PayloadTooLargeError, s])).to.deep.equal([
      [true, 413],
      [true, 413],
    ]);
  });

  it('hands the handler the body\'s bytes in context.request.body', async () => {
    const bodies: unknown[] = [];
    const port = await start({ handler: (_message, context) => void bodies.push(context.request.body) });
    const raw = body('identify-escapes.json');
    expect((await send(port, { path: '/webhooks', body: raw, headers: { 'x-signature': signatureOf('identify-escapes.json') } })).status).to.equal(204);
    expect(Buffer.isBuffer(bodies[0])).to.equal(true);
    expect((bodies[0] as Buffer).equals(raw)).to.equal(true);
  });

  it('reads what an app-level preParsing hook puts in place of the request (here, a gzip decoder)', async () => {
    received = [];
    errors = [];
    app = Fastify();
    app.addHook('preParsing', async (request, _reply, payload) => (request.headers['content-encoding'] === 'gzip' ? payload.pipe(createGunzip()) : payload));
    await app.register(fastifyWebhook, { prefix: '/webhooks', secret: SECRET, handler: (message) => void received.push(message) });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    const raw = body('alias.json');
    const reply = await send(port, { path: '/webhooks', body: gzipSync(raw), headers: { 'content-encoding': 'gzip', 'x-signature': signatureOf('alias.json') } });
    expect(reply.status).to.equal(204);
    expect(received[0]).to.include({ type: 'alias' });
  });

  it('answers 503 at `timeout` while the body is still trickling in, and never calls the handler', async () => {
    const port = await start({ timeout: 200 });
    const reply = await trickle(port, { path: '/webhooks', body: body('track-compact.json'), headers: { 'x-signature': signatureOf('track-compact.json') } });
    expect(reply.status).to.equal(503);
    expect(received).to.have.length(0);
    expect(errors.map(([e, s]) => [e instanceof TimeoutError, s])).to.deep.equal([[true, 503]]);
  });
});
