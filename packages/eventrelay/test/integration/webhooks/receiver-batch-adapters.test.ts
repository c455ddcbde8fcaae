// Issue 45: a batch body (a JSON array of messages) through each of the four adapters, each on a
// real server on 127.0.0.1 (Express 5 and Fastify 5 themselves; the Fetch handler behind a
// node:http server that turns each request into a `Request`).
import { expect } from 'chai';
import express from 'express';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import { createServer, IncomingMessage } from 'node:http';
import type { Server } from 'node:http';
import { Readable } from 'node:stream';
import { PayloadTooLargeError, WebhookMessageError } from '../../../src/errors';
import { webhookMiddleware } from '../../../src/webhooks/adapters/express';
import { fastifyWebhook } from '../../../src/webhooks/adapters/fastify';
import { createFetchHandler } from '../../../src/webhooks/adapters/fetch';
import { createWebhookHandler } from '../../../src/webhooks/adapters/node';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import type { WebhookBatchHandler, WebhookHandler } from '../../../src/webhooks/options';
import { hmacHex, SECRET } from '../../fixtures/webhooks/load';
import { close, listen, send } from './http-helpers';
import type { Reply } from './http-helpers';

const TS = '2026-03-01T12:34:56.789Z';

function track(n: number): Record<string, unknown> {
  return { version: 1, type: 'track', userId: `u${n % 3}`, timestamp: TS, event: `E${n}`, properties: { n }, messageId: `m-${n}` };
}

function batchOf(messages: readonly unknown[]): string {
  return `[${messages.map((m) => JSON.stringify(m)).join(',')}]`;
}

const MESSAGES = [track(1), track(2), { version: 1, type: 'group', userId: 'u1', timestamp: TS, groupId: 'g1', traits: {} }, track(3)];
const RAW = batchOf(MESSAGES);

/** What every adapter's handlers are given here: the adapter's context is checked by `sawContext`. */
interface Handlers {
  readonly handler?: WebhookHandler<object>;
  readonly batchHandler?: WebhookBatchHandler<object>;
  readonly maxBodySize?: number;
  readonly onError?: (error: unknown, status: number) => void;
}

interface Adapter {
  readonly name: string;
  /** Starts a server with the adapter on `/webhooks`; returns its port. */
  start(handlers: Handlers): Promise<number>;
  stop(): Promise<void>;
  /** Whether a handler's context is the one this adapter documents. */
  sawContext(context: object): boolean;
}

function nodeServer(listener: ConstructorParameters<typeof Server>[1]): { server: Server; stop: () => Promise<void> } {
  const server = createServer(listener);
  return { server, stop: () => close(server) };
}

const adapters: Adapter[] = [
  (() => {
    let stop = async () => {};
    return {
      name: 'Node http (createWebhookHandler)',
      async start(handlers: Handlers) {
        const handle = createWebhookHandler({ secret: SECRET, ...(handlers as { handler: WebhookHandler<object> }) });
        const made = nodeServer((req, res) => void handle(req, res));
        stop = made.stop;
        return listen(made.server);
      },
      stop: () => stop(),
      sawContext: (context: object) => 'request' in context && context.request instanceof IncomingMessage && 'response' in context,
    };
  })(),
  (() => {
    let stop = async () => {};
    return {
      name: 'Express 5 (webhookMiddleware)',
      async start(handlers: Handlers) {
        const app = express();
        app.post('/webhooks', webhookMiddleware({ secret: SECRET, ...(handlers as { handler: WebhookHandler<object> }) }));
        const made = nodeServer(app);
        stop = made.stop;
        return listen(made.server);
      },
      stop: () => stop(),
      sawContext: (context: object) => 'request' in context && context.request instanceof IncomingMessage && 'response' in context,
    };
  })(),
  (() => {
    let app: FastifyInstance | undefined;
    return {
      name: 'Fastify 5 (fastifyWebhook)',
      async start(handlers: Handlers) {
        app = Fastify();
        await app.register(fastifyWebhook, { prefix: '/webhooks', secret: SECRET, ...(handlers as { handler: WebhookHandler<object> }) });
        await app.listen({ port: 0, host: '127.0.0.1' });
        const address = app.server.address();
        if (address === null || typeof address === 'string') throw new Error('no port');
        return address.port;
      },
      stop: async () => {
        await app?.close();
        app = undefined;
      },
      sawContext: (context: object) => 'request' in context && 'reply' in context,
    };
  })(),
  (() => {
    let stop = async () => {};
    return {
      name: 'Fetch (createFetchHandler)',
      async start(handlers: Handlers) {
        const handle = createFetchHandler({ secret: SECRET, ...(handlers as { handler: WebhookHandler<object> }) });
        const made = nodeServer((req, res) => {
          const request = new Request(`http://127.0.0.1${req.url}`, {
            method: req.method,
            headers: req.headers as Record<string, string>,
            body: Readable.toWeb(req) as ReadableStream,
            duplex: 'half',
          } as RequestInit);
          void handle(request).then(async (response) => {
            res.writeHead(response.status, Object.fromEntries(response.headers));
            res.end(Buffer.from(await response.arrayBuffer()));
          });
        });
        stop = made.stop;
        return listen(made.server);
      },
      stop: () => stop(),
      sawContext: (context: object) => 'request' in context && context.request instanceof Request,
    };
  })(),
];

