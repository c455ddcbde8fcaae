import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { SpanContext } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { expect } from 'chai';
import { ConfigError, setOpenTelemetryLoader } from 'eventrelay/internal';
import { WebhookDestination } from '../../src/delivery/destination';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { MAX_LINKS, tracing as operatorTracing } from '../../src/tracing';
import { startTracing, traceparentOf } from '../../../../test/helpers/tracing';
import type { TestTracing } from '../../../../test/helpers/tracing';
import { basic, post, useReceiver, waitFor } from './helpers';

const WRITE_KEY = 'trace-key';
const TRACE_A = '0af7651916cd43dd8448eb211c80319c';
const TRACE_B = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_A = 'b7ad6b7169203331';
const SPAN_B = '00f067aa0ba902b7';
const traceparent = (traceId: string, spanId: string) => `00-${traceId}-${spanId}-01`;

function track(id: string, context?: Record<string, unknown>): Record<string, unknown> {
  return { type: 'track', userId: 'u-1', event: 'Traced', messageId: id, ...(context === undefined ? {} : { context }) };
}

const spanOf = (span: ReadableSpan): SpanContext => span.spanContext();

describe('the forwarder and OpenTelemetry (tracing.ts: ingestion and attempt spans, traceparent on each webhook request)', function () {
  this.timeout(20_000);
  const receiver = useReceiver();
  let forwarder: Forwarder | undefined;
  let tracing: TestTracing | undefined;
  let url: string;

  async function start(): Promise<void> {
    forwarder = createForwarder({
      storage: { type: 'memory' },
      delivery: { minRetryDelay: 10, maxRetryDelay: 40 },
      sources: [{ name: 'web', writeKey: WRITE_KEY, destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/hook` }] } } }],
    });
    ({ url } = await forwarder.listen({ port: 0 }));
  }

  /** Posts a batch and waits until the receiver has a 2xx for every message of it. */
  async function deliver(batch: Record<string, unknown>[], headers: Record<string, string> = {}, extra: Record<string, unknown> = {}): Promise<void> {
    const answer = await post(`${url}/v1/batch`, { batch, ...extra }, { authorization: basic(WRITE_KEY), ...headers });
    expect(answer.status).to.equal(200);
    const ids = batch.map((m) => m.messageId);
    await waitFor(() => ids.every((id) => receiver.delivered.some((r) => r.json.messageId === id)), 'every message delivered');
  }

  const requestOf = (id: string) => receiver.requests.find((r) => r.json.messageId === id)!;

  afterEach(async () => {
    await forwarder?.close();
    forwarder = undefined;
    setOpenTelemetryLoader();
    await tracing?.stop();
    tracing = undefined;
  });

  describe('off: no tracer provider registered (the default)', () => {
    it('records nothing and adds no header; the body keeps the context its message came with, and gets none', async () => {
      expect(operatorTracing()).to.equal(undefined);
      await start();
      const carried = traceparent(TRACE_A, SPAN_A);
      await deliver([track('with', { traceparent: carried, tracestate: 'vendor=1' }), track('without')]);
      expect(requestOf('with').headers).to.not.have.any.keys('traceparent', 'tracestate');
      expect(requestOf('with').json.context).to.deep.equal({ traceparent: carried, tracestate: 'vendor=1', ip: '127.0.0.1' });
      expect(requestOf('without').headers).to.not.have.property('traceparent');
      // Only the sender's address (context.ip): no trace context.
      expect(requestOf('without').json.context).to.deep.equal({ ip: '127.0.0.1' });
    });

    it('without @opentelemetry/api, the same, even where the application registered a provider', async () => {
      tracing = startTracing();
      setOpenTelemetryLoader(() => undefined);
      await start();
      await deliver([track('absent', { traceparent: traceparent(TRACE_A, SPAN_A) })]);
      expect(requestOf('absent').headers).to.not.have.property('traceparent');
      expect(tracing.spans()).to.deep.equal([]);
    });
  });

  it('a tracer provider registered while the forwarder runs is used from then on', async () => {
    await start();
    await deliver([track('before')]);
    tracing = startTracing();
    await deliver([track('after', { traceparent: traceparent(TRACE_A, SPAN_A) })]);
    await waitFor(() => tracing!.named('eventrelay attempt').length === 1, 'the attempt span');
    expect(requestOf('before').headers).to.not.have.property('traceparent');
    expect(tracing.named('eventrelay attempt')[0]!.parentSpanContext).to.include({ traceId: TRACE_A, spanId: SPAN_A });
    expect(tracing.named('eventrelay ingest')).to.have.length(1);
  });

  describe('on: a tracer provider registered', () => {
    beforeEach(() => {
      tracing = startTracing();
    });

    it('a message without trace context starts its own trace at ingestion: the body carries the ingestion span, the attempt is its child', async () => {
      await start();
      await deliver([track('fresh')]);
      await waitFor(() => tracing!.named('eventrelay attempt').length === 1, 'the attempt span');
      const [ingest] = tracing!.named('eventrelay ingest');
      const [attempt] = tracing!.named('eventrelay attempt');
      expect(ingest!.parentSpanContext).to.equal(undefined);
      expect(ingest!.kind).to.equal(SpanKind.SERVER);
      expect(ingest!.attributes).to.deep.equal({
        'http.request.method': 'POST',
        'url.path': '/v1/batch',
        'eventrelay.source': 'web',
        'eventrelay.batch.messages': 1,
        'eventrelay.batch.accepted': 1,
        'eventrelay.batch.rejected': 0,
        'eventrelay.batch.duplicates': 0,
        'http.response.status_code': 200,
      });
      const request = requestOf('fresh');
      expect((request.json.context as Record<string, unknown>).traceparent).to.equal(traceparentOf(spanOf(ingest!)));
      expect(attempt!.parentSpanContext?.spanId).to.equal(spanOf(ingest!).spanId);
      expect(spanOf(attempt!).traceId).to.equal(spanOf(ingest!).traceId);
      expect(request.headers.traceparent).to.equal(traceparentOf(spanOf(attempt!)));
    });

    it('a batch of several traces: the ingestion span starts its own and links to each; each attempt continues its message\'s trace', async () => {
      await start();
      const a = traceparent(TRACE_A, SPAN_A);
      const b = traceparent(TRACE_B, SPAN_B);
      // The batch-level context is a default: `b2` has none of its own and so carries `b`.
      await deliver([track('a1', { traceparent: a, tracestate: 'vendor=a' }), track('b2'), track('a3', { traceparent: a }), track('none', { traceparent: null })], {}, { context: { traceparent: b } });
      await waitFor(() => tracing!.named('eventrelay attempt').length === 4, 'four attempt spans');
      const [ingest] = tracing!.named('eventrelay ingest');
      expect(ingest!.parentSpanContext).to.equal(undefined);
      expect(ingest!.links.map((link) => [link.context.traceId, link.context.spanId])).to.deep.equal([[TRACE_A, SPAN_A], [TRACE_B, SPAN_B]]);
      const attempts = new Map(tracing!.named('eventrelay attempt').map((span) => [span.attributes['eventrelay.message.id'], span]));
      expect(attempts.get('a1')!.parentSpanContext).to.include({ traceId: TRACE_A, spanId: SPAN_A });
      expect(attempts.get('a1')!.spanContext().traceState?.serialize()).to.equal('vendor=a');
      expect(attempts.get('b2')!.parentSpanContext).to.include({ traceId: TRACE_B, spanId: SPAN_B });
      expect(attempts.get('a3')!.parentSpanContext).to.include({ traceId: TRACE_A, spanId: SPAN_A });
      // The caller's `traceparent: null` is theirs: kept, and the attempt starts a trace of its own.
      expect(requestOf('none').json.context).to.deep.equal({ traceparent: null, ip: '127.0.0.1' });
      expect(attempts.get('none')!.parentSpanContext).to.equal(undefined);
      for (const id of ['a1', 'b2', 'a3', 'none']) expect(requestOf(id).headers.traceparent).to.equal(traceparentOf(spanOf(attempts.get(id)!)));
      expect(requestOf('a1').headers.tracestate).to.equal('vendor=a');
    });

    it('an invalid traceparent is the caller\'s: kept in the body; the attempt starts a trace of its own', async () => {
      await start();
      const invalid = `00-${TRACE_A.toUpperCase()}-${SPAN_A}-01`;
      await deliver([track('bad', { traceparent: invalid })]);
      await waitFor(() => tracing!.named('eventrelay attempt').length === 1, 'the attempt span');
      const [attempt] = tracing!.named('eventrelay attempt');
      expect(requestOf('bad').json.context).to.deep.equal({ traceparent: invalid, ip: '127.0.0.1' });
      expect(attempt!.parentSpanContext).to.equal(undefined);
      expect(requestOf('bad').headers.traceparent).to.equal(traceparentOf(spanOf(attempt!)));
    });

    it('a deletion notice, which the forwarder makes itself, is delivered in a trace of its own', async () => {
      await start();
      await forwarder!.requestDeletion({ userId: 'gone' });
      await waitFor(() => receiver.delivered.some((r) => r.json.type === 'delete') && tracing!.named('eventrelay attempt').length === 1, 'the notice delivered');
      const [attempt] = tracing!.named('eventrelay attempt');
      const notice = receiver.requests.find((r) => r.json.type === 'delete')!;
      expect(attempt!.parentSpanContext).to.equal(undefined);
      expect(attempt!.attributes).to.not.have.property('eventrelay.message.id');
      expect(notice.headers.traceparent).to.equal(traceparentOf(spanOf(attempt!)));
      expect(notice.json).to.have.all.keys('type', 'userId', 'timestamp');
    });

    it('links to each trace once, to at most MAX_LINKS of them', async () => {
      await start();
      const traces = Array.from({ length: MAX_LINKS + 3 }, (_, i) => (i + 1).toString(16).padStart(32, '0'));
      // Two messages of each trace, from two spans: one link per trace, to the first one's span.
      const messages = traces.flatMap((traceId, i) => [SPAN_A, SPAN_B].map((span) => track(`m${i}-${span}`, { traceparent: traceparent(traceId, span) })));
      await deliver(messages);
      const [ingest] = tracing!.named('eventrelay ingest');
      const linked = ingest!.links.map((link) => [link.context.traceId, link.context.spanId]);
      expect(linked).to.deep.equal(traces.slice(0, MAX_LINKS).map((traceId) => [traceId, SPAN_A]));
    });

    it('the ingestion span continues the request\'s own traceparent header when it has one', async () => {
      await start();
      await deliver([track('headed', { traceparent: traceparent(TRACE_A, SPAN_A) })], { traceparent: traceparent(TRACE_B, SPAN_B) });
      const [ingest] = tracing!.named('eventrelay ingest');
      expect(ingest!.parentSpanContext).to.include({ traceId: TRACE_B, spanId: SPAN_B, isRemote: true });
      expect(ingest!.links.map((link) => link.context.spanId)).to.deep.equal([SPAN_A]);
    });

    it('a request refused before its messages were read gets its span too: ERROR, no source', async () => {
      await start();
      expect((await post(`${url}/v1/batch`, { batch: [track('nope')] }, { authorization: basic('not-a-key') })).status).to.equal(401);
      expect((await post(`${url}/v1/track`, '{"type":', { authorization: basic(WRITE_KEY) })).status).to.equal(400);
      await waitFor(() => tracing!.named('eventrelay ingest').length === 2, 'the ingestion spans');
      const [unknown, broken] = tracing!.named('eventrelay ingest');
      expect(unknown!.attributes).to.deep.equal({ 'http.request.method': 'POST', 'url.path': '/v1/batch', 'http.response.status_code': 401 });
      expect(unknown!.status).to.deep.equal({ code: SpanStatusCode.ERROR, message: 'HTTP 401' });
      expect(broken!.attributes).to.deep.equal({ 'http.request.method': 'POST', 'url.path': '/v1/track', 'http.response.status_code': 400 });
    });

    it('an attempt that got no answer: ERROR, the error\'s code as error.type, no status', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const destination = new WebhookDestination({ webhooks: [{ url: `http://127.0.0.1:${port}/hook` }] });
      const result = await destination.attempt(JSON.stringify({ ...track('refused'), version: 1, timestamp: new Date().toISOString(), properties: {} }), { attempt: 3, firstAttemptAt: Date.now() });
      await destination.close();
      expect(result.status).to.equal('retry');
      const [attempt] = tracing!.named('eventrelay attempt');
      expect(attempt!.attributes).to.deep.include({ 'eventrelay.attempt': 3, 'server.port': port, 'eventrelay.message.id': 'refused' });
      expect(attempt!.attributes).to.not.have.property('http.response.status_code');
      expect(attempt!.attributes['error.type']).to.be.a('string').and.match(/^(E[A-Z]+|ERR_[A-Z_]+)$/);
      expect(attempt!.status).to.deep.include({ code: SpanStatusCode.ERROR, message: attempt!.attributes['error.type'] });
      expect(attempt!.parentSpanContext).to.equal(undefined);
    });
  });

  it('a static header may not set traceparent or tracestate: the destination sets them', () => {
    for (const name of ['traceparent', 'TraceState']) {
      expect(() => new WebhookDestination({ webhooks: [{ url: 'http://127.0.0.1:9/hook', headers: { [name]: 'x' } }] })).to.throw(ConfigError, /traceparent and tracestate are set by the destination/);
    }
  });
});
