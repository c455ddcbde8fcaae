import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { build } from 'esbuild';
import type { Browser } from 'playwright-core';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { MemoryStore } from '../../src/store/memory/memory';
import { launchChromium, requireChromium } from './browser';
import { startReceiver, waitFor } from './helpers';
import type { Receiver } from './helpers';
import { ROOT } from '../../../../test/repo/markdown';

const WRITE_KEY = 'wk_rudderstack_browser';

/** A page built from `script`, served with the scripts on one origin (127.0.0.1 or localhost). */
async function startSite(host: string, files: Record<string, { type: string; body: string }>): Promise<{ origin: string; server: Server }> {
  const server = createServer((req, res) => {
    const file = files[(req.url ?? '/').split('?')[0]!];
    if (file === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'Content-Type': file.type }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://${host}:${(server.address() as AddressInfo).port}`, server };
}

/**
 * RudderStack's browser SDK, unchanged from npm (its bundled build: no plugin fetched from a CDN),
 * against the forwarder: it sends Segment's wire format to a host of your own, and adds request
 * headers of its own (`SentAt`, `AnonymousId`, retry counters), so its calls get through only if
 * the preflight grants what it asks for. And a page on an origin the source does not list reads
 * the forwarder's 403 (status and JSON body) instead of a bare CORS failure.
 */
describe('browser libraries besides analytics.js, in Chromium, against the forwarder', function () {
  this.timeout(60_000);
  let receiver: Receiver;
  let forwarder: Forwarder;
  let forwarderUrl: string;
  let site: Awaited<ReturnType<typeof startSite>>;
  let elsewhere: Awaited<ReturnType<typeof startSite>>;
  let browser: Browser;
  const files: Record<string, { type: string; body: string }> = {};

  before(async function () {
    this.timeout(120_000);
    requireChromium(this);
    receiver = await startReceiver();
    site = await startSite('localhost', files);
    elsewhere = await startSite('127.0.0.1', files);
    forwarder = createForwarder(
      {
        storage: { type: 'memory' },
        sources: [{ name: 'website', writeKey: WRITE_KEY, allowedOrigins: [site.origin], destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/website` }] } } }],
      },
      { store: new MemoryStore() },
    );
    ({ url: forwarderUrl } = await forwarder.listen({ port: 0, host: '127.0.0.1' }));
    const page = await build({
      stdin: {
        contents: `
          import { RudderAnalytics } from '@rudderstack/analytics-js/bundled';
          const analytics = new RudderAnalytics();
          analytics.load(${JSON.stringify(WRITE_KEY)}, ${JSON.stringify(forwarderUrl)}, {
            // No control plane: the source's settings are given here.
            getSourceConfig: () => ({ source: { id: 'website', name: 'website', workspaceId: 'w', enabled: true, config: {}, destinations: [] } }),
            plugins: ['XhrQueue'],
            polyfillIfRequired: false,
            queueOptions: { maxRetryDelay: 2000 },
          });
          window.rudder = analytics;
        `,
        resolveDir: ROOT,
        loader: 'js',
      },
      bundle: true,
      write: false,
      format: 'iife',
      platform: 'browser',
      logLevel: 'silent',
    });
    files['/rudder.js'] = { type: 'text/javascript; charset=utf-8', body: page.outputFiles[0]!.text };
    files['/rudder.html'] = { type: 'text/html; charset=utf-8', body: '<!doctype html><html><head><title>Rudder page</title></head><body><script src="/rudder.js"></script></body></html>' };
    files['/blank.html'] = { type: 'text/html; charset=utf-8', body: '<!doctype html><html><body></body></html>' };
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await forwarder?.close();
    await receiver?.close();
    site?.server.close();
    elsewhere?.server.close();
  });

  it('RudderStack\'s SDK: its preflight asks for headers of its own, is granted them, and the calls reach the receiver', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    // The headers of the library's requests to the forwarder, as the browser sent them.
    const sent: Record<string, string>[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(`${forwarderUrl}/v1/`) && request.method() === 'POST') void request.allHeaders().then((h) => sent.push(h));
    });
    await page.goto(`${site.origin}/rudder.html`);
    await page.evaluate(() => {
      type Rudder = { identify(id: string, traits: object): void; track(event: string, properties: object): void };
      const rudder = (globalThis as unknown as { rudder: Rudder }).rudder;
      rudder.identify('user-7', { plan: 'team' });
      rudder.track('Rudder Clicked', { button: 'buy' });
    });
    await waitFor(() => receiver.delivered.some((r) => r.json.event === 'Rudder Clicked'), 'the track made with RudderStack\'s SDK');
    await waitFor(() => receiver.delivered.some((r) => r.json.type === 'identify' && r.json.userId === 'user-7'), 'the identify');
    const track = receiver.delivered.find((r) => r.json.event === 'Rudder Clicked')!;
    expect(track.json.properties).to.deep.equal({ button: 'buy' });
    expect(track.json.userId).to.equal('user-7');
    // What makes this library need more than four fixed headers: it sends its own (the browser
    // sends a request with them only once the preflight granted them).
    await waitFor(() => sent.length > 0, 'the headers of the library\'s requests');
    expect(Object.keys(sent[0]!)).to.include('sentat');
    await context.close();
  });

  it('a page on an origin the source does not list reads the 403: its status and JSON body, by fetch', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${elsewhere.origin}/blank.html`);
    const answer = await page.evaluate(async ([url, key]) => {
      const response = await fetch(`${url}/v1/t`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify({ writeKey: key, userId: 'u', event: 'Elsewhere' }) });
      return { status: response.status, body: (await response.json()) as { error: { code: string; message: string } } };
    }, [forwarderUrl, WRITE_KEY] as const);
    expect(answer.status).to.equal(403);
    expect(answer.body.error.code).to.equal('origin_not_allowed');
    expect(answer.body.error.message).to.contain(elsewhere.origin).and.contain('allowedOrigins');
    const unknown = await page.evaluate(async (url) => {
      const response = await fetch(`${url}/v1/t`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify({ writeKey: 'not-a-key', userId: 'u', event: 'E' }) });
      return { status: response.status, code: ((await response.json()) as { error: { code: string } }).error.code };
    }, forwarderUrl);
    expect(unknown).to.deep.equal({ status: 401, code: 'unauthorized' });
    await context.close();
    expect(receiver.requests.filter((r) => r.json.event === 'Elsewhere')).to.deep.equal([]);
  });
});
