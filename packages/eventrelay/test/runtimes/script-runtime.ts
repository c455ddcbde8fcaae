import { expect } from 'chai';
import type { Sink } from '../../../../test/helpers/sink';
import { checkClient, checkLayers, checkReceiver, requireDist, runEndingScript, runScenarioScript, scenarioConfig, startScenarioSink } from './harness';
import type { ScenarioReport, ScriptRuntime, Variant } from './harness';

/**
 * The tests of a runtime that runs script files and has node:http (Node, Bun, Deno): the scenario
 * with the default transport (NodeTransport there), FetchTransport and NodeTransport, and a
 * script that returns without flushing.
 */
export function describeScriptRuntime(title: string, runtime: ScriptRuntime): void {
  describe(title, function () {
    this.timeout(60_000);
    const variants: Variant[] = ['default', 'fetch', 'node'];
    let sink: Sink;
    // One run of the scenario, which both checks below read (the sink keeps its requests).
    let scenario: Promise<ScenarioReport> | undefined;
    const report = (): Promise<ScenarioReport> => (scenario ??= runScenarioScript(runtime, scenarioConfig(sink, variants)));

    before(async () => {
      requireDist();
      sink = await startScenarioSink();
    });

    after(async () => {
      await sink?.close();
    });

    it('sends with each transport: wire format, callbacks once, flush() over queued and in-flight batches, a 503 retried; the receiver verifies', async () => {
      const ran = await report();
      expect(ran.nodeTransport).to.equal('available');
      expect(ran.timer).to.equal('object');
      checkClient(ran, sink, variants);
      checkReceiver(ran, true);
    });

    it('runs eventrelay/segment and eventrelay/analytics-node: calls and callbacks once, events, plugins, closeAndFlush(), the default transport', async () => {
      const ran = await report();
      checkLayers(ran, sink, 'process.emitWarning');
      // The check of the default transport can tell node:http from fetch here: they send other headers.
      const names = (variant: string) => Object.keys(sink.requests.find((r) => r.path === `/${variant}/calls/v1/batch`)!.headers).sort();
      expect(names('node')).to.not.deep.equal(names('fetch'));
    });

    it('delivers what a script tracked when it returns without flushing, each callback once (timers unref\'d, the exit hook sends)', async function () {
      // Were the client's timers holding the process, it would wait for its ten-minute flush interval.
      this.timeout(30_000);
      const seen = await runEndingScript(runtime, `${sink.url}/ends`);
      expect(seen).to.deep.equal({ calls: 3, errors: [null, null, null] });
      expect(sink.requests.filter((r) => r.path === '/ends/v1/batch')).to.have.length(1);
    });
  });
}
