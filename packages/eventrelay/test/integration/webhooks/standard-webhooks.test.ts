import { expect } from 'chai';
import express from 'express';
import type { ErrorRequestHandler } from 'express';
import Fastify from 'fastify';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { WebhookTimestampError } from '../../../src/errors';
import { webhookMiddleware } from '../../../src/webhooks/adapters/express';
import { fastifyWebhook } from '../../../src/webhooks/adapters/fastify';
import { createFetchHandler } from '../../../src/webhooks/adapters/fetch';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import { createWebhookHandler } from '../../../src/webhooks/adapters/node';
import type { WebhookReceiverOptions } from '../../../src/webhooks/options';
import { body, SECRET } from '../../fixtures/webhooks/load';
import { close, listen, send } from './http-helpers';

const WHSEC = `whsec_${Buffer.from('an-example-key-of-32-bytes------').toString('base64')}`;
const RAW = body('identify-escapes.json');

/** Headers made by the independent `standardwebhooks` package, at `at` (default now). */
function signedByPackage(at = new Date()): Record<string, string> {
  return {
    'webhook-id': 'msg_2Kx',
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(WHSEC).sign('msg_2Kx', at, RAW.toString('utf8')),
  };
}

type Start = (options: WebhookReceiverOptions<never>) => Promise<{ port: number; path: string; stop: () => Promise<void> }>;

const adapters: Record<string, Start> = {
  'createWebhookHandler (Node http)': async (options) => {
    const server = createServer(createWebhookHandler(options as never));
    return { port: await listen(server), path: '/', stop: () => close(server) };
  },
  'webhookMiddleware (Express)': async (options) => {
    const app = express();
    app.post('/webhooks', webhookMiddleware(options as never));
    const server = createServer(app);
    return { port: await listen(server), path: '/webhooks', stop: () => close(server) };
  },
  'fastifyWebhook (Fastify)': async (options) => {
    const app = Fastify();
    await app.register(fastifyWebhook, { prefix: '/webhooks', ...(options as object) } as never);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return { port: address.port, path: '/webhooks', stop: () => app.close() };
  },
  'createFetchHandler (Fetch, behind node:http)': async (options) => {
    const handle = createFetchHandler(options as never);
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
        void handle(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: Buffer.concat(chunks) })).then(async (response) => {
          res.writeHead(response.status).end(Buffer.from(await response.arrayBuffer()));
        });
      });
    });
    return { port: await listen(server), path: '/', stop: () => close(server) };
  },
};

describe('every adapter verifies Standard Webhooks signatures made by the standardwebhooks package', () => {
  for (const [name, start] of Object.entries(adapters)) {
    it(`${name}: 204 signed now, 401 unsigned or replayed after the tolerance`, async () => {
      const handled: WebhookMessage[] = [];
      const errors: [unknown, number][] = [];
      const running = await start({
        secret: WHSEC,
        scheme: 'standard-webhooks',
        handler: (message) => void handled.push(message),
        onError: (error, status) => void errors.push([error, status]),
      });
      try {
        const ok = await send(running.port, { path: running.path, body: RAW, headers: signedByPackage() });
        expect(ok.status).to.equal(204);
        expect(handled.map((m) => m.type)).to.deep.equal(['identify']);
        const unsigned = await send(running.port, { path: running.path, body: RAW });
        expect(unsigned.status).to.equal(401);
        const replay = await send(running.port, { path: running.path, body: RAW, headers: signedByPackage(new Date(Date.now() - 6 * 60_000)) });
        expect(replay.status).to.equal(401);
        expect(handled).to.have.length(1);
        expect(errors.map(([, status]) => status)).to.deep.equal([401, 401]);
        expect(errors[1]![0]).to.be.instanceOf(WebhookTimestampError);
      } finally {
        await running.stop();
      }
    });
  }
});

describe('webhookMiddleware: a failure while writing the answer (issue 9.12)', () => {
  let server: Server | undefined;
  afterEach(async () => {
    if (server) await close(server);
    server = undefined;
  });

  it('goes to next(error), never to an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const routeErrors: unknown[] = [];
    const broken = new Error('writeHead broke');
    const app = express();
    app.post(
      '/webhooks',
      webhookMiddleware({
        secret: SECRET,
        // A handler that breaks the response object: writing the 401 answer then throws.
        onError: () => {},
        handler: () => {},
      }),
    );
    app.use(((error, _req, res, _next) => {
      routeErrors.push(error);
      res.destroy();
    }) as ErrorRequestHandler);
    server = createServer((req, res) => {
      res.writeHead = () => {
        throw broken;
      };
      app(req, res);
    });
    const port = await listen(server);
    try {
      void send(port, { path: '/webhooks', body: RAW }).catch(() => undefined);
      // Whichever way the error goes, it goes there within the request; poll for either.
      for (let i = 0; i < 500 && routeErrors.length + unhandled.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(routeErrors).to.deep.equal([broken]);
    expect(unhandled).to.deep.equal([]);
  });
});
