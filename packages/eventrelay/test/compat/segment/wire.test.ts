// Ported from Segment's analytics-next packages/node: http-integration.test.ts (request
// headers and bodies of the six calls) and the public-API parts of
// plugins/segmentio/__tests__/publisher.test.ts (batching, size limits, 400/500/network
// answers, maxRetries 0), rewritten for mocha against a recording Transport instead of nock.
// Adapted: `context.library` is eventrelay's, there is no `_metadata` and no `writeKey` in the
// body, the user agent is eventrelay's; empty `properties`/`integrations` the caller did not give
// are not added when the call has no callback; the batch limit is eventrelay's 500 KB (Segment: 480 KB).
import { expect } from 'chai';
import { HttpError, NetworkError, PayloadTooLargeError } from '../../../src/compat/segment';
import { VERSION } from '../../../src/version';
import { FakeTransport } from '../../../../../test/helpers/fake-transport';
import { Analytics } from '../../../src/compat/segment';
import { nextCtx } from '../helpers';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function client(settings: Record<string, unknown> = {}) {
  const transport = new FakeTransport();
  const analytics = new Analytics({ writeKey: 'foo', flushInterval: 100, transport, minRetryDelay: 1, maxRetryDelay: 5, ...settings });
  return { analytics, transport };
}

function expectEnvelope(body: { batch: Record<string, unknown>[]; sentAt: string }, fields: Record<string, unknown>): void {
  expect(body.sentAt).to.match(ISO);
  expect(body.batch).to.have.length(1);
  const [message] = body.batch;
  expect(message!.messageId).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(message!.timestamp).to.match(ISO);
  expect(message!.context).to.deep.equal({ library: { name: 'eventrelay', version: VERSION } });
  expect(message).to.deep.include(fields);
  // Without a callback the parameters go out as given: no empty `integrations` (Segment adds `{}`).
  expect(message).not.to.have.property('integrations');
}

