// Ported from Segment's analytics-next packages/node: settings.test.ts and the
// "Settings / Configuration Init" block of integration.test.ts, rewritten for mocha.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Analytics, ConfigError, QueueFullError, ValidationError } from '../../../src/compat/segment';
import { createSegmentClient, nextCtx } from '../helpers';

describe('eventrelay/segment settings', () => {
  it('throws a ConfigError naming writeKey when there is none', () => {
    expect(() => new Analytics({ writeKey: undefined as never })).to.throw(ConfigError, /writeKey/i);
    expect(() => createSegmentClient({ writeKey: undefined as never })).to.throw(/writeKey/i);
  });

  it('sends to host + path when they are given', async () => {
    const { analytics, http } = createSegmentClient({ host: 'http://foo.com', path: '/bar' });
    const tracked = nextCtx(analytics, 'track');
    analytics.track({ event: 'foo', userId: 'sup' });
    await tracked;
    expect(http.requests[0]!.url).to.equal('http://foo.com/bar');
  });

  it('sends to https://api.segment.io/v1/batch by default, as Segment does', async () => {
    const { analytics, http } = createSegmentClient({});
    analytics.track({ event: 'foo', userId: 'sup' });
    await analytics.closeAndFlush();
    expect(http.requests[0]!.url).to.equal('https://api.segment.io/v1/batch');
  });

  it('without httpClient, sends with eventrelay’s node:http transport (real server on 127.0.0.1)', async () => {
    const bodies: string[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        bodies.push(body);
        res.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const analytics = new Analytics({ writeKey: 'foo', flushAt: 1, host: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
      const err = await new Promise((resolve) => analytics.track({ userId: 'u', event: 'E' }, resolve));
      await analytics.closeAndFlush();
      expect(err).to.equal(undefined);
      expect(JSON.parse(bodies[0]!).batch[0]).to.include({ type: 'track', userId: 'u', event: 'E' });
    } finally {
      server.close();
    }
  });

  it('refuses httpRequestTimeout 0 with a ConfigError (Segment times out at once)', () => {
    expect(() => createSegmentClient({ httpRequestTimeout: 0 })).to.throw(ConfigError, /timeout/);
  });

  it('takes eventrelay’s maxQueueSize: calls past it get QueueFullError', async () => {
    const { analytics } = createSegmentClient({ maxQueueSize: 1, flushInterval: 60_000 });
    analytics.track({ userId: 'u', event: 'kept' });
    const err = await new Promise((resolve) => analytics.track({ userId: 'u', event: 'refused' }, resolve));
    expect(err).to.be.instanceOf(QueueFullError);
    await analytics.closeAndFlush();
  });

  it('with disable, still refuses an invalid call', async () => {
    const { analytics } = createSegmentClient({ disable: true });
    const err = await new Promise((resolve) => analytics.track({ userId: 'u' } as never, resolve));
    expect(err).to.be.instanceOf(ValidationError);
  });

  it('throws when host is not a URL', () => {
    expect(() => createSegmentClient({ host: 'SHOULD_FAIL', path: '/bar' })).to.throw(ConfigError);
  });

  it('batches 15 messages by default (Segment flushAt), maxEventsInBatch as its old name', async () => {
    const { analytics, http } = createSegmentClient({ flushInterval: 60_000 });
    for (let i = 0; i < 16; i++) analytics.track({ event: 'E', userId: `u${i}` });
    await nextCtx(analytics, 'track');
    expect(http.batches[0]).to.have.length(15);
    await analytics.closeAndFlush();

    const old = createSegmentClient({ flushInterval: 60_000, maxEventsInBatch: 2 });
    for (let i = 0; i < 3; i++) old.analytics.track({ event: 'E', userId: `u${i}` });
    await nextCtx(old.analytics, 'track');
    expect(old.http.batches[0]).to.have.length(2);
    await old.analytics.closeAndFlush();
  });

  it('keeps flushAt at least 1, as Segment does', async () => {
    const { analytics, http } = createSegmentClient({ flushAt: 0, flushInterval: 60_000 });
    analytics.track({ event: 'E', userId: 'u' });
    await nextCtx(analytics, 'track');
    expect(http.batches[0]).to.have.length(1);
  });

  it('reports the package version as VERSION', () => {
    const { analytics } = createSegmentClient();
    expect(analytics.VERSION).to.match(/^\d+\.\d+\.\d+/);
  });

  it('has a ready promise that resolves with undefined', async () => {
    const { analytics } = createSegmentClient();
    expect(await analytics.ready).to.equal(undefined);
  });
});
