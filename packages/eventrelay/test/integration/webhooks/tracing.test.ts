import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { SpanContext } from '@opentelemetry/api';
import { expect } from 'chai';
import express from 'express';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import { setOpenTelemetryLoader } from '../../../src/internal/opentelemetry';
import { webhookMiddleware } from '../../../src/webhooks/adapters/express';
import { fastifyWebhook } from '../../../src/webhooks/adapters/fastify';
import { createFetchHandler } from '../../../src/webhooks/adapters/fetch';
import { createWebhookHandler } from '../../../src/webhooks/adapters/node';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import { body, SECRET, signatureOf } from '../../fixtures/webhooks/load';
import { startTracing } from '../../../../../test/helpers/tracing';
import type { TestTracing } from '../../../../../test/helpers/tracing';
import { close, listen, send } from './http-helpers';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SENDER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${SENDER_SPAN}-01`;
const FIXTURE = 'track-compact.json';

type Handler = (message: WebhookMessage) => Promise<void>;

/** An adapter serving `handler`: `post(headers)` sends the signed fixture with those headers and resolves with the status. */
interface Served {
  post(headers: Record<string, string>): Promise<number>;
  stop(): Promise<void>;
}

const ADAPTERS: Record<string, (handler: Handler) => Promise<Served>> = {
  async 'Node http (createWebhookHandler)'(handler) {
    const handle = createWebhookHandler({ secret: SECRET, handler });
    return overHttp(createServer((req, res) => void handle(req, res)), '/');
  },
  async 'Express (webhookMiddleware)'(handler) {
    const app = express();
    app.post('/webhooks', webhookMiddleware({ secret: SECRET, handler }));
    return overHttp(createServer(app), '/webhooks');
  },
  async 'Fastify (fastifyWebhook)'(handler) {
    const app: FastifyInstance = Fastify();
    await app.register(fastifyWebhook, { prefix: '/webhooks', secret: SECRET, handler });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return {
      post: async (headers) => (await send(address.port, { path: '/webhooks', body: body(FIXTURE), headers: signed(headers) })).status,
      stop: () => app.close(),
    };
  },
  async 'Fetch (createFetchHandler)'(handler) {
    const handle = createFetchHandler({ secret: SECRET, handler });
    return {
      post: async (headers) => (await handle(new Request('http://127.0.0.1/webhooks', { method: 'POST', body: body(FIXTURE), headers: signed(headers) }))).status,
      stop: async () => {},
    };
  },
};

function signed(headers: Record<string, string>): Record<string, string> {
  return { 'content-type': 'application/json', 'x-signature': signatureOf(FIXTURE), ...headers };
}

async function overHttp(server: Server, path: string): Promise<Served> {
  const port = await listen(server);
  return {
    post: async (headers) => (await send(port, { path, body: body(FIXTURE), headers: signed(headers) })).status,
    stop: () => close(server),
  };
}

describe('the receiver helper and OpenTelemetry: the handler runs in a span of the sender\'s trace', () => {
  let tracing: TestTracing;
  let served: Served | undefined;

  beforeEach(() => {
    tracing = startTracing();
  });

  afterEach(async () => {
    await served?.stop();
    served = undefined;
    setOpenTelemetryLoader();
    await tracing.stop();
  });

  for (const [adapter, serve] of Object.entries(ADAPTERS)) {
    describe(adapter, () => {
      it('with a traceparent header, the handler\'s active span is a child of the sender\'s span; the span ends OK', async () => {
        const seen: (SpanContext | undefined)[] = [];
        served = await serve(async () => {
          await new Promise((resolve) => setImmediate(resolve));
          seen.push(trace.getActiveSpan()?.spanContext());
        });
        expect(await served.post({ traceparent: TRACEPARENT, tracestate: 'vendor=abc' })).to.equal(204);
        const [span, ...others] = tracing.named('eventrelay handle');
        expect(others).to.have.length(0);
        expect(seen).to.deep.equal([span!.spanContext()]);
        expect(span!.spanContext().traceId).to.equal(TRACE_ID);
        expect(span!.spanContext().traceState?.serialize()).to.equal('vendor=abc');
        expect(span!.parentSpanContext).to.include({ spanId: SENDER_SPAN, isRemote: true });
        expect(span!.kind).to.equal(SpanKind.SERVER);
        expect(span!.attributes).to.deep.equal({ 'eventrelay.message.type': 'track', 'eventrelay.message.id': 'msg-0001' });
        expect(span!.status).to.deep.equal({ code: SpanStatusCode.OK });
      });

      it('a handler that throws: 500, and the span ends ERROR with the error\'s name only', async () => {
        served = await serve(async () => {
          throw new RangeError('card 4242 declined');
        });
        expect(await served.post({ traceparent: TRACEPARENT })).to.equal(500);
        const [span] = tracing.named('eventrelay handle');
        expect(span!.status).to.deep.equal({ code: SpanStatusCode.ERROR, message: 'RangeError' });
        expect(span!.events).to.deep.equal([]);
      });

      it('without a traceparent header, or with an invalid one, no span', async () => {
        const seen: (SpanContext | undefined)[] = [];
        served = await serve(async () => void seen.push(trace.getActiveSpan()?.spanContext()));
        expect(await served.post({})).to.equal(204);
        expect(await served.post({ traceparent: `00-${TRACE_ID.toUpperCase()}-${SENDER_SPAN}-01` })).to.equal(204);
        expect(seen).to.deep.equal([undefined, undefined]);
        expect(tracing.spans()).to.deep.equal([]);
      });

      it('without @opentelemetry/api, handles the request as before', async () => {
        setOpenTelemetryLoader(() => undefined);
        const seen: WebhookMessage[] = [];
        served = await serve(async (message) => void seen.push(message));
        expect(await served.post({ traceparent: TRACEPARENT })).to.equal(204);
        expect(seen.map((m) => m.type)).to.deep.equal(['track']);
        expect(tracing.spans()).to.deep.equal([]);
      });
    });
  }

  it('inside a span of the same trace already active (an HTTP server instrumentation\'s), the handler\'s span is its child', async () => {
    const handle = createWebhookHandler({ secret: SECRET, handler: async () => {} });
    const remote = trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE_ID, spanId: SENDER_SPAN, traceFlags: 1, isRemote: true });
    // What @opentelemetry/instrumentation-http does: a server span from the header, active while the listener runs.
    served = await overHttp(createServer((req, res) => {
      const server = trace.getTracer('instrumentation-http').startSpan('POST', { kind: SpanKind.SERVER }, remote);
      res.on('finish', () => server.end());
      context.with(trace.setSpan(remote, server), () => void handle(req, res));
    }), '/');
    expect(await served.post({ traceparent: TRACEPARENT })).to.equal(204);
    const [http] = tracing.named('POST');
    const [span] = tracing.named('eventrelay handle');
    expect(span!.parentSpanContext?.spanId).to.equal(http!.spanContext().spanId);
    expect(span!.kind).to.equal(SpanKind.INTERNAL);
    expect(span!.spanContext().traceId).to.equal(TRACE_ID);
  });
});
