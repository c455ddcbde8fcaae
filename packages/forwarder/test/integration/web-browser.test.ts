import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { Browser, BrowserContext } from 'playwright-core';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { MemoryStore } from '../../src/store/memory/memory';
import { parseWebhookMessage, verifySignature } from '../../../eventrelay/src/webhooks';
import { launchChromium, requireChromium } from './browser';
import { send, useReceiver, waitFor } from './helpers';
import type { ReceivedRequest } from './helpers';
import { codeBlocks, ROOT } from '../../../../test/repo/markdown';

/** The guide whose blocks this test runs, each marked `<!-- snippet: browser NAME -->`. */
const GUIDE = 'docs/sending-from-a-web-page.md';
const SECRET = 'browser-test-secret';
const WRITE_KEY = 'wk_browser_test_key';
/** What the guide writes for the forwarder's address and the write key: replaced by the real ones. */
const SHOWN_URL = 'https://events.example.com';
const SHOWN_KEY = 'YOUR_WRITE_KEY';
/** analytics.js as the package ships it for the snippet. */
const STANDALONE = join(ROOT, 'node_modules/@segment/analytics-next/dist/umd/standalone.js');

const blocks = codeBlocks(GUIDE).filter((b) => b.marker?.startsWith('browser '));
const block = (name: string): string => {
  const found = blocks.find((b) => b.marker === `browser ${name}`);
  if (found === undefined) throw new Error(`${GUIDE} has no block marked "browser ${name}"`);
  return found.code;
};

/** A static site on 127.0.0.1 or localhost: the pages and scripts it was given, every request recorded. */
type Files = Record<string, { type: string; body: string | Buffer }>;

async function startSite(host: string, files: Files): Promise<{ origin: string; paths: string[]; server: Server }> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    paths.push(path);
    const file = files[path];
    if (file === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'Content-Type': file.type }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://${host}:${(server.address() as AddressInfo).port}`, paths, server };
}

