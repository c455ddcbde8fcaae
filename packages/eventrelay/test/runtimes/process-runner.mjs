// Entry point for the runtimes that run a script file (Node, Bun, Deno): loads the built package
// (`file://.../dist`), then either runs the scenario and prints its report as the last line, or
// ('ends') tracks and returns without flushing, printing what the callbacks saw when the process exits.
import { runScenario } from './scenario.mjs';

const [mode, dist, config] = process.argv.slice(2);
const sdk = await import(`${dist}/index.js`);

if (mode === 'scenario') {
  const [webhooks, segment, classic] = await Promise.all(['webhooks', 'segment', 'analytics-node'].map((entry) => import(`${dist}/${entry}/index.js`)));
  console.log(JSON.stringify(await runScenario({ sdk, webhooks, segment, classic }, JSON.parse(config))));
} else if (mode === 'ends') {
  const { endpoint } = JSON.parse(config);
  const seen = { calls: 0, errors: [] };
  process.on('exit', () => console.log(JSON.stringify(seen)));
  // A flush interval of ten minutes: only the client's exit hook sends, and only unref'd timers let the process get there.
  const analytics = new sdk.Analytics({ writeKey: 'wk', endpoint, flushInterval: 600_000 });
  for (let i = 0; i < 3; i++) {
    analytics.track({ userId: 'u1', event: `Ends ${i}` }, (error) => {
      seen.calls++;
      seen.errors.push(error ? error.code : null);
    });
  }
} else {
  throw new Error(`unknown mode ${mode}`);
}
