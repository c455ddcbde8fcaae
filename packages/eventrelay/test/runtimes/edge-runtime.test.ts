import { expect } from 'chai';
import { EdgeRuntime } from 'edge-runtime';
import type { Sink } from '../../../../test/helpers/sink';
import { bundle, checkClient, checkLayers, checkReceiver, DIST, requireDist, SCENARIO, scenarioConfig, startScenarioSink } from './harness';
import type { ScenarioConfig, ScenarioReport } from './harness';

/**
 * The Edge function: the built package and the scenario bundled into one script the way
 * Vercel's build bundles an Edge route (edge-light, worker and browser conditions, nothing
 * external). `edge.run(config)` runs the scenario; a fetch event tracks one event and answers
 * at once, leaving the send to `event.waitUntil` when the request asks for it.
 */
const FUNCTION = `
import * as sdk from ${JSON.stringify(`${DIST}/index.js`)};
import * as webhooks from ${JSON.stringify(`${DIST}/webhooks/index.js`)};
import * as segment from ${JSON.stringify(`${DIST}/segment/index.js`)};
import * as classic from ${JSON.stringify(`${DIST}/analytics-node/index.js`)};
import { runScenario } from ${JSON.stringify(SCENARIO)};

export const run = (config) => runScenario({ sdk, webhooks, segment, classic }, config);

addEventListener('fetch', (event) => {
  event.respondWith((async () => {
    const body = await event.request.json();
    const analytics = new sdk.Analytics({
      writeKey: 'wk_edge',
      endpoint: body.endpoint,
      flushInterval: 100,
      ...(body.waitUntil ? { waitUntil: (promise) => event.waitUntil(promise) } : {}),
    });
    analytics.track({ userId: 'u1', event: body.event });
    return new Response('accepted', { status: 202 });
  })());
});
`;

describe("Vercel Edge (the edge-runtime package): the built package bundled as Vercel's build would", function () {
  this.timeout(60_000);
  let sink: Sink;
  let runtime: EdgeRuntime;
  const config = (): ScenarioConfig => scenarioConfig(sink, ['default', 'fetch']);
  // One run of the scenario, which the checks below read (the sink keeps its requests).
  let ran: Promise<ScenarioReport> | undefined;
  const scenario = (): Promise<ScenarioReport> =>
    (ran ??= (async () => {
      runtime.context.CONFIG = config();
      return JSON.parse(JSON.stringify(await runtime.evaluate<Promise<ScenarioReport>>('edge.run(CONFIG)'))) as ScenarioReport;
    })());

  before(async () => {
    requireDist();
    sink = await startScenarioSink();
    const code = await bundle(FUNCTION, { format: 'iife', globalName: 'edge', conditions: ['edge-light', 'worker', 'browser'] });
    runtime = new EdgeRuntime({ initialCode: code });
  });

  after(async () => {
    await sink?.close();
  });

  it('is a runtime without node:http whose timers are numbers (nothing to unref)', () => {
    expect(runtime.evaluate<string>('typeof globalThis.process?.getBuiltinModule')).to.equal('undefined');
    expect(runtime.evaluate<string>('typeof setTimeout(() => {}, 0)')).to.equal('number');
  });

  it('sends with fetch by default: wire format, callbacks once, flush() over queued and in-flight batches, a 503 retried; the receiver verifies', async () => {
    const report = await scenario();
    // No CompressionStream in the Edge runtime: `gzip: true` is a ConfigError there.
    checkClient(report, sink, config().variants, { gzip: false });
    checkReceiver(report, 'ERR_UNSUPPORTED_RUNTIME');
    expect(report.nodeTransport).to.equal('ERR_UNSUPPORTED_RUNTIME');
    expect(report.timer).to.equal('number');
  });

  it('runs eventrelay/segment and eventrelay/analytics-node: calls and callbacks once, events, plugins, closeAndFlush(), fetch by default', async () => {
    // No `process` in the Edge runtime: the layers' warnings go to console.warn.
    checkLayers(await scenario(), sink, 'console.warn');
  });

  it('has delivered when the promises given to event.waitUntil settle, although the function answered first', async () => {
    const response = await runtime.dispatchFetch('https://edge.test/api/track', {
      method: 'POST',
      body: JSON.stringify({ endpoint: `${sink.url}/early`, event: 'After the answer', waitUntil: true }),
    });
    expect(response.status).to.equal(202);
    await response.waitUntil();
    expect(sink.messages().filter((m) => m.event === 'After the answer')).to.have.length(1);
  });
});
