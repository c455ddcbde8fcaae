// Ported from Segment's analytics-next packages/node: graceful-shutdown-integration.test.ts,
// rewritten for mocha. Adapted: timings are asserted by order (what finished before what), not
// by milliseconds; a call after close also gets ClientClosedError in its callback; overlapping
// flush() calls are not warned about (both resolve once the work is done).
import { expect } from 'chai';
import { ClientClosedError, Context, type Plugin } from '../../../src/compat/segment';
import { createSegmentClient, sleep } from '../helpers';

const afterPlugin = (track?: Plugin['track']): Plugin => ({
  type: 'after',
  name: 'foo',
  version: 'bar',
  isLoaded: () => true,
  load: () => Promise.resolve(),
  ...(track ? { track } : {}),
});

describe('eventrelay/segment: exiting without losing events', () => {
  function setup(settings = {}) {
    return createSegmentClient({ flushAt: 1, flushInterval: 10_000, ...settings });
  }
  const trackCall = (analytics: ReturnType<typeof setup>['analytics'], cb?: () => void) =>
    analytics.track({ userId: 'foo', event: 'Thing Updated' }, cb);

  describe('drained', () => {
    it('is emitted when the only event is finished', async () => {
      const { analytics } = setup();
      const drained = new Promise((resolve) => analytics.once('drained', () => resolve('drained')));
      trackCall(analytics);
      expect(await drained).to.equal('drained');
    });

    it('is emitted once for several events sent together', async () => {
      const { analytics } = setup();
      let drained = 0;
      analytics.on('drained', () => drained++);
      trackCall(analytics);
      trackCall(analytics);
      trackCall(analytics);
      await analytics.flush();
      await sleep(20);
      expect(drained).to.equal(1);
    });

    it('closeAndFlush calls every callback before it resolves', async () => {
      const { analytics } = setup();
      let called = 0;
      analytics.track({ userId: 'foo', event: 'bar' }, () => called++);
      expect(called).to.equal(0);
      await analytics.closeAndFlush();
      expect(called).to.equal(1);
    });

    it('closeAndFlush waits for callbacks that return a promise', async () => {
      const { analytics } = setup();
      const done = new Promise<Context>((resolve) => {
        analytics.track({ userId: 'abc', event: 'def' }, (_err, ctx) => sleep(100).then(() => resolve(ctx!)));
      });
      const first = await Promise.race([analytics.closeAndFlush().then(() => 'closed'), done]);
      expect(first).to.be.instanceOf(Context);
    });
  });

  describe('closeAndFlush()', () => {
    it('resolves at its timeout while a plugin still holds an event', async () => {
      const { analytics } = setup();
      let pluginDone = false;
      await analytics.register(
        afterPlugin(async (ctx) => {
          await sleep(2000);
          pluginDone = true;
          return ctx;
        }),
      );
      trackCall(analytics);
      await analytics.closeAndFlush({ timeout: 100 });
      expect(pluginDone).to.equal(false);
    });

    it('takes no new events, but sends the ones already made', async () => {
      const { analytics, http } = setup();
      let tracked = 0;
      analytics.on('track', () => tracked++);
      const refused: unknown[] = [];
      trackCall(analytics);
      const closed = analytics.closeAndFlush();
      analytics.track({ userId: 'foo', event: 'late' }, (err) => refused.push(err));
      analytics.track({ userId: 'foo', event: 'late' }, (err) => refused.push(err));
      await closed;
      expect(http.requests).to.have.length(1);
      expect(tracked).to.equal(1);
      expect(refused).to.have.length(2);
      expect(refused[0]).to.be.instanceOf(ClientClosedError);
    });

    it('emits call_after_close with each refused event', async () => {
      const { analytics } = setup();
      const events: { type: string }[] = [];
      analytics.on('call_after_close', (event: { type: string }) => events.push(event));
      trackCall(analytics);
      const closed = analytics.closeAndFlush();
      trackCall(analytics);
      trackCall(analytics);
      expect(events).to.have.length(2);
      expect(events.every((e) => e.type === 'track')).to.equal(true);
      await closed;
    });

    it('sends every queued event through a slow plugin, with one drained and each track event', async () => {
      const { analytics, http } = setup();
      let drained = 0;
      let tracked = 0;
      analytics.on('drained', () => drained++);
      analytics.on('track', () => tracked++);
      await analytics.register(
        afterPlugin(async (ctx) => {
          await sleep(100);
          return ctx;
        }),
      );
      trackCall(analytics);
      trackCall(analytics);
      await analytics.closeAndFlush();
      expect(http.requests).to.have.length(2);
      expect(tracked).to.equal(2);
      expect(drained).to.equal(1);
    });

    it('with nothing pending, resolves without emitting drained', async () => {
      const { analytics } = setup();
      let drained = false;
      analytics.on('drained', () => (drained = true));
      await analytics.closeAndFlush();
      expect(drained).to.equal(false);
    });

    it('sends a partly filled batch at once, not after flushInterval', async () => {
      const { analytics, http } = createSegmentClient({ flushInterval: 60_000, flushAt: 15 });
      trackCall(analytics);
      trackCall(analytics);
      const first = await Promise.race([analytics.closeAndFlush().then(() => 'closed'), sleep(10_000).then(() => 'interval')]);
      expect(first).to.equal('closed');
      expect(http.batches).to.have.length(1);
      expect(http.batches[0]).to.have.length(2);
    });

    it('waits for events still in a plugin, then sends them together', async () => {
      const { analytics, http } = createSegmentClient({ flushInterval: 60_000, flushAt: 15 });
      let inPlugin = 0;
      await analytics.register({
        type: 'enrichment',
        name: 'slow',
        isLoaded: () => true,
        load: () => Promise.resolve(),
        track: async (ctx) => {
          inPlugin++;
          await sleep(50);
          return ctx;
        },
      });
      trackCall(analytics);
      trackCall(analytics);
      await analytics.closeAndFlush();
      expect(inPlugin).to.equal(2);
      expect(http.batches).to.have.length(1);
      expect(http.batches[0]).to.have.length(2);
    });

    it('returns the same promise when called twice', () => {
      const { analytics } = setup();
      expect(analytics.closeAndFlush()).to.equal(analytics.closeAndFlush());
    });
  });

  describe('flush()', () => {
    const fifteen = () => createSegmentClient({ maxEventsInBatch: 15, flushInterval: 60_000 });

    it('can flush again and again', async () => {
      const { analytics, http } = fifteen();
      let drained = 0;
      let tracked = 0;
      analytics.on('drained', () => drained++);
      analytics.on('track', () => tracked++);
      trackCall(analytics);
      await analytics.flush();
      expect(http.requests).to.have.length(1);
      expect(tracked).to.equal(1);
      expect(drained).to.equal(1);

      trackCall(analytics);
      trackCall(analytics);
      await analytics.flush();
      expect(drained).to.equal(2);
      expect(http.requests).to.have.length(2);
      expect(tracked).to.equal(3);
    });

    it('does not wait for events made after it was called; the next flush sends them', async () => {
      let release!: () => void;
      const { analytics, http } = fifteen();
      http.respondWith(async () => {
        await new Promise<void>((resolve) => (release = resolve));
        return { status: 200, statusText: 'OK' };
      });
      let drained = 0;
      let tracked = 0;
      analytics.on('drained', () => drained++);
      analytics.on('track', () => tracked++);
      trackCall(analytics);
      const flushed = analytics.flush();
      await sleep(20);
      trackCall(analytics); // late: not part of this flush
      http.respondWith(() => ({ status: 200, statusText: 'OK' }));
      release();
      await flushed;
      expect(tracked).to.equal(1);
      expect(http.requests).to.have.length(1);

      trackCall(analytics);
      await analytics.flush();
      expect(http.requests).to.have.length(2);
      expect(http.batches[1]).to.have.length(2);
      expect(tracked).to.equal(3);
      // The late call was pending while the first batch was in flight, so calls fell to 0 only once.
      expect(drained).to.equal(1);
    });

    it('overlapping calls both resolve once everything is sent (adapted: no console warning)', async () => {
      const { analytics, http } = createSegmentClient({ maxEventsInBatch: 2, flushInterval: 60_000 });
      let tracked = 0;
      analytics.on('track', () => tracked++);
      const warnings: unknown[] = [];
      const warn = console.warn;
      console.warn = (...args: unknown[]) => warnings.push(args);
      try {
        trackCall(analytics);
        const flushes = Promise.all([analytics.flush(), analytics.flush()]);
        trackCall(analytics);
        trackCall(analytics);
        await flushes;
        await analytics.flush();
      } finally {
        console.warn = warn;
      }
      expect(warnings).to.have.length(0);
      expect(tracked).to.equal(3);
      expect(http.messagesCount()).to.equal(3);
    });

    it('resolves at its timeout when delivery takes longer', async () => {
      const { analytics, http } = fifteen();
      http.respondWith(() => new Promise(() => {}));
      trackCall(analytics);
      const first = await Promise.race([analytics.flush({ timeout: 50 }).then(() => 'flush'), sleep(5000).then(() => 'late')]);
      expect(first).to.equal('flush');
    });
  });
});
