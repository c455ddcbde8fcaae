// Preloaded into a forwarder by forwarder-ab.mjs for its `<path>:traced` side (`node --import
// bench/tracing-setup.mjs dist/cli.js serve ...`): OpenTelemetry set up as an operator does, with
// the SDK (@opentelemetry/sdk-trace-base, the repository's dev dependency), an AsyncLocalStorage
// context manager and a BatchSpanProcessor (its defaults), whose exporter counts the spans and drops them: what
// recording spans costs the forwarder, not what shipping them costs (that is the exporter's).
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

let exported = 0;
const exporter = {
  export(spans, done) {
    exported += spans.length;
    done({ code: 0 });
  },
  shutdown: async () => {},
};
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] }));
process.once('exit', () => process.stderr.write(`tracing-setup: ${exported} spans exported\n`));
