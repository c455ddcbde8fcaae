// Ported from Segment's classic segmentio/analytics-node test.js (ava), rewritten for mocha.
// The classic tests stub `enqueue`/`flush` and fill the private `queue` by hand; here the same
// behaviour is checked through the public API and a recording Transport (an eventrelay extra).
// Adapted: bad calls do not throw (the callback gets a ValidationError / PayloadTooLargeError
// naming the field); `host` must be a URL; errors are eventrelay's typed errors.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import DefaultAnalytics, { Analytics, ConfigError, HttpError, PayloadTooLargeError, TimeoutError, ValidationError } from '../../../src/compat/analytics-node';
import { VERSION } from '../../../src/version';
import { FakeTransport } from '../../../../../test/helpers/fake-transport';
import { sleep, warningsDuring } from '../helpers';

function createClient(options: Record<string, unknown> = {}) {
  const transport = new FakeTransport();
  const client = new Analytics('key', { host: 'http://localhost:4063', transport, minRetryDelay: 1, maxRetryDelay: 5, ...options });
  client.flushed = true;
  return { client, transport };
}

/** The error a call's callback gets. */
function errorOf(run: (cb: (err?: Error) => void) => void): Promise<Error | undefined> {
  return new Promise((resolve) => run((err) => resolve(err)));
}

