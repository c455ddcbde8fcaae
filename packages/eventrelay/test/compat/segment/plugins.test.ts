// Ported from Segment's analytics-next packages/node: the register/deregister/ready blocks of
// integration.test.ts and plugins.test.ts, rewritten for mocha, plus the plugin kinds of
// Segment's event queue (before, enrichment, destination, after) through the public API.
// Adapted: "waits for plugins to be registered" registers before the call it checks (a call
// made before register() goes out without the plugin); the Segment.io plugin Segment keeps in
// its private queue does not exist here (eventrelay's client is the destination).
import { expect } from 'chai';
import { Context, ContextCancelation, type Plugin } from '../../../src/compat/segment';
import { createSegmentClient, nextCtx, sleep } from '../helpers';

function testPlugin(overrides: Partial<Plugin> = {}) {
  const calls: string[] = [];
  const hook = (name: string) => (ctx: Context) => {
    calls.push(`${name}:${ctx.event.type}`);
    return Promise.resolve(ctx);
  };
  const plugin: Plugin = {
    name: 'Test Plugin',
    type: 'destination',
    version: '0.1.0',
    isLoaded: () => true,
    load: () => {
      calls.push('load');
      return Promise.resolve();
    },
    unload: () => {
      calls.push('unload');
      return Promise.resolve();
    },
    alias: hook('alias'),
    group: hook('group'),
    identify: hook('identify'),
    page: hook('page'),
    screen: hook('screen'),
    track: hook('track'),
    ...overrides,
  };
  return { plugin, calls };
}

