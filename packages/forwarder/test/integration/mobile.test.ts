import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { gzipSync } from 'node:zlib';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { MemoryStore } from '../../src/store/memory/memory';
import { basic, send, useReceiver, waitFor } from './helpers';
import { codeBlocks } from '../../../../test/repo/markdown';

/**
 * Segment's mobile libraries against a real forwarder, built from their wire format (no device
 * here): the settings of each block of docs/sending-from-a-mobile-app.md give the URLs the library
 * builds, and each library's batch (headers, encoding, where the key goes) is sent to them.
 */
const GUIDE = 'docs/sending-from-a-mobile-app.md';
const PUBLIC = 'https://events.example.com';
const WRITE_KEY = 'wk_mobile_test_key';

const blocks = codeBlocks(GUIDE).filter((b) => b.marker?.startsWith('mobile '));
const code = (name: string): string => {
  const found = blocks.find((b) => b.marker === `mobile ${name}`);
  if (found === undefined) throw new Error(`${GUIDE} has no block marked "mobile ${name}"`);
  return found.code;
};

/** The string a block sets for a setting (`apiHost = "..."`, `.apiHost("...")`, `proxy: '...'`). */
function setting(block: string, name: string): string {
  const match = new RegExp(`\\b${name}\\b\\s*(?:=|:|\\()\\s*["']([^"']+)["']`).exec(block);
  if (match === null) throw new Error(`the block sets no ${name}`);
  return match[1]!;
}

/** The URLs a library builds: settings and batch upload, as its source builds them. */
function libraryUrls(name: string): { settings: string; upload: string } {
  const block = code(name);
  if (name === 'react-native') {
    // useSegmentEndpoints: `${cdnProxy}/projects/${writeKey}/settings` and `${proxy}/b`.
    expect(block).to.match(/useSegmentEndpoints:\s*true/);
    return { settings: `${setting(block, 'cdnProxy')}/projects/${WRITE_KEY}/settings`, upload: `${setting(block, 'proxy')}/b` };
  }
  // analytics-swift and analytics-kotlin: "https://\(cdnHost)/projects/\(writeKey)/settings" and "https://\(apiHost)/b".
  return { settings: `https://${setting(block, 'cdnHost')}/projects/${WRITE_KEY}/settings`, upload: `https://${setting(block, 'apiHost')}/b` };
}

describe('Segment\'s mobile libraries, by their wire format, against the forwarder (docs/sending-from-a-mobile-app.md)', function () {
  this.timeout(20_000);
  const receiver = useReceiver();
  let forwarder: Forwarder;
  let url: string;
  /** A URL the library builds, sent to the forwarder here instead (TLS is the proxy's in production). */
  const local = (built: string): string => {
    expect(built.startsWith(`${PUBLIC}/`), built).to.equal(true);
    return `${url}${built.slice(PUBLIC.length)}`;
  };

  before(async () => {
    expect(blocks.map((b) => b.marker).sort()).to.deep.equal(['mobile kotlin', 'mobile react-native', 'mobile swift']);
    forwarder = createForwarder(
      {
        storage: { type: 'memory' },
        http: { publicUrl: PUBLIC },
        sources: [{ name: 'app', writeKey: WRITE_KEY, destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/app` }] } } }],
      },
      { store: new MemoryStore() },
    );
    ({ url } = await forwarder.listen({ port: 0 }));
  });
  after(async () => {
    await forwarder?.close();
  });

  const screen = (messageId: string) => ({
    type: 'screen',
    anonymousId: 'device-anon-1',
    name: 'Home',
    messageId,
    timestamp: '2026-03-01T12:00:00.000Z',
    context: { device: { model: 'iPhone15,2', type: 'ios' }, os: { name: 'iOS', version: '17.4' }, app: { build: '42', name: 'Shop', version: '2.1.0' } },
  });
  /** A batch file as the libraries write it: the events, then `sentAt` and `writeKey` at the end. */
  const batchFile = (events: object[]) => `{"batch":[${events.map((e) => JSON.stringify(e)).join(',')}],"sentAt":"${new Date().toISOString()}","writeKey":"${WRITE_KEY}"}`;

  for (const name of ['swift', 'kotlin', 'react-native']) {
    it(`${name}: the settings URL it builds answers with the block's own host as apiHost`, async () => {
      const { settings, upload } = libraryUrls(name);
      const answer = await send(local(settings), { headers: { 'User-Agent': `${name}-test` } });
      expect(answer.status).to.equal(200);
      const segment = answer.json.integrations['Segment.io'];
      expect(segment).to.include({ apiKey: WRITE_KEY, protocol: 'https' });
      // What the library uploads to once it has the settings is where the block sends too.
      expect(`https://${segment.apiHost}/b`).to.equal(upload);
    });
  }

  it('swift: a batch file as JSON, the key in the body', async () => {
    const messageId = `swift-${Math.random()}`;
    const answer = await send(local(libraryUrls('swift').upload), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json; charset=utf-8', 'User-Agent': 'analytics-ios/1.5.11', 'Accept-Encoding': 'gzip' },
      body: batchFile([screen(messageId)]),
    });
    expect(answer.status, answer.text).to.equal(200);
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === messageId), 'the screen');
    const json = receiver.delivered.find((r) => r.json.messageId === messageId)!.json;
    expect(json).to.include({ type: 'screen', userId: 'device-anon-1', name: 'Home' });
    expect(json.context).to.deep.include({ device: { model: 'iPhone15,2', type: 'ios' }, app: { build: '42', name: 'Shop', version: '2.1.0' } });
    expect(JSON.stringify(json)).to.not.contain(WRITE_KEY).and.not.contain('sentAt');
  });

  it('kotlin: a batch file gzipped, as text/plain, in chunks, the key in the body', async () => {
    const messageId = `kotlin-${Math.random()}`;
    const answer = await send(local(libraryUrls('kotlin').upload), {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain', 'Content-Encoding': 'gzip', 'Transfer-Encoding': 'chunked', 'User-Agent': 'analytics-kotlin/1.19.1' },
      body: gzipSync(batchFile([{ type: 'track', anonymousId: 'a-1', event: 'App Opened', messageId }])),
    });
    expect(answer.status, answer.text).to.equal(200);
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === messageId), 'the track');
  });

  it('react-native: JSON with the key in the body and as Basic auth, and X-Retry-Count', async () => {
    const messageId = `rn-${Math.random()}`;
    const answer = await send(local(libraryUrls('react-native').upload), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json; charset=utf-8', Authorization: basic(WRITE_KEY), 'X-Retry-Count': '0' },
      body: batchFile([{ type: 'identify', userId: 'user-9', traits: { plan: 'pro' }, messageId }]),
    });
    expect(answer.status, answer.text).to.equal(200);
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === messageId), 'the identify');
  });

  it('older Swift and Kotlin releases: Basic auth only, no key in the body', async () => {
    const messageId = `basic-${Math.random()}`;
    const answer = await send(`${url}/v1/b`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain', Authorization: basic(WRITE_KEY) },
      body: JSON.stringify({ batch: [{ type: 'track', userId: 'u', event: 'E', messageId }], sentAt: new Date().toISOString() }),
    });
    expect(answer.status).to.equal(200);
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === messageId), 'the track');
  });
});
