import { expect } from 'chai';
import express from 'express';
import type { ErrorRequestHandler } from 'express';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { InvalidArgumentError, TimeoutError } from '../../../src/errors';
import { webhookMiddleware } from '../../../src/webhooks/adapters/express';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import { body, hmacHex, SECRET, signatureOf } from '../../fixtures/webhooks/load';
import { close, listen, send } from './http-helpers';
import { trickle } from './trickle';

describe('webhookMiddleware (Express 5, real server on 127.0.0.1)', () => {
  let server: Server | undefined;
  let received: WebhookMessage[];
  let routeErrors: unknown[];

  const handler = (message: WebhookMessage): void => void received.push(message);
  const recordErrors: ErrorRequestHandler = (error, _req, res, _next) => {
    routeErrors.push(error);
    res.status(500).json({ error: 'setup error' });
  };

  async function start(app: express.Express): Promise<number> {
    received = [];
    routeErrors = [];
    server = createServer(app);
    return listen(server);
  }

  afterEach(async () => {
    if (server) await close(server);
    server = undefined;
  });

  it('works mounted before express.json(), which the other routes keep using', async () => {
    const app = express();
    app.post('/webhooks', webhookMiddleware({ secret: SECRET, handler }));
    app.use(express.json());
    app.post('/api/echo', (req, res) => void res.json({ parsed: req.body }));
    const port = await start(app);

    const signed = await send(port, { path: '/webhooks', body: body('track-whitespace.json'), headers: { 'x-signature': signatureOf('track-whitespace.json') } });
    expect(signed.status).to.equal(204);
    expect(received[0]).to.include({ type: 'track', event: 'Order Completed' });

    const unsigned = await send(port, { path: '/webhooks', body: body('track-whitespace.json') });
    expect(unsigned.status).to.equal(401);

    const echo = await send(port, { path: '/api/echo', body: '{"a":1}' });
    expect(JSON.parse(echo.body)).to.deep.equal({ parsed: { a: 1 } });
  });

  it('uses the Buffer of express.raw() when that ran first', async () => {
    const app = express();
    app.post('/webhooks', express.raw({ type: '*/*' }), webhookMiddleware({ secret: SECRET, handler }));
    const port = await start(app);
    const reply = await send(port, { path: '/webhooks', body: body('identify-escapes.json'), headers: { 'x-signature': signatureOf('identify-escapes.json') } });
    expect(reply.status).to.equal(204);
    expect(received[0]).to.include({ type: 'identify', userId: 'café-7' });
  });

  it('passes a clear error to next() when express.json() consumed the body, instead of hanging', async () => {
    const app = express();
    app.use(express.json());
    app.post('/webhooks', webhookMiddleware({ secret: SECRET, handler }));
    app.use(recordErrors);
    const port = await start(app);
    const reply = await send(port, { path: '/webhooks', body: body('track-compact.json'), headers: { 'x-signature': signatureOf('track-compact.json') } });
    expect(reply.status).to.equal(500);
    expect(routeErrors).to.have.length(1);
    expect(routeErrors[0]).to.be.instanceOf(InvalidArgumentError);
    expect((routeErrors[0] as Error).message).to.include('express.json()').and.include('Mount the webhook route before');
    expect(received).to.have.length(0);
  });

  it('reads the body itself when a global express.json() skipped it (another content type)', async () => {
    const app = express();
    app.use(express.json());
    app.post('/webhooks', webhookMiddleware({ secret: SECRET, handler }));
    const port = await start(app);
    const reply = await send(port, {
      path: '/webhooks',
      body: body('alias.json'),
      headers: { 'content-type': 'application/octet-stream', 'x-signature': signatureOf('alias.json') },
    });
    expect(reply.status).to.equal(204);
  });

  it('answers 400 to a signed invalid message and 413 over maxBodySize (also for an express.raw() Buffer)', async () => {
    const app = express();
    app.post('/webhooks', webhookMiddleware({ secret: SECRET, handler, maxBodySize: 64 }));
    app.post('/raw', express.raw({ type: '*/*' }), webhookMiddleware({ secret: SECRET, handler, maxBodySize: 64 }));
    const port = await start(app);
    const invalid = '{"type":"page"}';
    expect((await send(port, { path: '/webhooks', body: invalid, headers: { 'x-signature': hmacHex(invalid) } })).status).to.equal(400);
    const big = body('track-compact.json');
    expect((await send(port, { path: '/webhooks', body: big, headers: { 'x-signature': hmacHex(big) } })).status).to.equal(413);
    expect((await send(port, { path: '/raw', body: big, headers: { 'x-signature': hmacHex(big) } })).status).to.equal(413);
  });

  it('answers 503 at `timeout` while the body is still trickling in, and never calls the handler', async () => {
    const errors: [unknown, number][] = [];
    const app = express();
    app.post('/webhooks', webhookMiddleware({ secret: SECRET, handler, timeout: 200, onError: (error, status) => void errors.push([error, status]) }));
    const port = await start(app);
    const reply = await trickle(port, { path: '/webhooks', body: body('track-compact.json'), headers: { 'x-signature': signatureOf('track-compact.json') } });
    expect(reply.status).to.equal(503);
    expect(received).to.have.length(0);
    expect(errors.map(([e, s]) => [e instanceof TimeoutError, s])).to.deep.equal([[true, 503]]);
  });
});
