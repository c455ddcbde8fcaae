import { expect } from 'chai';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import { fastifyWebhook } from '../../../src/webhooks/adapters/fastify';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import { body, hmacHex, SECRET, signatureOf } from '../../fixtures/webhooks/load';
import { send } from './http-helpers';

describe('fastifyWebhook (Fastify 5 plugin, real server on 127.0.0.1)', () => {
  let app: FastifyInstance | undefined;
  let received: WebhookMessage[];

  async function start(options: { maxBodySize?: number } = {}): Promise<number> {
    received = [];
    app = Fastify();
    await app.register(fastifyWebhook, {
      prefix: '/webhooks',
      secret: SECRET,
      handler: (message) => void received.push(message),
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

  it('answers 413 over maxBodySize', async () => {
    const port = await start({ maxBodySize: 50 });
    const raw = body('track-compact.json');
    expect((await send(port, { path: '/webhooks', body: raw, headers: { 'x-signature': hmacHex(raw) } })).status).to.equal(413);
    expect(received).to.have.length(0);
  });
});
