import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { expect } from 'chai';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { waitFor } from '../../../../test/helpers/wait';
import type { Sink } from '../../../../test/helpers/sink';
import { BIN, bundle, checkClient, checkLayers, checkReceiver, DIST, requireDist, SCENARIO, scenarioConfig, startScenarioSink } from './harness';
import type { ScenarioConfig, ScenarioReport } from './harness';

/**
 * The Worker: the built package and the scenario bundled into one ES module the way wrangler
 * bundles a Worker (browser-like conditions, nothing external). `/scenario` runs the scenario;
 * `/early` tracks one event and answers at once, leaving the send to `ctx.waitUntil` when the
 * request asks for it.
 */
const WORKER = `
import * as sdk from ${JSON.stringify(`${DIST}/index.js`)};
import * as webhooks from ${JSON.stringify(`${DIST}/webhooks/index.js`)};
import * as segment from ${JSON.stringify(`${DIST}/segment/index.js`)};
import * as classic from ${JSON.stringify(`${DIST}/analytics-node/index.js`)};
import { runScenario } from ${JSON.stringify(SCENARIO)};

export default {
  async fetch(request, env, ctx) {
    const { pathname } = new URL(request.url);
    const body = await request.json();
    if (pathname === '/scenario') return Response.json(await runScenario({ sdk, webhooks, segment, classic }, body));
    const analytics = new sdk.Analytics({
      writeKey: 'wk_worker',
      endpoint: body.endpoint,
      flushInterval: 100,
      ...(body.waitUntil ? { waitUntil: (promise) => ctx.waitUntil(promise) } : {}),
    });
    analytics.track({ userId: 'u1', event: body.event });
    return new Response('accepted', { status: 202 });
  },
};
`;

interface Workerd {
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts workerd on 127.0.0.1 (a port of its choosing, read from its control channel) with the Worker. */
async function startWorkerd(dir: string, code: string, compatibility: { date: string; flags: readonly string[] }): Promise<Workerd> {
  writeFileSync(join(dir, 'worker.mjs'), code);
  // Outbound fetches may reach this machine's loopback, where the sink listens, and nothing else.
  writeFileSync(join(dir, 'config.capnp'), `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "internet", network = (allow = ["local"])),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:0", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ (name = "worker.mjs", esModule = embed "worker.mjs") ],
  compatibilityDate = "${compatibility.date}",
  compatibilityFlags = [${compatibility.flags.map((flag) => JSON.stringify(flag)).join(', ')}],
);
`);
  const child = spawn(`${BIN}/workerd`, ['serve', join(dir, 'config.capnp'), '--control-fd=3'], {
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout!.resume();
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let control = '';
    (child.stdio[3] as Readable).on('data', (chunk: Buffer) => {
      control += chunk.toString();
      const match = /"event":"listen","socket":"http","port":(\d+)/.exec(control);
      if (match) resolve(Number(match[1]));
    });
    child.on('error', reject);
    void closed.then(() => reject(new Error(`workerd exited before listening:\n${stderr}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      child.kill();
      await closed;
    },
  };
}

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
}

const RUNS = [
  // No `process` at all: the Segment layers' warnings go to console.warn.
  { name: 'without Node compatibility', compatibility: { date: '2025-09-01', flags: [] }, warnedVia: 'console.warn' },
  // With nodejs_compat, workerd has a node:http (built on fetch): the client still sends with fetch.
  // Its `process` has no emitWarning, so the layers' warnings still go to console.warn.
  { name: 'with nodejs_compat', compatibility: { date: '2025-09-01', flags: ['nodejs_compat'] }, warnedVia: 'console.warn' },
] as const;

for (const { name, compatibility, warnedVia } of RUNS) {
  describe(`Cloudflare Workers (workerd from npm, ${name}): the built package bundled as wrangler would`, function () {
    this.timeout(60_000);
    const tempDir = useTempDirs('eventrelay-workerd-');
    let sink: Sink;
    let workerd: Workerd;
    const config = (): ScenarioConfig => scenarioConfig(sink, ['default', 'fetch']);
    // One run of the scenario, which the checks below read (the sink keeps its requests).
    let ran: Promise<ScenarioReport> | undefined;
    const scenario = (): Promise<ScenarioReport> =>
      (ran ??= post(`${workerd.url}/scenario`, config()).then(async (response) => {
        expect(response.status, await response.clone().text()).to.equal(200);
        return (await response.json()) as ScenarioReport;
      }));

    before(async () => {
      requireDist();
      sink = await startScenarioSink();
      workerd = await startWorkerd(tempDir(), await bundle(WORKER, { format: 'esm', conditions: ['workerd', 'worker', 'browser'] }), compatibility);
    });

    after(async () => {
      await workerd?.stop();
      await sink?.close();
    });

    it('sends with fetch by default: wire format, callbacks once, flush() over queued and in-flight batches, a 503 retried; the receiver verifies', async () => {
      const report = await scenario();
      checkClient(report, sink, config().variants);
      checkReceiver(report, compatibility.flags.length > 0 ? true : 'ERR_UNSUPPORTED_RUNTIME');
      if (compatibility.flags.length === 0) expect(report.nodeTransport).to.equal('ERR_UNSUPPORTED_RUNTIME');
      expect(report.timer).to.equal('number');
    });

    it('runs eventrelay/segment and eventrelay/analytics-node: calls and callbacks once, events, plugins, closeAndFlush(), fetch by default', async () => {
      checkLayers(await scenario(), sink, warnedVia);
    });

    it('delivers after the Worker answered, when the client hands its batches to ctx.waitUntil', async () => {
      const response = await post(`${workerd.url}/early`, { endpoint: `${sink.url}/early`, event: 'After the answer', waitUntil: true });
      expect(response.status).to.equal(202);
      await waitFor(() => sink.messages().some((m) => m.event === 'After the answer'), 'the event sent under waitUntil');
    });
  });
}
