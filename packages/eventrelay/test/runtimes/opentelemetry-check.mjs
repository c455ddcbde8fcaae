// Run by opentelemetry.test.ts with Node on the built package, ESM or CommonJS (`node
// opentelemetry-check.mjs <esm|cjs> <dist path>`): sets OpenTelemetry up as an application does,
// tracks inside a span and has the Fetch adapter handle a request with a traceparent header.
// Prints what it saw as one JSON line.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const api = require('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');

const [format, dist] = process.argv.slice(2);
const load = (entry) => (format === 'cjs' ? require(`${dist}/${entry}.cjs`) : import(`${dist}/${entry}.js`));
const sdk = await load('index');
const webhooks = await load('webhooks/index');

const exporter = new InMemorySpanExporter();
api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

const sent = [];
const transport = {
  async send(request) {
    sent.push(JSON.parse(typeof request.body === 'string' ? request.body : Buffer.from(request.body).toString('utf8')));
    return { status: 200 };
  },
};
const analytics = new sdk.Analytics({ writeKey: 'k', endpoint: 'http://127.0.0.1:9', flushAt: 1, transport });
const caller = api.trace.getTracer('app').startActiveSpan('request', (span) => {
  analytics.track({ userId: 'u1', event: 'Built' });
  span.end();
  return span.spanContext();
});
await analytics.closeAndFlush();

let handled;
const handle = webhooks.createFetchHandler({ secret: 's', handler: async () => void (handled = api.trace.getActiveSpan()?.spanContext()) });
const body = JSON.stringify({ version: 1, type: 'track', userId: 'u1', timestamp: '2026-01-01T00:00:00.000Z', event: 'Built', properties: {} });
const traceparent = `00-${caller.traceId}-${caller.spanId}-01`;
const answer = await handle(new Request('http://127.0.0.1/hook', { method: 'POST', body, headers: { 'x-signature': webhooks.sign(body, 's'), traceparent } }));

console.log(JSON.stringify({
  stamped: sent[0]?.batch[0]?.context?.traceparent === traceparent,
  status: answer.status,
  handlerInTrace: handled?.traceId === caller.traceId && handled.spanId !== caller.spanId,
  spans: exporter.getFinishedSpans().map((span) => span.name).sort(),
}));