describe('eventrelay/segment on the wire', () => {
  it('sends Basic auth of the write key and JSON', async () => {
    const { analytics, transport } = client();
    analytics.identify({ userId: 'my_user_id', traits: { foo: 'bar' } });
    await nextCtx(analytics, 'identify');
    const { headers } = transport.requests[0]!;
    expect(headers.authorization).to.equal('Basic Zm9vOg==');
    expect(headers['content-type']).to.equal('application/json');
  });

  it('keeps the caller’s timestamp, userId and integrations', async () => {
    const { analytics, transport } = client();
    const event = { event: 'foo', userId: 'foo', properties: { hello: 'world' }, integrations: { foo: true }, timestamp: new Date() };
    analytics.track(event);
    await nextCtx(analytics, 'track');
    const sent = transport.messages[0]!;
    expect(sent.timestamp).to.equal(event.timestamp.toISOString());
    expect(sent.userId).to.equal('foo');
    expect(sent.integrations).to.deep.equal({ foo: true });
  });

  const cases: [string, (a: Analytics) => void, Record<string, unknown>][] = [
    ['identify', (a) => a.identify({ userId: 'my_user_id', traits: { foo: 'bar' } }), { type: 'identify', userId: 'my_user_id', traits: { foo: 'bar' } }],
    ['track', (a) => a.track({ event: 'foo', userId: 'foo', properties: { hello: 'world' } }), { type: 'track', event: 'foo', userId: 'foo', properties: { hello: 'world' } }],
    ['page', (a) => a.page({ name: 'page', anonymousId: 'foo' }), { type: 'page', name: 'page', anonymousId: 'foo' }],
    [
      'group',
      (a) => a.group({ groupId: 'myGroupId', anonymousId: 'foo', traits: { some_traits: 123 } }),
      { type: 'group', groupId: 'myGroupId', anonymousId: 'foo', traits: { some_traits: 123 } },
    ],
    ['alias', (a) => a.alias({ userId: 'alias', previousId: 'previous' }), { type: 'alias', userId: 'alias', previousId: 'previous' }],
    [
      'screen',
      (a) => a.screen({ name: 'screen', anonymousId: 'foo', properties: { title: 'wip' } }),
      { type: 'screen', name: 'screen', anonymousId: 'foo', properties: { title: 'wip' } },
    ],
  ];
  for (const [type, call, fields] of cases) {
    it(`sends a ${type} body`, async () => {
      const { analytics, transport } = client();
      call(analytics);
      await nextCtx(analytics, type as 'track');
      expectEnvelope(transport.batches[0]!.body, fields);
    });
  }

  it('sends several events in one batch (flushAt)', async () => {
    const { analytics, transport } = client({ flushAt: 3, flushInterval: 60_000 });
    for (let i = 0; i < 3; i++) analytics.track({ userId: 'u', event: `E${i}` });
    await nextCtx(analytics, 'track');
    expect(transport.batches).to.have.length(1);
    expect(transport.batches[0]!.body.batch.map((m) => m.event)).to.deep.equal(['E0', 'E1', 'E2']);
  });

  it('sends a partial batch after flushInterval', async () => {
    const { analytics, transport } = client({ flushAt: 15, flushInterval: 30 });
    analytics.track({ userId: 'u', event: 'E' });
    analytics.track({ userId: 'u', event: 'E' });
    await nextCtx(analytics, 'track');
    expect(transport.batches[0]!.body.batch).to.have.length(2);
  });

  it('starts a new batch before one would pass 500 KB', async () => {
    const { analytics, transport } = client({ flushAt: 100, flushInterval: 60_000 });
    const big = 'x'.repeat(30_000);
    for (let i = 0; i < 20; i++) analytics.track({ userId: 'u', event: 'E', properties: { big } });
    await analytics.flush();
    expect(transport.batches.length).to.be.greaterThan(1);
    for (const batch of transport.batches) expect(batch.bytes).to.be.at.most(500 * 1024);
    expect(transport.messages).to.have.length(20);
  });

  it('refuses an event over 32 KB without sending it', async () => {
    const { analytics, transport } = client();
    const err = await new Promise((resolve) => analytics.track({ userId: 'u', event: 'E', properties: { big: 'x'.repeat(40_000) } }, resolve));
    expect(err).to.be.instanceOf(PayloadTooLargeError);
    await analytics.flush();
    expect(transport.requests).to.have.length(0);
  });

  it('does not retry a 400', async () => {
    const { analytics, transport } = client({ maxRetries: 3 });
    transport.respondWith(() => 400);
    const err = await new Promise((resolve) => analytics.track({ userId: 'u', event: 'E' }, resolve));
    expect(err).to.be.instanceOf(HttpError).with.property('status', 400);
    expect(transport.requests).to.have.length(1);
  });

  it('retries a 500 until it succeeds', async () => {
    const { analytics, transport } = client({ maxRetries: 3 });
    transport.respondWith((_r, index) => (index < 2 ? 500 : 200));
    const err = await new Promise((resolve) => analytics.track({ userId: 'u', event: 'E' }, resolve));
    expect(err).to.equal(undefined);
    expect(transport.requests).to.have.length(3);
  });

  it('retries network errors', async () => {
    const { analytics, transport } = client({ maxRetries: 3 });
    transport.respondWith((_r, index) => (index === 0 ? new NetworkError('connection reset') : 200));
    const err = await new Promise((resolve) => analytics.track({ userId: 'u', event: 'E' }, resolve));
    expect(err).to.equal(undefined);
    expect(transport.requests).to.have.length(2);
  });

  it('fails only the calls a 200 answer lists as rejected, through a Segment httpClient too', async () => {
    const answer = JSON.stringify({ success: true, rejected: [{ index: 1, code: 'ERR_VALIDATION', field: 'groupId', message: 'group needs groupId' }] });
    const analytics = new Analytics({
      writeKey: 'foo',
      flushAt: 3,
      httpClient: { makeRequest: async () => ({ status: 200, statusText: 'OK', text: async () => answer }) },
    });
    const outcomes = await Promise.all(
      [0, 1, 2].map((i) => new Promise((resolve) => analytics.track({ userId: 'u', event: `E${i}` }, (err) => resolve(err)))),
    );
    expect(outcomes[0]).to.equal(undefined);
    expect(outcomes[1]).to.be.instanceOf(Error);
    expect((outcomes[1] as { field?: string }).field).to.equal('groupId');
    expect(outcomes[2]).to.equal(undefined);
  });

  it('sends only once when maxRetries is 0', async () => {
    const { analytics, transport } = client({ maxRetries: 0 });
    transport.respondWith(() => 500);
    const err = await new Promise((resolve) => analytics.track({ userId: 'u', event: 'E' }, resolve));
    expect(err).to.be.instanceOf(HttpError).with.property('status', 500);
    expect(transport.requests).to.have.length(1);
  });
});
