import { expect } from 'chai';
import type { Sink } from '../../../../test/helpers/sink';
import { checkClient, checkReceiver, requireDist, runEndingScript, runScenarioScript, scenarioConfig, startScenarioSink } from './harness';
import type { ScriptRuntime, Variant } from './harness';

/**
 * The tests of a runtime that runs script files and has node:http (Node, Bun, Deno): the scenario
 * with the default transport (NodeTransport there), FetchTransport and NodeTransport, and a
 * script that returns without flushing.
 */
export function describeScriptRuntime(title: string, runtime: ScriptRuntime): void {
  describe(title, function () {
    this.timeout(60_000);
    let sink: Sink;

    before(async () => {
      requireDist();
      sink = await startScenarioSink();
    });

    after(async () => {
      await sink?.close();
    });

    it('sends with each transport: wire format, callbacks once, flush() over queued and in-flight batches, a 503 retried; the receiver verifies', async () => {
      const variants: Variant[] = ['default', 'fetch', 'node'];
      const report = await runScenarioScript(runtime, scenarioConfig(sink, variants));
      expect(report.nodeTransport).to.equal('available');
      expect(report.timer).to.equal('object');
      checkClient(report, sink, variants);
      checkReceiver(report, true);
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
