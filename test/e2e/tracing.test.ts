// One trace from `analytics.track()` to the receiver's handler (issue 34), in one process with the
// OpenTelemetry SDK, its AsyncLocalStorage context manager and its in-memory exporter: a real
// client, a real forwarder (memory store) and a real receiver helper on 127.0.0.1, whose server
// answers the first webhook request 503 and hands the second to the helper (which answers 204).
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { SpanContext } from '@opentelemetry/api';
import { expect } from 'chai';
import { Analytics } from '../../packages/eventrelay/src/index';
import { createWebhookHandler } from '../../packages/eventrelay/src/webhooks';
import type { WebhookMessage } from '../../packages/eventrelay/src/webhooks';
import { createForwarder } from '../../packages/forwarder/src/service';
import type { Forwarder } from '../../packages/forwarder/src/service';
import { waitFor } from '../helpers/wait';
import { attributeTexts, startTracing, traceparentOf } from '../helpers/tracing';
import type { TestTracing } from '../helpers/tracing';

const SECRET = 'tracing-shared-secret';
const WRITE_KEY = 'tracing-write-key';

describe('tracing: one trace from track() to the receiver\'s handler (OpenTelemetry)', function () {
  this.timeout(30_000);
  let tracing: TestTracing;
  let receiver: Server;
  let forwarder: Forwarder;
  let url: string;
  const requests: IncomingHttpHeaders[] = [];
  const handled: { message: WebhookMessage; active: SpanContext | undefined }[] = [];

  before(async () => {
    tracing = startTracing();
    const handle = createWebhookHandler({
      secret: SECRET,
      handler: async (message) => {
        await Promise.resolve(); // the span stays active across the handler's awaits
        handled.push({ message, active: trace.getActiveSpan()?.spanContext() });
      },
    });
    receiver = createServer((req, res) => {
      requests.push(req.headers);
      if (requests.length === 1) {
        req.resume();
        res.writeHead(503).end();
        return;
      }
      void handle(req, res);
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/secret-path`;
    forwarder = createForwarder({
      storage: { type: 'memory' },
      delivery: { minRetryDelay: 10, maxRetryDelay: 40 },
      sources: [{ name: 'backend', writeKey: WRITE_KEY, destinations: { Webhooks: { sharedSecret: SECRET, webhooks: [{ url: hook }] } } }],
    });
    ({ url } = await forwarder.listen({ port: 0 }));
  });

  after(async () => {
    await forwarder?.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
    await tracing.stop();
  });

  it('the webhook requests\' traceparent, the forwarder\'s spans and the handler\'s active span all belong to the caller\'s trace; the attempts record a 503, then the helper\'s 2xx (204)', async () => {
    const analytics = new Analytics({ writeKey: WRITE_KEY, endpoint: url, flushAt: 1 });
    const tracer = trace.getTracer('checkout-service');
    const caller = tracer.startActiveSpan('POST /checkout', (span) => {
      analytics.track({ userId: 'u-1', event: 'Order Completed', properties: { total: 19.99, card: '4242' } });
      span.end();
      return span.spanContext();
    });
    await analytics.closeAndFlush({ timeout: 10_000 });
    await waitFor(() => tracing.named('eventrelay attempt').length === 2 && tracing.named('eventrelay handle').length === 1, 'two attempt spans and the handler span');

    // The client stamped the caller's span on the message; the handler got it in the body.
    expect(handled).to.have.length(1);
    const { message, active } = handled[0]!;
    expect(message.type === 'track' && message.context?.traceparent).to.equal(traceparentOf(caller));

    // Ingestion: a child of the caller's span (the batch held its one message).
    const [ingest, ...moreIngests] = tracing.named('eventrelay ingest');
    expect(moreIngests).to.have.length(0);
    expect(ingest!.spanContext().traceId).to.equal(caller.traceId);
    expect(ingest!.parentSpanContext?.spanId).to.equal(caller.spanId);
    expect(ingest!.kind).to.equal(SpanKind.SERVER);
    expect(ingest!.attributes).to.deep.include({ 'eventrelay.source': 'backend', 'eventrelay.batch.messages': 1, 'eventrelay.batch.accepted': 1, 'http.response.status_code': 200 });
    expect(ingest!.status.code).to.equal(SpanStatusCode.OK);

    // Each attempt: a child of the caller's span, the host, the attempt number, the status, the outcome.
    const attempts = tracing.named('eventrelay attempt').sort((a, b) => Number(a.attributes['eventrelay.attempt']) - Number(b.attributes['eventrelay.attempt']));
    const port = (receiver.address() as AddressInfo).port;
    expect(attempts.map((span) => span.attributes)).to.deep.equal([1, 2].map((attempt) => ({
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'server.port': port,
      'url.scheme': 'http',
      'eventrelay.attempt': attempt,
      'eventrelay.message.id': (message as { messageId?: string }).messageId,
      'http.response.status_code': attempt === 1 ? 503 : 204,
      ...(attempt === 1 ? { 'error.type': '503' } : {}),
    })));
    expect(attempts.map((span) => span.status)).to.deep.equal([{ code: SpanStatusCode.ERROR, message: 'HTTP 503' }, { code: SpanStatusCode.OK }]);
    for (const span of attempts) {
      expect(span.kind).to.equal(SpanKind.CLIENT);
      expect(span.spanContext().traceId).to.equal(caller.traceId);
      expect(span.parentSpanContext?.spanId).to.equal(caller.spanId);
    }

    // Each webhook request carried its own attempt's span as traceparent.
    expect(requests.map((headers) => headers.traceparent)).to.deep.equal(attempts.map((span) => traceparentOf(span.spanContext())));

    // The handler ran inside a span of that trace, a child of the attempt that reached it.
    const [handlerSpan] = tracing.named('eventrelay handle');
    expect(active?.traceId).to.equal(caller.traceId);
    expect(active?.spanId).to.equal(handlerSpan!.spanContext().spanId);
    expect(handlerSpan!.parentSpanContext?.spanId).to.equal(attempts[1]!.spanContext().spanId);
    expect(handlerSpan!.attributes).to.deep.equal({ 'eventrelay.message.type': 'track', 'eventrelay.message.id': (message as { messageId?: string }).messageId });
    expect(handlerSpan!.status.code).to.equal(SpanStatusCode.OK);

    // Every span the three parts recorded is in the caller's trace.
    expect(new Set(tracing.spans().map((span) => span.spanContext().traceId))).to.deep.equal(new Set([caller.traceId]));

    // Never a secret, a write key, a URL's path or a piece of the body in what an exporter sends.
    const texts = attributeTexts(tracing.spans()).join('\n');
    for (const secret of [SECRET, WRITE_KEY, Buffer.from(`${WRITE_KEY}:`).toString('base64'), 'secret-path', 'Order Completed', '4242', '19.99', 'u-1']) {
      expect(texts, secret).to.not.include(secret);
    }
  });
});