describe('Segment\'s analytics.js, unchanged from npm, in Chromium: a page on one origin, the forwarder on another', function () {
  this.timeout(60_000);
  const receiver = useReceiver();
  let forwarder: Forwarder;
  let forwarderUrl: string;
  let site: Awaited<ReturnType<typeof startSite>>;
  let elsewhere: Awaited<ReturnType<typeof startSite>>;
  let browser: Browser;
  let dir: string;
  /** Requests the pages made to a host that is neither the site nor the forwarder (they are aborted). */
  const strays: string[] = [];

  before(async function () {
    this.timeout(120_000);
    requireChromium(this);
    expect(blocks.map((b) => b.marker).sort()).to.deep.equal(['browser npm', 'browser pagehide', 'browser snippet']);
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    dir = mkdtempSync(join(ROOT, '.tmp', 'browser-'));
    // The site's origin must be known before the forwarder starts (it is the allowed origin), and
    // the forwarder's address before the site's scripts are built: the site starts with a
    // placeholder table filled in below.
    const files: Files = {};
    site = await startSite('localhost', files);
    elsewhere = await startSite('127.0.0.1', files);
    forwarder = createForwarder(
      {
        storage: { type: 'memory' },
        sources: [
          {
            name: 'website',
            writeKey: WRITE_KEY,
            allowedOrigins: [site.origin],
            destinations: { Webhooks: { sharedSecret: SECRET, webhooks: [{ url: `${receiver.url}/website` }] } },
          },
        ],
      },
      { store: new MemoryStore() },
    );
    ({ url: forwarderUrl } = await forwarder.listen({ port: 0, host: '127.0.0.1' }));
    const real = (code: string) => code.replaceAll(SHOWN_URL, forwarderUrl).replaceAll(SHOWN_KEY, WRITE_KEY);
    const bundle = async (name: string): Promise<string> => {
      const entry = join(dir, `${name}.js`);
      writeFileSync(entry, real(block(name)));
      const result = await build({
        entryPoints: [entry],
        bundle: true,
        write: false,
        format: 'iife',
        globalName: 'block',
        platform: 'browser',
        define: { 'process.env.NODE_ENV': '"production"' },
        logLevel: 'silent',
      });
      return result.outputFiles[0]!.text;
    };
    const html = (body: string) => ({ type: 'text/html; charset=utf-8', body: `<!doctype html><html><head><title>Test page</title></head><body>${body}</body></html>` });
    const js = (body: string | Buffer) => ({ type: 'text/javascript; charset=utf-8', body });
    Object.assign(files, {
      '/npm.html': html('<script src="/npm.js"></script>'),
      '/npm.js': js(await bundle('npm')),
      '/pagehide.html': html('<script src="/pagehide.js"></script>'),
      '/pagehide.js': js(await bundle('pagehide')),
      '/snippet.html': html(real(block('snippet'))),
      '/js/analytics.min.js': js(readFileSync(STANDALONE)),
      '/next.html': html('<p>the next page</p>'),
    });
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await forwarder?.close();
    site?.server.close();
    elsewhere?.server.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A fresh browser context whose requests may reach only the site and the forwarder. */
  async function newContext(): Promise<BrowserContext> {
    const context = await browser.newContext();
    const allowed = [site.origin, elsewhere.origin, forwarderUrl];
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (allowed.some((origin) => url.startsWith(`${origin}/`))) return route.continue();
      strays.push(url);
      return route.abort();
    });
    return context;
  }

  const arrived = (predicate: (json: Record<string, unknown>) => boolean): ReceivedRequest[] => receiver.delivered.filter((r) => r.path === '/website' && predicate(r.json));

  /** Each delivered request is signed with the source's secret, a valid webhook message, and carries nothing of the API's. */
  function expectSigned(requests: readonly ReceivedRequest[]): void {
    for (const r of requests) {
      expect(verifySignature(r.body, String(r.headers['x-signature']), SECRET), r.body).to.equal(true);
      expect(parseWebhookMessage(r.body)).to.deep.equal(r.json);
      expect(r.json.version).to.equal(1);
      expect(r.json.timestamp).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(r.body).to.not.contain(WRITE_KEY).and.not.contain('_metadata').and.not.contain('sentAt');
      expect((r.json.context as { ip?: string }).ip).to.equal('127.0.0.1');
    }
  }

  it('npm: loads with cdnURL alone; identify, track, page, group and alias reach the receiver signed, in the specification\'s shapes', async () => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(`${site.origin}/npm.html`);
    await page.evaluate(() => {
      type Loaded = { page(category: string, name: string): void; group(id: string, traits: object): void; alias(to: string, from: string): void };
      const { analytics } = (globalThis as unknown as { block: { analytics: Loaded } }).block;
      analytics.page('Docs', 'Pricing');
      analytics.group('acme', { name: 'Acme Inc', employees: 40 });
      analytics.alias('user-42', 'anon-earlier');
    });
    await waitFor(() => ['identify', 'track', 'page', 'group', 'alias'].every((type) => arrived((j) => j.type === type).length > 0), 'the five calls at the receiver');
    const [identify, track, shown, group, alias] = ['identify', 'track', 'page', 'group', 'alias'].map((type) => arrived((j) => j.type === type)[0]!);
    expectSigned([identify!, track!, shown!, group!, alias!]);
    expect(identify!.json).to.include({ userId: 'user-42' });
    expect(identify!.json.traits).to.deep.equal({ plan: 'pro' });
    expect(track!.json).to.include({ userId: 'user-42', event: 'Signed Up' });
    expect(track!.json.properties).to.deep.equal({ source: 'pricing' });
    expect(shown!.json.properties).to.include({ path: '/npm.html', url: `${site.origin}/npm.html`, title: 'Test page' });
    expect(group!.json).to.include({ userId: 'user-42', groupId: 'acme' });
    expect(group!.json.traits).to.deep.equal({ name: 'Acme Inc', employees: 40 });
    expect(alias!.json).to.include({ 'Previous ID': 'anon-earlier', 'User ID': 'user-42' });
    expect(alias!.json).to.not.have.property('userId');
    expect(strays).to.deep.equal([]);
    await context.close();
  });

  it('the snippet: the queued page call and a later track arrive; analytics.js comes from the site, nothing from Segment', async () => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(`${site.origin}/snippet.html`);
    await waitFor(() => arrived((j) => j.type === 'page' && (j.properties as { path?: string }).path === '/snippet.html').length === 1, 'the snippet\'s page call');
    await page.evaluate(() => (globalThis as unknown as { analytics: { track(event: string): void } }).analytics.track('Snippet Track'));
    await waitFor(() => arrived((j) => j.event === 'Snippet Track').length === 1, 'the track made once the library loaded');
    expectSigned(arrived((j) => j.event === 'Snippet Track' || (j.properties as { path?: string } | undefined)?.path === '/snippet.html'));
    expect(site.paths).to.include('/js/analytics.min.js');
    expect(strays).to.deep.equal([]);
    await context.close();
  });

  it('a page from an origin the source does not list gets nothing forwarded: the settings, the calls and a beacon are refused', async () => {
    const context = await newContext();
    const page = await context.newPage();
    const beforeLoad = await refusedOrigins();
    await page.goto(`${elsewhere.origin}/npm.html`);
    // The library's settings request is refused (the browser keeps the 403 from the page).
    await waitFor(async () => (await refusedOrigins()) > beforeLoad, 'the settings request to be refused');
    const refusedBefore = await refusedOrigins();
    const beacon = await page.evaluate(
      ([url, key]) => (globalThis as unknown as { navigator: { sendBeacon(url: string, body: string): boolean } }).navigator.sendBeacon(`${url}/v1/t`, JSON.stringify({ writeKey: key, anonymousId: 'elsewhere', event: 'From Elsewhere' })),
      [forwarderUrl, WRITE_KEY] as const,
    );
    expect(beacon).to.equal(true);
    await waitFor(async () => (await refusedOrigins()) > refusedBefore, 'the beacon to be refused');
    await context.close();
    expect(receiver.requests.filter((r) => r.json.anonymousId === 'elsewhere' || r.json.event === 'From Elsewhere' || r.json.userId === 'elsewhere')).to.deep.equal([]);
    expect(arrived((j) => (j.properties as { url?: string } | undefined)?.url?.startsWith(elsewhere.origin) === true)).to.deep.equal([]);
  });

  it('a beacon made at pagehide arrives, for the visitor the library made up', async () => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(`${site.origin}/pagehide.html`);
    // Once this call has arrived, the library has its anonymousId and the page is ready to leave.
    await page.evaluate(() => (globalThis as unknown as { block: { analytics: { track(event: string): Promise<unknown> } } }).block.analytics.track('Read Article'));
    await waitFor(() => arrived((j) => j.event === 'Read Article').length === 1, 'the call made before leaving');
    await page.goto(`${site.origin}/next.html`);
    await waitFor(() => arrived((j) => j.event === 'Page Left').length === 1, 'the beacon sent at pagehide');
    const left = arrived((j) => j.event === 'Page Left')[0]!;
    expectSigned([left]);
    expect(left.json.properties).to.deep.equal({ path: '/pagehide.html' });
    expect(left.json.userId).to.equal(arrived((j) => j.event === 'Read Article')[0]!.json.userId);
    expect(strays).to.deep.equal([]);
    await context.close();
  });

  async function refusedOrigins(): Promise<number> {
    const metrics = await send(`${forwarderUrl}/metrics`);
    return Number(/eventrelay_requests_refused_total\{source="website",reason="origin"\} (\d+)/.exec(metrics.text)?.[1] ?? 0);
  }
});