describe('eventrelay/segment plugins', () => {
  it('register() loads a plugin and emits register with its name', async () => {
    const { analytics } = createSegmentClient();
    const { plugin, calls } = testPlugin();
    const registered = new Promise((resolve) => analytics.once('register', resolve));
    await analytics.register(plugin);
    expect(calls).to.deep.equal(['load']);
    expect(await registered).to.deep.equal(['Test Plugin']);
  });

  it('a call made while register() runs waits for it (adapted: register is called first)', async () => {
    const { analytics } = createSegmentClient();
    const order: string[] = [];
    analytics.on('register', () => order.push('register'));
    const { plugin } = testPlugin({
      load: async () => {
        await sleep(20);
      },
      identify: (ctx) => {
        order.push('identify');
        return Promise.resolve(ctx);
      },
    });
    void analytics.register(plugin);
    analytics.identify({ userId: 'foo' });
    await nextCtx(analytics, 'identify');
    expect(order).to.deep.equal(['register', 'identify']);
  });

  it('deregister() unloads a plugin given its name, and it sees no more events', async () => {
    const { analytics } = createSegmentClient();
    const { plugin, calls } = testPlugin();
    await analytics.register(plugin);
    const deregistered = new Promise((resolve) => analytics.once('deregister', resolve));
    await analytics.deregister('Test Plugin');
    expect(await deregistered).to.deep.equal(['Test Plugin']);
    expect(calls).to.deep.equal(['load', 'unload']);
    analytics.track({ userId: 'u', event: 'E' });
    await nextCtx(analytics, 'track');
    expect(calls).to.deep.equal(['load', 'unload']);
  });

  it('an enrichment plugin changes what is sent', async () => {
    const { analytics, http } = createSegmentClient();
    await analytics.register({
      name: 'enrich',
      type: 'enrichment',
      isLoaded: () => true,
      load: () => Promise.resolve(),
      track: (ctx) => {
        ctx.updateEvent('properties.enriched', true);
        ctx.updateEvent('context.app.name', 'shop');
        return ctx;
      },
    });
    analytics.track({ userId: 'u', event: 'E', properties: { a: 1 } });
    await nextCtx(analytics, 'track');
    const sent = http.batches[0]![0]!;
    expect(sent.properties).to.deep.equal({ a: 1, enriched: true });
    expect((sent.context as { app: unknown }).app).to.deep.equal({ name: 'shop' });
  });

  it('an enrichment plugin that throws is skipped; the event is still sent', async () => {
    const { analytics, http } = createSegmentClient();
    await analytics.register({
      name: 'broken',
      type: 'enrichment',
      isLoaded: () => true,
      load: () => Promise.resolve(),
      track: () => {
        throw new Error('broken plugin');
      },
    });
    analytics.track({ userId: 'u', event: 'E' });
    const ctx = await nextCtx(analytics, 'track');
    expect(http.requests).to.have.length(1);
    expect(ctx.logs().some((l) => l.level === 'error')).to.equal(true);
  });

  it('a before plugin that cancels stops the event: the callback gets the reason, nothing is sent', async () => {
    const { analytics, http } = createSegmentClient();
    await analytics.register({
      name: 'gate',
      type: 'before',
      isLoaded: () => true,
      load: () => Promise.resolve(),
      track: (ctx) => ctx.cancel(new ContextCancelation({ retry: false, reason: 'consent missing' })),
    });
    const failures: unknown[] = [];
    analytics.on('error', (e) => failures.push(e));
    const err = await new Promise((resolve) => analytics.track({ userId: 'u', event: 'E' }, resolve));
    expect(err).to.be.instanceOf(Error);
    expect((err as Error).message).to.include('consent missing');
    expect(failures).to.have.length(1);
    await analytics.flush();
    expect(http.requests).to.have.length(0);
  });

  it('a before plugin that throws stops the event with that error', async () => {
    const { analytics, http } = createSegmentClient();
    await analytics.register({
      name: 'thrower',
      type: 'before',
      isLoaded: () => true,
      load: () => Promise.resolve(),
      track: () => {
        throw new Error('not this one');
      },
    });
    const err = await new Promise((resolve) => analytics.track({ userId: 'u', event: 'E' }, resolve));
    expect((err as Error).message).to.equal('not this one');
    await analytics.flush();
    expect(http.requests).to.have.length(0);
  });

  it('a call made before register() goes out without the plugin', async () => {
    const { analytics } = createSegmentClient();
    const { plugin, calls } = testPlugin();
    analytics.track({ userId: 'u', event: 'early' });
    await analytics.register(plugin);
    await analytics.flush();
    expect(calls).to.deep.equal(['load']);
  });

  it('a destination plugin is skipped when integrations turn it off, by name or with All: false', async () => {
    const { analytics } = createSegmentClient();
    const { plugin, calls } = testPlugin();
    await analytics.register(plugin);
    analytics.track({ userId: 'u', event: 'A', integrations: { 'Test Plugin': false } });
    await nextCtx(analytics, 'track');
    analytics.track({ userId: 'u', event: 'B', integrations: { All: false } });
    await nextCtx(analytics, 'track');
    analytics.track({ userId: 'u', event: 'C', integrations: { All: false, 'Test Plugin': true } });
    await nextCtx(analytics, 'track');
    expect(calls).to.deep.equal(['load', 'track:track']);
  });

  it("integrations { 'Segment.io': false } sends nothing, and the call still succeeds", async () => {
    const { analytics, http } = createSegmentClient();
    const err = await new Promise((resolve) => analytics.track({ userId: 'u', event: 'E', integrations: { 'Segment.io': false } }, resolve));
    expect(err).to.equal(undefined);
    await analytics.flush();
    expect(http.requests).to.have.length(0);
  });

  it('a plugin whose load fails is left out and reported as initialization_failure', async () => {
    const { analytics } = createSegmentClient();
    const failures: { code: string }[] = [];
    analytics.on('error', (e: { code: string }) => failures.push(e));
    const { plugin, calls } = testPlugin({ type: 'enrichment', load: () => Promise.reject(new Error('cannot load')) });
    await analytics.register(plugin);
    analytics.track({ userId: 'u', event: 'E' });
    await nextCtx(analytics, 'track');
    expect(failures.map((f) => f.code)).to.deep.equal(['initialization_failure']);
    expect(calls).to.deep.equal([]);
  });

  it('callbacks run after the after plugins', async () => {
    const { analytics } = createSegmentClient();
    const order: string[] = [];
    await analytics.register({
      name: 'after',
      type: 'after',
      isLoaded: () => true,
      load: () => Promise.resolve(),
      track: async (ctx) => {
        await sleep(10);
        order.push('after');
        return ctx;
      },
    });
    await new Promise((resolve) => analytics.track({ userId: 'u', event: 'E' }, () => resolve(order.push('callback'))));
    expect(order).to.deep.equal(['after', 'callback']);
  });
});

describe('eventrelay/segment Context', () => {
  it('updateEvent sets nested fields, never switches an integration back on, ignores __proto__', () => {
    const ctx = new Context({ type: 'track', messageId: 'm', timestamp: new Date(), context: {}, integrations: { Foo: false } });
    ctx.updateEvent('context.device.id', 'd1');
    ctx.updateEvent('integrations.Foo.apiKey', 'k');
    ctx.updateEvent('__proto__.polluted', true);
    expect(ctx.event.context).to.deep.equal({ device: { id: 'd1' } });
    expect(ctx.event.integrations.Foo).to.equal(false);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
  });

  it('has a stable id, logs, stats and a JSON form', () => {
    const ctx = new Context({ type: 'track', messageId: 'm', timestamp: new Date(), context: {}, integrations: {} });
    expect(ctx.id).to.equal(ctx.id);
    expect(ctx.isSame(ctx)).to.equal(true);
    ctx.log('warn', 'careful');
    ctx.stats.increment('seen');
    const json = ctx.toJSON();
    expect(json.logs.map((l) => l.message)).to.deep.equal(['careful']);
    expect(json.metrics.map((m) => m.metric)).to.deep.equal(['seen']);
    expect(() => ctx.cancel()).to.throw();
  });
});