describe('eventrelay/analytics-node (the classic API)', () => {
  it('exposes a constructor, also as the default export', () => {
    expect(Analytics).to.be.a('function');
    expect(DefaultAnalytics).to.equal(Analytics);
  });

  it('requires a write key', () => {
    expect(() => new (Analytics as unknown as new () => Analytics)()).to.throw(ConfigError, /write key/);
  });

  it('has the classic defaults', () => {
    const client = new Analytics('key');
    expect(client.writeKey).to.equal('key');
    expect(client.host).to.equal('https://api.segment.io');
    expect(client.flushAt).to.equal(20);
    expect(client.flushInterval).to.equal(10000);
  });

  it('removes trailing slashes from host', () => {
    expect(new Analytics('key', { host: 'http://google.com///' }).host).to.equal('http://google.com');
  });

  it('takes options over the defaults (adapted: host must be a URL)', () => {
    const client = new Analytics('key', { host: 'http://a.example', flushAt: 1, flushInterval: 2 });
    expect(client.host).to.equal('http://a.example');
    expect(client.flushAt).to.equal(1);
    expect(client.flushInterval).to.equal(2);
  });

  it('keeps flushAt above zero', () => {
    expect(createClient({ flushAt: 0 }).client.flushAt).to.equal(1);
  });

  it('sends a message with type, timestamp, messageId and its context extended with the library', async () => {
    const { client, transport } = createClient();
    const timestamp = new Date();
    client.track({ userId: 'u', event: 'test', timestamp, context: { name: 'travis' } });
    await client.flush();
    const [message] = transport.messages;
    expect(message!.type).to.equal('track');
    expect(message!.timestamp).to.equal(timestamp.toISOString());
    expect(message!.messageId).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(message!.context).to.deep.equal({ name: 'travis', library: { name: 'eventrelay', version: VERSION } });
  });

  it('sends a numeric userId as a string', async () => {
    const { client, transport } = createClient();
    client.track({ userId: 10, event: 'event' });
    await client.flush();
    expect(transport.messages[0]!.userId).to.equal('10');
    expect(transport.messages[0]!.anonymousId).to.equal(undefined);
  });

  it('sends a numeric anonymousId as a string (losing precision as v8 does)', async () => {
    const { client, transport } = createClient();
    // eslint-disable-next-line no-loss-of-precision -- the classic test's own number, precision loss included
    client.screen({ anonymousId: 157963456373623802, name: 'screen name' });
    await client.flush();
    expect(transport.messages[0]!.anonymousId).to.equal('157963456373623800');
    expect(transport.messages[0]!.userId).to.equal(undefined);
  });

  it('takes string ids, and String objects', async () => {
    const { client, transport } = createClient();
    client.screen({ anonymousId: '15796345', userId: new String('prateek'), name: 'screen name' });
    await client.flush();
    expect(transport.messages[0]!.anonymousId).to.equal('15796345');
    expect(transport.messages[0]!.userId).to.equal('prateek');
  });

  it('does not change the caller’s message', async () => {
    const { client } = createClient();
    const message = { event: 'test', userId: 'u' };
    client.track(message);
    await client.flush();
    expect(message).to.deep.equal({ event: 'test', userId: 'u' });
  });

  it('sends the first message at once, then batches (flushed)', async () => {
    const { client, transport } = createClient({ flushAt: 2, flushInterval: 60_000 });
    client.flushed = false;
    client.track({ userId: 'u', event: 'first' });
    expect(client.flushed).to.equal(true);
    await sleep(20);
    expect(transport.requests).to.have.length(1);
    client.track({ userId: 'u', event: 'second' });
    await sleep(20);
    expect(transport.requests).to.have.length(1);
    client.track({ userId: 'u', event: 'third' });
    await sleep(20);
    expect(transport.requests).to.have.length(2);
  });

  it('sends when the queue reaches flushAt', async () => {
    const { client, transport } = createClient({ flushAt: 1, flushInterval: 60_000 });
    client.track({ userId: 'u', event: 'E' });
    await sleep(20);
    expect(transport.requests).to.have.length(1);
  });

  it('sends after flushInterval', async () => {
    const { client, transport } = createClient({ flushInterval: 10 });
    client.track({ userId: 'u', event: 'E' });
    expect(transport.requests).to.have.length(0);
    await sleep(60);
    expect(transport.requests).to.have.length(1);
  });

  it('does not restart the timer on a second message', async () => {
    const { client, transport } = createClient({ flushInterval: 40 });
    client.track({ userId: 'u', event: 'E' });
    await sleep(20);
    client.track({ userId: 'u', event: 'E' });
    await sleep(35);
    expect(transport.requests).to.have.length(1);
    expect(transport.messages).to.have.length(2);
  });

  it('with enable: false sends nothing and still calls back', async () => {
    const { client, transport } = createClient({ enable: false });
    expect(client.enable).to.equal(false);
    const err = await errorOf((cb) => client.track({ userId: 'u', event: 'E' }, cb));
    expect(err).to.equal(undefined);
    await client.flush();
    await sleep(20);
    expect(transport.requests).to.have.length(0);
  });

  it('enable cannot be changed afterwards', () => {
    const { client } = createClient();
    expect(() => ((client as { enable: boolean }).enable = false)).to.throw(TypeError);
    expect(client.enable).to.equal(true);
  });

  describe('flush()', () => {
    it('does not fail when nothing is queued', async () => {
      const { client } = createClient();
      const data = await client.flush();
      expect(data!.batch).to.deep.equal([]);
    });

    it('resolves with { batch, timestamp, sentAt } after calling every callback', async () => {
      const { client } = createClient({ flushAt: 10, flushInterval: 60_000 });
      const called: string[] = [];
      client.track({ userId: 'u', event: 'a' }, () => called.push('a'));
      client.track({ userId: 'u', event: 'b' }, () => called.push('b'));
      const data = await client.flush();
      expect(Object.keys(data!)).to.deep.equal(['batch', 'timestamp', 'sentAt']);
      expect(data!.batch.map((m) => m.event)).to.deep.equal(['a', 'b']);
      expect(data!.timestamp).to.be.instanceOf(Date);
      expect(data!.sentAt).to.be.instanceOf(Date);
      expect(called).to.deep.equal(['a', 'b']);
    });

    it('rejects with the error of a refused batch (Bad Request)', async () => {
      const { client, transport } = createClient({ retryCount: 0 });
      transport.respondWith(() => 400);
      client.track({ userId: 'u', event: 'E' }, () => {});
      const err = await client.flush().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(HttpError);
      expect((err as Error).message).to.include('Bad Request');
    });

    it('does not reject when errorHandler is set: errorHandler gets the error once, the callback too', async () => {
      const handled: Error[] = [];
      const { client, transport } = createClient({ errorHandler: (e: Error) => handled.push(e) });
      transport.respondWith(() => 400);
      const callbackErrors: (Error | undefined)[] = [];
      client.track({ userId: 'u', event: 'E' }, (e) => callbackErrors.push(e));
      client.track({ userId: 'u', event: 'E' }, (e) => callbackErrors.push(e));
      await client.flush();
      expect(handled).to.have.length(1);
      expect(handled[0]).to.be.instanceOf(HttpError);
      expect(callbackErrors).to.have.length(2);
      expect(callbackErrors[0]).to.equal(handled[0]);
    });

    it('gives a call’s callback { batch: [its own message], timestamp, sentAt }', async () => {
      const { client } = createClient();
      const data = await new Promise<{ batch: Record<string, unknown>[]; timestamp: Date; sentAt: Date }>((resolve) => {
        client.track({ userId: 'u', event: 'mine' }, (_err, d) => resolve(d!));
        void client.flush();
      });
      expect(data.batch).to.have.length(1);
      expect(data.batch[0]).to.include({ type: 'track', userId: 'u', event: 'mine' });
      expect(data.timestamp).to.be.instanceOf(Date);
      expect(data.sentAt).to.be.instanceOf(Date);
    });

    it('does not reject for a refused call (it was reported at the call)', async () => {
      const { client } = createClient();
      const errors: unknown[] = [];
      client.track({ userId: 'u' }, (e) => errors.push(e));
      client.track({ userId: 'u', event: 'fine' });
      const data = await client.flush();
      expect(errors[0]).to.be.instanceOf(ValidationError);
      expect(data!.batch.map((m) => m.event)).to.deep.equal(['fine']);
    });

    it('hands a refused call to errorHandler too', async () => {
      const handled: Error[] = [];
      const { client } = createClient({ errorHandler: (e: Error) => handled.push(e) });
      client.track({ userId: 'u' });
      await client.flush();
      expect(handled).to.have.length(1);
      expect(handled[0]).to.be.instanceOf(ValidationError);
    });

    it('sends everything queued, more than flushAt', async () => {
      const { client, transport } = createClient({ flushAt: 2, flushInterval: 60_000, concurrency: 1 });
      for (let i = 0; i < 5; i++) client.track({ userId: 'u', event: `E${i}` });
      await client.flush();
      expect(transport.messages).to.have.length(5);
    });

    it('with a callback, gives it the error instead of rejecting', async () => {
      const { client, transport } = createClient({ retryCount: 0 });
      transport.respondWith(() => 500);
      client.track({ userId: 'u', event: 'E' });
      let seen: Error | undefined;
      const data = await client.flush((err) => (seen = err));
      expect(seen).to.be.instanceOf(HttpError);
      expect(data!.batch).to.have.length(1);
    });

    it('times out when configured (timeout as in the classic SDK: ms or "500ms")', async () => {
      const server: Server = createServer(() => {
        /* never answers */
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const port = (server.address() as AddressInfo).port;
        const client = new Analytics('key', { host: `http://127.0.0.1:${port}`, timeout: '200ms', retryCount: 0 });
        client.flushed = true;
        expect(client.timeout).to.equal(200);
        client.track({ userId: 'u', event: 'timeout' }, () => {});
        const err = await client.flush().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).to.be.instanceOf(TimeoutError);
      } finally {
        server.closeAllConnections();
        server.close();
      }
    });

    it('sends nothing when the client is disabled', async () => {
      const { client, transport } = createClient({ enable: false });
      client.track({ userId: 'u', event: 'E' });
      const data = await client.flush();
      expect(data!.batch).to.deep.equal([]);
      expect(transport.requests).to.have.length(0);
    });

    it('sends before a batch passes 500 KB, with no flush() call', async () => {
      const { client, transport } = createClient({ flushAt: 5000, flushInterval: 60_000 });
      const properties = { text: 'x'.repeat(200) };
      for (let i = 0; i < 2600; i++) client.track({ userId: 1, event: 'event', properties });
      await sleep(50);
      expect(transport.requests.length).to.be.greaterThan(0);
      await client.flush();
    });

    it('waits while no condition is met', async () => {
      const { client, transport } = createClient({ flushAt: 1000, flushInterval: 60_000 });
      for (let i = 0; i < 150; i++) client.track({ userId: 1, event: 'event' });
      await sleep(50);
      expect(transport.requests).to.have.length(0);
      await client.flush();
      expect(transport.messages).to.have.length(150);
    });

    it('retries failed requests (retryCount) until one succeeds', async () => {
      const { client, transport } = createClient({ retryCount: 5 });
      transport.respondWith((_r, index) => (index < 5 ? 503 : 200));
      client.track({ userId: 'u', event: 'axios-retry' }, () => {});
      await client.flush();
      expect(transport.requests).to.have.length(6);
    });

    it('does not retry forever: 3 retries by default, then rejects', async () => {
      const { client, transport } = createClient();
      transport.respondWith(() => 503);
      client.track({ userId: 'u', event: 'axios-retry-forever' }, () => {});
      const err = await client.flush().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(HttpError);
      expect(transport.requests).to.have.length(4);
    });
  });

  describe('calls', () => {
    const types = ['identify', 'group', 'track', 'page', 'screen', 'alias'] as const;

    it('return the client, for chaining', () => {
      const { client } = createClient({ enable: false });
      expect(client.identify({ userId: 'id' }).track({ userId: 'id', event: 'E' })).to.equal(client);
    });

    for (const type of types) {
      it(`${type}: without a message object, refuses it through the callback instead of throwing`, async () => {
        const { client } = createClient();
        const err = await errorOf((cb) => expect(() => client[type](undefined as never, cb)).not.to.throw());
        expect(err).to.be.instanceOf(ValidationError);
      });
    }

    // The classic SDK checks the ids first; eventrelay names the call's own field first (groupId, event).
    const rules: [(typeof types)[number], Record<string, unknown>, string][] = [
      ['identify', {}, 'userId'],
      ['group', {}, 'groupId'],
      ['group', { groupId: 'g' }, 'userId'],
      ['group', { userId: 'id' }, 'groupId'],
      ['group', { anonymousId: 'id' }, 'groupId'],
      ['track', {}, 'event'],
      ['track', { event: 'E' }, 'userId'],
      ['track', { userId: 'id' }, 'event'],
      ['track', { anonymousId: 'id' }, 'event'],
      ['page', {}, 'userId'],
      ['screen', {}, 'userId'],
      ['alias', {}, 'userId'],
      ['alias', { userId: 'id' }, 'previousId'],
    ];
    for (const [type, message, field] of rules) {
      it(`${type}(${JSON.stringify(message)}) is refused naming ${field}`, async () => {
        const { client } = createClient();
        const err = await errorOf((cb) => client[type](message, cb));
        expect(err).to.be.instanceOf(ValidationError).with.property('field', field);
      });
    }

    const valid: [(typeof types)[number], Record<string, unknown>][] = [
      ['identify', { userId: 'id' }],
      ['identify', { anonymousId: 'id' }],
      ['group', { groupId: 'id', userId: 'id' }],
      ['group', { groupId: 'id', anonymousId: 'id' }],
      ['track', { userId: 'id', event: 'event' }],
      ['track', { anonymousId: 'id', event: 'event' }],
      ['page', { userId: 'id' }],
      ['page', { anonymousId: 'id' }],
      ['screen', { userId: 'id' }],
      ['screen', { anonymousId: 'id' }],
      ['alias', { userId: 'id', previousId: 'id' }],
    ];
    for (const [type, message] of valid) {
      it(`${type}(${JSON.stringify(message)}) is sent`, async () => {
        const { client, transport } = createClient();
        const err = await errorOf((cb) => {
          client[type](message, cb);
          void client.flush();
        });
        expect(err).to.equal(undefined);
        expect(transport.messages[0]).to.deep.include({ type, ...message });
      });
    }

    it('refuses a message over 32 KB through the callback', async () => {
      const { client } = createClient();
      const properties: Record<string, string> = {};
      for (let i = 0; i < 10000; i++) properties[i] = 'a';
      const err = await errorOf((cb) => client.track({ userId: 1, event: 'event', properties }, cb));
      expect(err).to.be.instanceOf(PayloadTooLargeError);
    });

    it('refuses a message whose fields throw when read, calling back once', async () => {
      const { client } = createClient();
      const hostile = new Proxy({}, { ownKeys: () => { throw new Error('no'); } });
      const errors: unknown[] = [];
      expect(() => client.track(hostile, (e) => errors.push(e))).not.to.throw();
      await client.flush();
      expect(errors).to.have.length(1);
      expect(errors[0]).to.be.instanceOf(ValidationError);
    });
  });

  describe('axiosInstance', () => {
    function recordingAxios(answer: (index: number) => unknown) {
      const posts: { url: string; data: unknown; config: Record<string, unknown> }[] = [];
      return {
        posts,
        post: async (url: string, data: unknown, config: Record<string, unknown>) => {
          posts.push({ url, data, config });
          const result = answer(posts.length - 1);
          if (result instanceof Error) throw result;
          return result as { status: number; headers?: unknown };
        },
      };
    }

    it('sends through your own axios instance, to host + path (ported: "we can pass our own axios instance")', async () => {
      const axios = recordingAxios(() => ({ status: 200, headers: {} }));
      const client = new Analytics('key', { axiosInstance: axios, host: 'https://my-dummy-host.com', path: '/test/path' });
      client.flushed = true;
      client.track({ userId: 'u', event: 'something' });
      await client.flush();
      expect(axios.posts).to.have.length(1);
      expect(axios.posts[0]!.url).to.equal('https://my-dummy-host.com/test/path');
      expect(JSON.parse(axios.posts[0]!.data as string).batch[0]).to.include({ event: 'something' });
      expect((axios.posts[0]!.config.headers as Record<string, string>).authorization).to.equal(`Basic ${Buffer.from('key:').toString('base64')}`);
    });

    it('keeps eventrelay’s retry policy: a 503 answer is retried, an axios timeout is a TimeoutError', async () => {
      const axios = recordingAxios((i) => (i === 0 ? { status: 503, headers: { 'retry-after': '0' } } : { status: 200 }));
      const client = new Analytics('key', { axiosInstance: axios, retryCount: 2, minRetryDelay: 1, flushAt: 1 });
      client.flushed = true;
      await new Promise((resolve) => client.track({ userId: 'u', event: 'E' }, resolve));
      expect(axios.posts).to.have.length(2);

      const slow = recordingAxios(() => Object.assign(new Error('timeout of 5ms exceeded'), { code: 'ECONNABORTED' }));
      const timed = new Analytics('key', { axiosInstance: slow, retryCount: 0, flushAt: 1 });
      timed.flushed = true;
      const err = await new Promise((resolve) => timed.track({ userId: 'u', event: 'E' }, resolve));
      expect(err).to.be.instanceOf(TimeoutError);
    });

    it('refuses something that is not an axios instance with a ConfigError', () => {
      expect(() => new Analytics('key', { axiosInstance: {} as never })).to.throw(ConfigError, /axiosInstance/);
    });
  });

  describe('options it does not honour', () => {
    it('warns once about options it does not honour and unknown ones, never silently ignoring them', async () => {
      const seen = await warningsDuring(() => createClient({ axiosConfig: {}, flushInterva: 5, maxQueueSize: 1024 }));
      expect(seen.map((w) => (w as Error & { code: string }).code).sort()).to.deep.equal([
        'EVENTRELAY_UNKNOWN_OPTION',
        'EVENTRELAY_UNSUPPORTED_OPTION',
        'EVENTRELAY_UNSUPPORTED_OPTION',
      ]);
      expect(seen.map((w) => w.message).join('\n')).to.include('axiosConfig').and.include('flushInterva').and.include('maxQueueSize');
      const again = await warningsDuring(() => createClient({ axiosConfig: {}, flushInterva: 5, maxQueueSize: 1024 }));
      expect(again).to.have.length(0);
    });

    it('reports a failure with no callback and no errorHandler as a process warning', async () => {
      const { client, transport } = createClient({ retryCount: 0 });
      transport.respondWith(() => 500);
      const warned: Error[] = [];
      const listener = (w: Error) => warned.push(w);
      process.on('warning', listener);
      try {
        client.track({ userId: 'u', event: 'E' });
        await client.flush().catch(() => {});
        await sleep(5);
      } finally {
        process.off('warning', listener);
      }
      expect(warned).to.have.length(1);
      expect(warned[0]!.message).to.include('500').and.include('errorHandler');
    });
  });
});