for (const adapter of adapters) {
  describe(`a batch body through ${adapter.name} (issue 45)`, () => {
    let port = 0;
    let handled: WebhookMessage[];
    let contexts: object[];
    let errors: [unknown, number][];

    async function start(handlers: Handlers = {}): Promise<void> {
      handled = [];
      contexts = [];
      errors = [];
      port = await adapter.start({
        handler: (message, context) => {
          handled.push(message);
          contexts.push(context);
        },
        onError: (error, status) => void errors.push([error, status]),
        ...handlers,
      });
    }

    const post = (raw: string, signature = hmacHex(raw)): Promise<Reply> => send(port, { path: '/webhooks', body: raw, headers: { 'x-signature': signature } });

    afterEach(() => adapter.stop());

    it('calls handler once per message, in order, with the adapter\'s context; 204', async () => {
      await start();
      const reply = await post(RAW);
      expect(reply.status).to.equal(204);
      expect(handled).to.deep.equal(MESSAGES);
      expect(contexts.every((c) => adapter.sawContext(c))).to.equal(true);
      expect(errors).to.deep.equal([]);
    });

    it('gives the whole batch to batchHandler, with the adapter\'s context', async () => {
      const batches: WebhookMessage[][] = [];
      await start({
        handler: undefined,
        batchHandler: (messages, context) => {
          batches.push(messages);
          contexts.push(context);
        },
      });
      expect((await post(RAW)).status).to.equal(204);
      expect(batches).to.deep.equal([MESSAGES]);
      expect(adapter.sawContext(contexts[0]!)).to.equal(true);
      expect(handled).to.deep.equal([]);
    });

    it('answers 401 to a batch with one byte changed after signing, handling nothing', async () => {
      await start();
      const tampered = RAW.replace('"E2"', '"E5"');
      expect((await post(tampered, hmacHex(RAW))).status).to.equal(401);
      expect(handled).to.deep.equal([]);
    });

    it('answers 400 naming the element for an empty array or an element that is not a message', async () => {
      await start();
      const empty = await post('[]');
      expect(empty.status).to.equal(400);
      expect(JSON.parse(empty.body).error).to.include('empty array');
      const withNumber = await post(batchOf([track(1), 7]));
      expect(withNumber.status).to.equal(400);
      expect(JSON.parse(withNumber.body).error).to.include('element 1 of the batch');
      const broken = await post(batchOf([track(1), { ...track(2), userId: 5 }]));
      expect(broken.status).to.equal(400);
      expect(errors.map(([error]) => (error as WebhookMessageError).field)).to.deep.equal([undefined, '[1]', '[1].userId']);
      expect(handled).to.deep.equal([]);
    });

    it('answers 500 when the handler throws on a message, skipping the rest; the same bytes again are handled whole', async () => {
      let fail = true;
      await start({
        handler: (message) => {
          handled.push(message);
          if (fail && handled.length === 2) throw new Error('storage unavailable');
        },
      });
      const first = await post(RAW);
      expect(first.status).to.equal(500);
      expect(first.body).to.not.include('storage unavailable');
      expect(handled).to.deep.equal(MESSAGES.slice(0, 2));
      fail = false;
      handled.length = 0;
      expect((await post(RAW)).status).to.equal(204);
      expect(handled).to.deep.equal(MESSAGES);
    });

    it('a huge array: limited by maxBodySize like any body (413), handled whole under it', async () => {
      const many = Array.from({ length: 2000 }, (_, i) => track(i));
      const raw = batchOf(many);
      await start({ maxBodySize: Buffer.byteLength(raw) - 1 });
      expect((await post(raw)).status).to.equal(413);
      expect(errors[0]![0]).to.be.instanceOf(PayloadTooLargeError);
      expect(handled).to.deep.equal([]);
      await adapter.stop();
      await start({ maxBodySize: Buffer.byteLength(raw) });
      expect((await post(raw)).status).to.equal(204);
      expect(handled).to.have.length(2000);
      expect(handled[1999]).to.deep.equal(many[1999]);
    });
  });
}
