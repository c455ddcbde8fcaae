import { createTraceState, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { Span } from '@opentelemetry/api';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { setOpenTelemetryLoader } from '../../../src/internal/opentelemetry';
import { VERSION } from '../../../src/version';
import { createTestClient } from '../../../../../test/helpers/client';
import { startTracing, traceparentOf } from '../../../../../test/helpers/tracing';
import type { TestTracing } from '../../../../../test/helpers/tracing';
import { createSegmentClient } from '../../compat/helpers';
import { Analytics as Classic } from '../../../src/compat/analytics-node';
import { FakeTransport } from '../../../../../test/helpers/fake-transport';

const LIBRARY = { name: 'eventrelay', version: VERSION };
const REMOTE = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true };

/** Runs `fn` inside an active span (a child of `REMOTE`, with `tracestate` when given); returns the span. */
function inSpan(fn: () => void, tracestate?: string): Span {
  const parent = trace.setSpanContext(ROOT_CONTEXT, tracestate === undefined ? REMOTE : { ...REMOTE, traceState: createTraceState(tracestate) });
  return trace.getTracer('app').startActiveSpan('request', {}, parent, (span) => {
    fn();
    span.end();
    return span;
  });
}

describe('Analytics and OpenTelemetry: the caller\'s trace context on each message', () => {
  let tracing: TestTracing;

  beforeEach(() => {
    tracing = startTracing();
  });

  afterEach(async () => {
    setOpenTelemetryLoader();
    await tracing.stop();
  });

  it('sets context.traceparent (and tracestate) from the span active at the call', async () => {
    const { analytics, transport } = createTestClient({ flushAt: 2 });
    const plain = inSpan(() => analytics.track({ userId: 'u1', event: 'Plain', context: { ip: '203.0.113.9' } }));
    const stated = inSpan(() => analytics.identify({ userId: 'u1' }), 'vendor=abc,other=1');
    await analytics.flush();
    const [track, identify] = transport.messages;
    expect(track!.context).to.deep.equal({ ip: '203.0.113.9', library: LIBRARY, traceparent: traceparentOf(plain.spanContext()) });
    expect(identify!.context).to.deep.equal({ library: LIBRARY, traceparent: traceparentOf(stated.spanContext()), tracestate: 'vendor=abc,other=1' });
    expect(plain.spanContext().traceId).to.equal(REMOTE.traceId);
  });

  it('keeps a traceparent the caller set (and adds no tracestate to it)', async () => {
    const { analytics, transport } = createTestClient({ flushAt: 1 });
    const own = '00-11111111111111111111111111111111-2222222222222222-00';
    inSpan(() => analytics.track({ userId: 'u1', event: 'Own', context: { traceparent: own } }), 'vendor=abc');
    await analytics.flush();
    expect(transport.messages[0]!.context).to.deep.equal({ traceparent: own, library: LIBRARY });
  });

  it('adds nothing outside a span', async () => {
    const { analytics, transport } = createTestClient({ flushAt: 1 });
    analytics.track({ userId: 'u1', event: 'No Span' });
    await analytics.flush();
    expect(transport.messages[0]!.context).to.deep.equal({ library: LIBRARY });
  });

  it('without @opentelemetry/api (the loader finds no module), sends every call as before, with no trace context', async () => {
    setOpenTelemetryLoader(() => {
      throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), { code: 'MODULE_NOT_FOUND' });
    });
    const { analytics, transport } = createTestClient({ flushAt: 2 });
    const outcomes: unknown[] = [];
    inSpan(() => {
      analytics.track({ userId: 'u1', event: 'Absent' }, (error) => outcomes.push(error));
      analytics.page({ userId: 'u1', name: 'Home' }, (error) => outcomes.push(error));
    });
    await analytics.flush();
    expect(outcomes).to.deep.equal([undefined, undefined]);
    expect(transport.messages.map((m) => m.context)).to.deep.equal([{ library: LIBRARY }, { library: LIBRARY }]);
  });

  it('a loader that returns something else than the API counts as absent', async () => {
    setOpenTelemetryLoader(() => ({ trace: {} }));
    const { analytics, transport } = createTestClient({ flushAt: 1 });
    inSpan(() => analytics.track({ userId: 'u1', event: 'Odd' }));
    await analytics.flush();
    expect(transport.messages[0]!.context).to.deep.equal({ library: LIBRARY });
  });

  it('loads @opentelemetry/api only once a context manager is registered (before, no span can be active), then stamps the span', () => {
    // A process of its own: this one has the API loaded and a context manager registered by now.
    const script = `
      import { createRequire } from 'node:module';
      import { Analytics } from 'eventrelay';
      const require = createRequire(import.meta.url);
      const loaded = () => Object.keys(require.cache).some((path) => path.includes('@opentelemetry'));
      const bodies = [];
      const transport = { send: async (request) => { bodies.push(JSON.parse(request.body)); return { status: 200 }; } };
      const analytics = new Analytics({ writeKey: 'k', endpoint: 'http://127.0.0.1:9', flushAt: 1, transport });
      analytics.track({ userId: 'u', event: 'Before' });
      await analytics.flush();
      const before = loaded();
      const api = require('@opentelemetry/api');
      const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
      api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      const parent = api.trace.setSpanContext(api.ROOT_CONTEXT, ${JSON.stringify(REMOTE)});
      api.context.with(parent, () => analytics.track({ userId: 'u', event: 'After' }));
      await analytics.flush();
      console.log(JSON.stringify({ before, contexts: bodies.map((body) => body.batch[0].context) }));
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--conditions=eventrelay-source', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('.', import.meta.url)),
      encoding: 'utf8',
    });
    expect(child.status, child.stderr).to.equal(0);
    const { before, contexts } = JSON.parse(child.stdout.trim().split('\n').at(-1)!);
    expect(before).to.equal(false);
    expect(contexts).to.deep.equal([{ library: LIBRARY }, { library: LIBRARY, traceparent: `00-${REMOTE.traceId}-${REMOTE.spanId}-01` }]);
  });

  it('eventrelay/segment (through its plugins) and eventrelay/analytics-node stamp the span of the call too', async () => {
    const { analytics: segment, http } = createSegmentClient({ flushAt: 1 });
    const segmentSpan = inSpan(() => segment.track({ userId: 'u1', event: 'Segment' }));
    await segment.closeAndFlush();
    expect((http.batches[0]![0]!.context as Record<string, unknown>).traceparent).to.equal(traceparentOf(segmentSpan.spanContext()));

    const transport = new FakeTransport();
    const classic = new Classic('k', { host: 'https://ingest.test', flushAt: 1, transport });
    const classicSpan = inSpan(() => classic.track({ userId: 'u1', event: 'Classic' }));
    await classic.flush();
    expect(transport.messages[0]!.context).to.deep.include({ traceparent: traceparentOf(classicSpan.spanContext()) });
  });
});
