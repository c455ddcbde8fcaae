// Ported from Segment's analytics-next packages/node: integration.test.ts (the six calls,
// messageId overrides, error handling), callback.test.ts and argument-validation.integration.test.ts,
// rewritten for mocha. Adapted where eventrelay decides differently: a bad call does not
// throw (its callback gets a ValidationError), and a failed request's reason is eventrelay's
// HttpError (status 404) rather than `new Error('[404] Not Found')`; the test client listens
// for the call events from the start (Segment's `resolveCtx` subscribes after the call).
import { expect } from 'chai';
import { Analytics, Context, HttpError, ValidationError, type DeliveryFailure } from '../../../src/compat/segment';
import { createSegmentClient, failure, nextCtx, RecordingHttpClient } from '../helpers';

const timestamp = new Date();

describe('eventrelay/segment calls', () => {
  describe('callbacks get (err, ctx)', () => {
    it('on success: no error, and the context of the call', async () => {
      const { analytics } = createSegmentClient({ flushAt: 1 });
      const [err, ctx] = await new Promise<[unknown, Context | undefined]>((resolve) =>
        analytics.track({ anonymousId: 'bar', event: 'event name' }, (e, c) => resolve([e, c])),
      );
      expect(err).to.equal(undefined);
      expect(ctx).to.be.instanceOf(Context);
      expect(ctx!.event.event).to.equal('event name');
      expect(ctx!.event.anonymousId).to.equal('bar');
      expect(ctx!.failedDelivery()).to.equal(undefined);
    });

    it('on failure: the reason (adapted: an HttpError with the status), and the context', async () => {
      const { analytics } = createSegmentClient({ flushAt: 1 }, { withError: true });
      const [err, ctx] = await new Promise<[unknown, Context | undefined]>((resolve) =>
        analytics.track({ anonymousId: 'bar', event: 'event name' }, (e, c) => resolve([e, c])),
      );
      expect(ctx!.event.event).to.equal('event name');
      expect(ctx!.event.anonymousId).to.equal('bar');
      expect(err).to.be.instanceOf(HttpError);
      expect((err as HttpError).status).to.equal(404);
      expect((err as HttpError).message).to.include('404 (Not Found)');
      expect(ctx!.failedDelivery()!.reason).to.equal(err);
    });
  });

  describe('argument validation (adapted: refused through the callback, never thrown)', () => {
    it('refuses a track without userId and anonymousId', async () => {
      const { analytics, http } = createSegmentClient();
      const errors: unknown[] = [];
      analytics.on('error', (e) => errors.push(e));
      let err: unknown;
      await new Promise<void>((resolve) => {
        expect(() =>
          analytics.track({ event: 'foo', anonymousId: undefined as never, userId: undefined as never }, (e) => {
            err = e;
            resolve();
          }),
        ).not.to.throw();
      });
      expect(err).to.be.instanceOf(ValidationError);
      expect((err as Error).message).to.match(/userId/);
      expect(errors).to.have.length(1);
      expect(errors[0]).to.include({ code: 'delivery_failure', reason: err });
      await analytics.flush();
      expect(http.requests).to.have.length(0);
    });

    it('refuses a call whose parameters are not an object (Segment would throw a TypeError)', async () => {
      const { analytics } = createSegmentClient();
      const err = await new Promise((resolve) => analytics.track(undefined as never, resolve));
      expect(err).to.be.instanceOf(ValidationError);
    });

    it('refuses a call whose parameters throw when read, and calls back once', async () => {
      const { analytics } = createSegmentClient();
      const hostile = {
        get userId(): string {
          throw new Error('boom');
        },
        event: 'E',
      };
      const calls: unknown[] = [];
      expect(() => analytics.track(hostile as never, (e) => calls.push(e))).not.to.throw();
      await analytics.flush();
      expect(calls).to.have.length(1);
      expect(calls[0]).to.be.instanceOf(ValidationError);
    });
  });

  it('emits error with code delivery_failure and the reason when a request fails', async () => {
    const http = new RecordingHttpClient(() => failure(503, 'Service Unavailable'));
    const { analytics } = createSegmentClient({ maxRetries: 0, httpClient: http });
    const outcome = nextCtx(analytics, 'track').then(
      () => undefined,
      (e: unknown) => e,
    );
    analytics.track({ event: 'foo', userId: 'sup' });
    const err = (await outcome) as { code: string; reason: HttpError; ctx: Context };
    expect(err.code).to.equal('delivery_failure');
    expect(err.reason).to.be.instanceOf(HttpError);
    expect(err.reason.status).to.equal(503);
    expect(err.ctx).to.be.instanceOf(Context);
    expect(err.ctx.event).to.deep.include({ type: 'track', event: 'foo', userId: 'sup' });
    expect(err.ctx.failedDelivery()!.reason).to.equal(err.reason);
  });

  describe('what is kept of a call', () => {
    it('without a callback or a listener for its type, an error’s ctx holds the type and messageId only', async () => {
      const http = new RecordingHttpClient(() => failure(400, 'Bad Request'));
      const analytics = new Analytics({ writeKey: 'foo', flushAt: 1, httpClient: http });
      const failed = new Promise<DeliveryFailure>((resolve) => analytics.once('error', resolve));
      analytics.track({ userId: 'sup', event: 'foo', messageId: 'm-1' });
      const { ctx, reason } = await failed;
      if (ctx === undefined) expect.fail('a delivery failure carries the context of its call');
      expect(ctx.event).to.deep.include({ type: 'track', messageId: 'm-1' });
      expect(ctx.event.userId).to.equal(undefined);
      expect(ctx.failedDelivery()!.reason).to.equal(reason);
    });

    it('with a listener for its type attached before the call, the event is whole', async () => {
      const analytics = new Analytics({ writeKey: 'foo', flushAt: 1, httpClient: new RecordingHttpClient() });
      const tracked = nextCtx(analytics, 'track');
      analytics.track({ userId: 'sup', event: 'foo', properties: { a: 1 } });
      const ctx = await tracked;
      expect(ctx.event).to.deep.include({ type: 'track', userId: 'sup', event: 'foo', properties: { a: 1 } });
    });
  });

  describe('alias', () => {
    it('makes alias events', async () => {
      const { analytics } = createSegmentClient();
      analytics.alias({ userId: 'chris radek', previousId: 'chris', timestamp });
      const ctx = await nextCtx(analytics, 'alias');
      expect(ctx.event.userId).to.equal('chris radek');
      expect(ctx.event.previousId).to.equal('chris');
      expect(ctx.event.timestamp).to.equal(timestamp);
      expect(ctx.event.messageId).to.be.a('string');
    });

    it('takes a messageId', async () => {
      const { analytics, http } = createSegmentClient();
      analytics.alias({ userId: 'foo', previousId: 'bar', messageId: 'overridden' });
      const ctx = await nextCtx(analytics, 'alias');
      expect(ctx.event.messageId).to.equal('overridden');
      expect(http.batches[0]![0]!.messageId).to.equal('overridden');
    });
  });

  describe('group', () => {
    it('makes group events', async () => {
      const { analytics } = createSegmentClient();
      analytics.group({ groupId: 'coolKids', traits: { coolKids: true }, userId: 'foo', anonymousId: 'bar', timestamp });
      const ctx = await nextCtx(analytics, 'group');
      expect(ctx.event.groupId).to.equal('coolKids');
      expect(ctx.event.traits).to.deep.equal({ coolKids: true });
      expect(ctx.event.userId).to.equal('foo');
      expect(ctx.event.anonymousId).to.equal('bar');
      expect(ctx.event.timestamp).to.equal(timestamp);
      expect(ctx.event.messageId).to.be.a('string');
    });

    it('keeps calls apart', async () => {
      const { analytics } = createSegmentClient();
      analytics.group({ groupId: 'coolKids', traits: { foo: 'foo' }, anonymousId: 'unknown' });
      const ctx1 = await nextCtx(analytics, 'group');
      analytics.group({ groupId: 'coolKids', traits: { bar: 'bar' }, userId: 'me' });
      const ctx2 = await nextCtx(analytics, 'group');
      expect(ctx1.event.traits).to.deep.equal({ foo: 'foo' });
      expect(ctx1.event.anonymousId).to.equal('unknown');
      expect(ctx1.event.userId).to.equal(undefined);
      expect(ctx2.event.traits).to.deep.equal({ bar: 'bar' });
      expect(ctx2.event.anonymousId).to.equal(undefined);
      expect(ctx2.event.userId).to.equal('me');
    });

    it('takes a messageId', async () => {
      const { analytics } = createSegmentClient();
      analytics.group({ groupId: 'foo', userId: 'sup', messageId: 'overridden' });
      expect((await nextCtx(analytics, 'group')).event.messageId).to.equal('overridden');
    });
  });

  describe('identify', () => {
    it('makes identify events', async () => {
      const { analytics } = createSegmentClient();
      analytics.identify({ timestamp, userId: 'user-id', traits: { name: 'Chris Radek' } });
      const ctx1 = await nextCtx(analytics, 'identify');
      expect(ctx1.event.userId).to.equal('user-id');
      expect(ctx1.event.anonymousId).to.equal(undefined);
      expect(ctx1.event.traits).to.deep.equal({ name: 'Chris Radek' });
      expect(ctx1.event.timestamp).to.equal(timestamp);

      analytics.identify({ userId: 'user-id', anonymousId: 'unknown' });
      const ctx2 = await nextCtx(analytics, 'identify');
      expect(ctx2.event.userId).to.equal('user-id');
      expect(ctx2.event.anonymousId).to.equal('unknown');
      expect(ctx2.event.traits).to.deep.equal({});
      expect(ctx2.event.timestamp).to.be.instanceOf(Date);
    });
  });

  describe('page', () => {
    it('makes page events, with the category also in properties', async () => {
      const { analytics } = createSegmentClient();
      const name = 'How to write a test';
      analytics.page({ category: 'Docs', name, anonymousId: 'unknown', timestamp });
      const ctx1 = await nextCtx(analytics, 'page');
      expect(ctx1.event.type).to.equal('page');
      expect(ctx1.event.name).to.equal(name);
      expect(ctx1.event.anonymousId).to.equal('unknown');
      expect(ctx1.event.userId).to.equal(undefined);
      expect(ctx1.event.properties).to.deep.equal({ category: 'Docs' });
      expect(ctx1.event.timestamp).to.equal(timestamp);
      expect(ctx1.event.messageId).to.be.a('string');

      analytics.page({ name, properties: { title: 'wip' }, userId: 'user-id' });
      const ctx2 = await nextCtx(analytics, 'page');
      expect(ctx2.event.name).to.equal(name);
      expect(ctx2.event.anonymousId).to.equal(undefined);
      expect(ctx2.event.userId).to.equal('user-id');
      expect(ctx2.event.properties).to.deep.equal({ title: 'wip' });
      expect(ctx2.event.timestamp).to.be.instanceOf(Date);

      analytics.page({ properties: { title: 'invisible' }, userId: 'user-id' });
      const ctx3 = await nextCtx(analytics, 'page');
      expect(ctx3.event.name).to.equal(undefined);
      expect(ctx3.event.properties).to.deep.equal({ title: 'invisible' });
    });

    it('takes a messageId', async () => {
      const { analytics } = createSegmentClient();
      analytics.page({ name: 'foo', userId: 'sup', messageId: 'overridden' });
      expect((await nextCtx(analytics, 'page')).event.messageId).to.equal('overridden');
    });
  });

  describe('screen', () => {
    it('makes screen events', async () => {
      const { analytics } = createSegmentClient();
      analytics.screen({ name: 'Home Screen', properties: { title: 'wip' }, userId: 'user-id', timestamp });
      const ctx1 = await nextCtx(analytics, 'screen');
      expect(ctx1.event.type).to.equal('screen');
      expect(ctx1.event.name).to.equal('Home Screen');
      expect(ctx1.event.anonymousId).to.equal(undefined);
      expect(ctx1.event.userId).to.equal('user-id');
      expect(ctx1.event.properties).to.deep.equal({ title: 'wip' });
      expect(ctx1.event.timestamp).to.equal(timestamp);

      analytics.screen({ properties: { title: 'invisible' }, userId: 'user-id' });
      const ctx2 = await nextCtx(analytics, 'screen');
      expect(ctx2.event.name).to.equal(undefined);
      expect(ctx2.event.properties).to.deep.equal({ title: 'invisible' });
      expect(ctx2.event.timestamp).to.be.instanceOf(Date);
    });

    it('takes a messageId', async () => {
      const { analytics } = createSegmentClient();
      analytics.screen({ name: 'foo', userId: 'sup', messageId: 'overridden' });
      expect((await nextCtx(analytics, 'screen')).event.messageId).to.equal('overridden');
    });
  });

  describe('track', () => {
    it('sends sentAt in the body', async () => {
      const { analytics, http } = createSegmentClient();
      analytics.track({ event: 'hello', userId: 'foo' });
      await nextCtx(analytics, 'track');
      expect(JSON.parse(http.requests[0]!.body).sentAt).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    });

    it('makes track events', async () => {
      const { analytics } = createSegmentClient();
      analytics.track({ event: 'Test Event', anonymousId: 'unknown', userId: 'known', timestamp });
      const ctx1 = await nextCtx(analytics, 'track');
      expect(ctx1.event.type).to.equal('track');
      expect(ctx1.event.event).to.equal('Test Event');
      expect(ctx1.event.properties).to.deep.equal({});
      expect(ctx1.event.anonymousId).to.equal('unknown');
      expect(ctx1.event.userId).to.equal('known');
      expect(ctx1.event.timestamp).to.equal(timestamp);

      analytics.track({ event: 'Test Event', properties: { foo: 'bar' }, userId: 'known' });
      const ctx2 = await nextCtx(analytics, 'track');
      expect(ctx2.event.properties).to.deep.equal({ foo: 'bar' });
      expect(ctx2.event.anonymousId).to.equal(undefined);
      expect(ctx2.event.timestamp).to.be.instanceOf(Date);
    });

    it('takes a messageId', async () => {
      const { analytics } = createSegmentClient();
      analytics.track({ event: 'foo', userId: 'sup', messageId: 'overridden' });
      expect((await nextCtx(analytics, 'track')).event.messageId).to.equal('overridden');
    });
  });
});
