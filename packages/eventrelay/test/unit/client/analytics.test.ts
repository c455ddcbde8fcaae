import { expect } from 'chai';
import {
  ClientClosedError,
  CloseTimeoutError,
  ConfigError,
  EventRelayError,
  HttpError,
  NetworkError,
  PayloadTooLargeError,
  QueueFullError,
  SerializationError,
  ValidationError,
} from '../../../src/errors';
import { Analytics } from '../../../src/client/analytics';
import { VERSION } from '../../../src/version';
import { callbackResult, createTestClient } from '../../../../../test/helpers/client';
import { flushMicrotasks } from '../../../../../test/helpers/fake-clock';
import { FakeTransport } from '../../../../../test/helpers/fake-transport';

const props = (n: number) => ({ index: n, plan: 'pro' });

describe('Analytics', () => {
  describe('message building', () => {
    it('sends each call type with type, messageId, timestamp, context.library and the caller fields', async () => {
      const { analytics, transport, clock } = createTestClient({ flushAt: 6 });
      analytics.identify({ userId: 'u1', traits: { name: 'Ann' } });
      analytics.track({ userId: 'u1', event: 'Signed Up', properties: { plan: 'pro' } });
      analytics.page({ anonymousId: 'a1', name: 'Home', category: 'Docs', properties: { path: '/' } });
      analytics.screen({ userId: 'u1', name: 'Settings' });
      analytics.group({ userId: 'u1', groupId: 'g1', traits: { 'number of employees': 5 } });
      analytics.alias({ userId: 'u2', previousId: 'u1' });
      await analytics.flush();
      const [identify, track, page, screen, group, alias] = transport.messages;
      const now = new Date(clock.now()).toISOString();
      expect(identify).to.include({ type: 'identify', userId: 'u1', timestamp: now });
      expect(identify?.traits).to.deep.equal({ name: 'Ann' });
      expect(track).to.include({ type: 'track', event: 'Signed Up' });
      expect(track?.properties).to.deep.equal({ plan: 'pro' });
      expect(page).to.include({ type: 'page', anonymousId: 'a1', name: 'Home', category: 'Docs' });
      expect(screen).to.include({ type: 'screen', name: 'Settings' });
      expect(group).to.include({ type: 'group', groupId: 'g1' });
      expect(alias).to.include({ type: 'alias', userId: 'u2', previousId: 'u1' });
      for (const message of transport.messages) {
        expect(message.messageId).to.match(/^[0-9a-f-]{36}$/);
        expect(message.context).to.deep.equal({ library: { name: 'eventrelay', version: VERSION } });
      }
      expect(new Set(transport.messages.map((m) => m.messageId)).size).to.equal(6);
    });

    it("keeps the caller's messageId, historical timestamp, context and integrations", async () => {
      const { analytics, transport } = createTestClient();
      analytics.track({
        userId: 'u1',
        event: 'Imported',
        messageId: 'my-id',
        timestamp: '2019-05-06T07:08:09+02:00',
        context: { ip: '1.2.3.4', library: { name: 'other' } },
        integrations: { All: false, Webhooks: true },
      });
      analytics.track({ userId: 'u1', event: 'Dated', timestamp: new Date('2020-01-01T00:00:00.5Z') });
      await analytics.flush();
      expect(transport.messages[0]).to.deep.include({
        messageId: 'my-id',
        timestamp: '2019-05-06T05:08:09.000Z',
        integrations: { All: false, Webhooks: true },
        context: { ip: '1.2.3.4', library: { name: 'eventrelay', version: VERSION } },
      });
      expect(transport.messages[1]?.timestamp).to.equal('2020-01-01T00:00:00.500Z');
    });

    it("does not mutate the caller's objects", async () => {
      const { analytics, transport } = createTestClient();
      const context = { ip: '1.2.3.4' };
      const params = { userId: 'u1', event: 'E', properties: { a: 1 }, context };
      const copy = structuredClone(params);
      analytics.track(params);
      await analytics.flush();
      expect(params).to.deep.equal(copy);
      // The library was added to a copy of the context, not to the caller's object.
      expect(context).not.to.have.property('library');
      expect(transport.messages[0]?.context).to.have.property('library');
    });

    it('accepts numeric ids, as the forwarder does, and sends them as given', async () => {
      const { analytics, transport } = createTestClient();
      const result = callbackResult();
      analytics.group({ userId: 42, groupId: 7 }, result.callback);
      await analytics.flush();
      expect((await result.promise).error).to.equal(undefined);
      expect(transport.messages[0]).to.include({ userId: 42, groupId: 7 });
    });
  });

  describe('wire format', () => {
    it('POSTs {endpoint}/v1/batch with Basic auth of the write key and a JSON { batch, sentAt } body', async () => {
      const { analytics, transport, clock } = createTestClient({ endpoint: 'https://ingest.test/' });
      analytics.track({ userId: 'u1', event: 'E' });
      await analytics.flush();
      const [sent] = transport.batches;
      expect(sent?.request.url.href).to.equal('https://ingest.test/v1/batch');
      expect(sent?.request.headers.authorization).to.equal(`Basic ${Buffer.from('test-write-key:').toString('base64')}`);
      expect(sent?.request.headers['content-type']).to.equal('application/json');
      expect(sent?.body.sentAt).to.equal(new Date(clock.now()).toISOString());
      expect(sent?.body.batch).to.have.length(1);
    });

    it('writes each message with its keys in one order: undefined fields left out, null ones kept, null integrations left out', async () => {
      const { analytics, transport } = createTestClient({ flushAt: 3 });
      const timestamp = '2020-01-01T00:00:00Z';
      analytics.track({
        context: { ip: '1.2.3.4' },
        properties: null,
        integrations: null,
        event: 'E',
        anonymousId: undefined,
        userId: 'u1',
        messageId: 'm1',
        timestamp,
      } as never);
      analytics.page({ integrations: { All: false }, category: null, name: 'Home', anonymousId: 'a1', messageId: 'm2', timestamp } as never);
      analytics.alias({ previousId: 'p', userId: 'u', messageId: 'm3', timestamp });
      await analytics.flush();
      const body = transport.batches[0]!.request.body as string;
      const head = '"timestamp":"2020-01-01T00:00:00.000Z"';
      const library = `"library":{"name":"eventrelay","version":"${VERSION}"}`;
      expect(body.slice(0, body.indexOf(',"sentAt"'))).to.equal(
        '{"batch":[' +
        `{"type":"track","messageId":"m1",${head},"userId":"u1","event":"E","properties":null,"context":{"ip":"1.2.3.4",${library}}},` +
        `{"type":"page","messageId":"m2",${head},"anonymousId":"a1","name":"Home","category":null,"context":{${library}},"integrations":{"All":false}},` +
        `{"type":"alias","messageId":"m3",${head},"userId":"u","previousId":"p","context":{${library}}}]`,
      );
    });

    it('gzips the body when asked', async () => {
      const { analytics, transport } = createTestClient({ gzip: true });
      analytics.track({ userId: 'u1', event: 'E' });
      await analytics.flush();
      const request = transport.batches[0]!.request;
      expect(request.headers['content-encoding']).to.equal('gzip');
      expect(request.body).to.be.instanceOf(Uint8Array);
      // The gzip magic number: the bytes are compressed, not the text.
      expect([...(request.body as Uint8Array).subarray(0, 2)]).to.deep.equal([0x1f, 0x8b]);
      expect(transport.messages).to.have.length(1);
    });
  });

  describe('batching', () => {
    it('flushes at flushAt messages', async () => {
      const { analytics, transport } = createTestClient({ flushAt: 3 });
      for (let i = 0; i < 7; i++) analytics.track({ userId: 'u', event: 'E', properties: props(i) });
      await flushMicrotasks();
      expect(transport.batches.map((r) => r.body.batch.length)).to.deep.equal([3, 3]);
      await analytics.flush();
      expect(transport.batches.map((r) => r.body.batch.length)).to.deep.equal([3, 3, 1]);
      expect(transport.messages.map((m) => (m.properties as { index: number }).index)).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
    });

    it('flushes flushInterval ms after the first queued message, not reset by later ones', async () => {
      const { analytics, transport, clock } = createTestClient({ flushInterval: 1000 });
      analytics.track({ userId: 'u', event: 'first' });
      await clock.tick(600);
      analytics.track({ userId: 'u', event: 'second' });
      await clock.tick(399);
      expect(transport.batches).to.have.length(0);
      await clock.tick(1);
      expect(transport.batches).to.have.length(1);
      expect(transport.messages.map((m) => m.event)).to.deep.equal(['first', 'second']);
      // The next message starts a new interval.
      analytics.track({ userId: 'u', event: 'third' });
      await clock.tick(999);
      expect(transport.batches).to.have.length(1);
      await clock.tick(1);
      expect(transport.batches).to.have.length(2);
    });

    it('sends every call at once with flushAt 1', async () => {
      const { analytics, transport } = createTestClient({ flushAt: 1 });
      analytics.track({ userId: 'u', event: 'a' });
      analytics.track({ userId: 'u', event: 'b' });
      await flushMicrotasks();
      expect(transport.batches.map((r) => r.body.batch.length)).to.deep.equal([1, 1]);
    });

    it('sends at most `concurrency` batches at once, the others in the order they were cut', async () => {
      const answers: ((status: number) => void)[] = [];
      const { analytics, transport } = createTestClient({ flushAt: 1, concurrency: 2 });
      transport.respondWith(() => new Promise<number>((resolve) => answers.push(resolve)));
      const heard: string[] = [];
      for (const event of ['a', 'b', 'c', 'd', 'e']) analytics.track({ userId: 'u', event }, (error) => heard.push(error ? `${event} failed` : event));
      await flushMicrotasks();
      expect(transport.messages.map((m) => m.event)).to.deep.equal(['a', 'b']);
      let flushed = false;
      const flush = analytics.flush().then(() => (flushed = true));
      // The second answer frees a slot: the third batch goes, and only the second's callback ran.
      answers[1]!(200);
      await flushMicrotasks();
      expect(transport.messages.map((m) => m.event)).to.deep.equal(['a', 'b', 'c']);
      expect(heard).to.deep.equal(['b']);
      expect(transport.inFlight).to.equal(2);
      answers[0]!(200);
      await flushMicrotasks();
      expect(transport.messages.map((m) => m.event)).to.deep.equal(['a', 'b', 'c', 'd']);
      answers[2]!(400);
      answers[3]!(200);
      await flushMicrotasks();
      expect(flushed).to.equal(false);
      answers[4]!(200);
      await flush;
      expect(transport.messages.map((m) => m.event)).to.deep.equal(['a', 'b', 'c', 'd', 'e']);
      expect(transport.maxInFlight).to.equal(2);
      expect(heard).to.deep.equal(['b', 'a', 'c failed', 'd', 'e']);
      expect(analytics.pending).to.equal(0);
    });

    it('splits a batch before it passes 500 KB', async () => {
      const { analytics, transport } = createTestClient({ flushAt: 1000 });
      const big = 'x'.repeat(30 * 1024);
      for (let i = 0; i < 40; i++) analytics.track({ userId: 'u', event: 'Big', properties: { big, i } });
      await analytics.flush();
      expect(transport.messages).to.have.length(40);
      expect(transport.batches.length).to.be.greaterThan(2);
      for (const sent of transport.batches) expect(sent.bytes).to.be.at.most(500 * 1024);
      // Each batch but the last was full: one more message would have passed the limit.
      for (const sent of transport.batches.slice(0, -1)) expect(sent.bytes + 30 * 1024).to.be.greaterThan(500 * 1024);
    });
  });

  describe('refused calls', () => {
    it('refuses an invalid call through the callback and the error event, and queues nothing', async () => {
      const { analytics, transport } = createTestClient();
      const events: unknown[] = [];
      analytics.on('error', (error) => events.push(error));
      const result = callbackResult();
      // @ts-expect-error: no userId or anonymousId
      expect(() => analytics.track({ event: 'E' }, result.callback)).not.to.throw();
      const { error, id } = await result.promise;
      expect(error).to.be.instanceOf(ValidationError);
      expect(id).to.equal(undefined);
      expect(events).to.have.length(1);
      expect(analytics.pending).to.equal(0);
      await analytics.flush();
      expect(transport.batches).to.have.length(0);
    });

    it('never throws without callback or error listener', () => {
      const { analytics } = createTestClient();
      expect(() => analytics.track(undefined as never)).not.to.throw();
      expect(() => analytics.identify({} as never)).not.to.throw();
    });

    it('refuses a message over 32 KB in UTF-8 bytes, not characters', async () => {
      const { analytics, transport } = createTestClient();
      // 11,000 three-byte characters: 33,000 bytes, but only 11,000 characters.
      const result = callbackResult();
      analytics.track({ userId: 'u', event: 'E', properties: { text: '€'.repeat(11_000) } }, result.callback);
      const { error } = await result.promise;
      expect(error).to.be.instanceOf(PayloadTooLargeError);
      expect((error as PayloadTooLargeError).limit).to.equal(32 * 1024);
      expect((error as PayloadTooLargeError).size).to.be.greaterThan(33_000);
      const ok = callbackResult();
      analytics.track({ userId: 'u', event: 'E', properties: { text: 'x'.repeat(32_000) } }, ok.callback);
      await analytics.flush();
      expect((await ok.promise).error).to.equal(undefined);
      expect(transport.messages).to.have.length(1);
    });

    it('refuses values JSON cannot hold, without breaking the batch of other messages', async () => {
      const { analytics, transport } = createTestClient({ flushAt: 3 });
      const circular: Record<string, unknown> = {};
      circular.self = circular;
      const throwing = { toJSON: () => { throw new Error('nope'); } };
      const results = [callbackResult(), callbackResult(), callbackResult(), callbackResult()];
      analytics.track({ userId: 'u', event: 'ok1' }, results[0]!.callback);
      analytics.track({ userId: 'u', event: 'circ', properties: circular }, results[1]!.callback);
      analytics.track({ userId: 'u', event: 'big', properties: { n: 10n } }, results[2]!.callback);
      analytics.track({ userId: 'u', event: 'throws', properties: { throwing } }, results[3]!.callback);
      analytics.track({ userId: 'u', event: 'ok2' });
      await analytics.flush();
      const errors = await Promise.all(results.map((r) => r.promise.then((x) => x.error)));
      expect(errors[0]).to.equal(undefined);
      for (const error of errors.slice(1)) expect(error).to.be.instanceOf(SerializationError);
      expect(errors[1]?.message).to.match(/circular/i);
      expect(transport.messages.map((m) => m.event)).to.deep.equal(['ok1', 'ok2']);
    });

    it('refuses with QueueFullError when maxQueueSize messages are held, dropping nothing accepted', async () => {
      const { analytics, transport } = createTestClient({ maxQueueSize: 3, flushAt: 100 });
      const results = Array.from({ length: 4 }, () => callbackResult());
      results.forEach((r, i) => analytics.track({ userId: 'u', event: `e${i}` }, r.callback));
      const fourth = await results[3]!.promise;
      expect(fourth.error).to.be.instanceOf(QueueFullError);
      expect(fourth.error?.message).to.match(/maxQueueSize/);
      await analytics.flush();
      expect(transport.messages.map((m) => m.event)).to.deep.equal(['e0', 'e1', 'e2']);
      // Room again once they are delivered.
      const later = callbackResult();
      analytics.track({ userId: 'u', event: 'later' }, later.callback);
      await analytics.flush();
      expect((await later.promise).error).to.equal(undefined);
    });
  });

  describe('callbacks', () => {
    it('calls each callback exactly once with its messageId after delivery', async () => {
      const { analytics } = createTestClient({ flushAt: 2 });
      const calls: (string | undefined)[] = [];
      analytics.track({ userId: 'u', event: 'a', messageId: 'm1' }, (error, id) => calls.push(error ? 'error' : id));
      analytics.track({ userId: 'u', event: 'b', messageId: 'm2' }, (error, id) => calls.push(error ? 'error' : id));
      analytics.track({ userId: 'u', event: 'c', messageId: 'm3' }, (error, id) => calls.push(error ? 'error' : id));
      await analytics.flush();
      await analytics.flush();
      expect(calls).to.deep.equal(['m1', 'm2', 'm3']);
    });

    it('calls the callbacks of other messages when one throws, and reports the throw', async () => {
      const { analytics } = createTestClient({ flushAt: 3 });
      const reported: EventRelayError[] = [];
      analytics.on('error', (error: EventRelayError) => reported.push(error));
      const seen: string[] = [];
      analytics.track({ userId: 'u', event: 'a' }, () => seen.push('a'));
      analytics.track({ userId: 'u', event: 'b' }, () => {
        seen.push('b');
        throw new Error('user bug');
      });
      analytics.track({ userId: 'u', event: 'c' }, () => seen.push('c'));
      await analytics.flush();
      expect(seen).to.deep.equal(['a', 'b', 'c']);
      expect(reported).to.have.length(1);
      expect(reported[0]?.code).to.equal('ERR_CALLBACK');
      expect((reported[0]?.cause as Error).message).to.equal('user bug');
    });

    it('survives an error listener that throws', async () => {
      const { analytics } = createTestClient();
      analytics.on('error', () => {
        throw new Error('listener bug');
      });
      const result = callbackResult();
      expect(() => analytics.track({} as never, result.callback)).not.to.throw();
      expect((await result.promise).error).to.be.instanceOf(ValidationError);
    });

    it('calls back asynchronously, never inside the call, and then exactly once', async () => {
      const { analytics } = createTestClient();
      let calls = 0;
      analytics.track({} as never, () => calls++);
      expect(calls).to.equal(0);
      await flushMicrotasks();
      expect(calls).to.equal(1);
    });
  });

  describe('retries', () => {
    it('retries 5xx, 429 and network errors with backoff, then delivers', async () => {
      const { analytics, transport, clock } = createTestClient({ minRetryDelay: 100 });
      const answers = [{ status: 503 }, new NetworkError('reset'), { status: 429 }];
      transport.respondWith((_r, i) => answers[i] ?? { status: 200 });
      const result = callbackResult();
      analytics.track({ userId: 'u', event: 'E' }, result.callback);
      const flushed = analytics.flush();
      await clock.tick(10_000);
      await flushed;
      expect((await result.promise).error).to.equal(undefined);
      expect(transport.batches).to.have.length(4);
      // Every attempt sends the same bytes.
      expect(new Set(transport.batches.map((r) => r.request.body))).to.have.property('size', 1);
    });

    it('waits as long as Retry-After says', async () => {
      const { analytics, transport, clock } = createTestClient({ minRetryDelay: 10 });
      transport.respondWith((_r, i) => (i === 0 ? { status: 429, retryAfter: '2' } : { status: 200 }));
      analytics.track({ userId: 'u', event: 'E' });
      const flushed = analytics.flush();
      await clock.tick(1999);
      expect(transport.batches).to.have.length(1);
      await clock.tick(1);
      await flushed;
      expect(transport.batches).to.have.length(2);
    });

    it('does not retry other 4xx and reports an HttpError to every callback of the batch', async () => {
      const { analytics, transport } = createTestClient({ flushAt: 2 });
      transport.respondWith(() => ({ status: 400 }));
      const results = [callbackResult(), callbackResult()];
      const events: unknown[] = [];
      analytics.on('error', (e) => events.push(e));
      analytics.track({ userId: 'u', event: 'a' }, results[0]!.callback);
      analytics.track({ userId: 'u', event: 'b' }, results[1]!.callback);
      await analytics.flush();
      for (const r of results) {
        const { error } = await r.promise;
        expect(error).to.be.instanceOf(HttpError);
        expect((error as HttpError).status).to.equal(400);
        expect((error as HttpError).retryable).to.equal(false);
      }
      expect(transport.batches).to.have.length(1);
      expect(events).to.have.length(1);
      expect(analytics.pending).to.equal(0);
    });

    it('gives up after maxRetries with the last error', async () => {
      const { analytics, transport, clock } = createTestClient({ maxRetries: 2, minRetryDelay: 10 });
      transport.respondWith(() => ({ status: 500 }));
      const result = callbackResult();
      analytics.track({ userId: 'u', event: 'E' }, result.callback);
      const flushed = analytics.flush();
      await clock.tick(1000);
      await flushed;
      const { error } = await result.promise;
      expect(error).to.be.instanceOf(HttpError);
      expect((error as HttpError).status).to.equal(500);
      expect(transport.batches).to.have.length(3);
    });

    it('tells the caller to check the write key on 401 without showing it', async () => {
      const { analytics, transport } = createTestClient();
      transport.respondWith(() => ({ status: 401 }));
      const result = callbackResult();
      analytics.track({ userId: 'u', event: 'E' }, result.callback);
      await analytics.flush();
      const { error } = await result.promise;
      expect(error?.message).to.match(/check the write key/);
      expect(error?.message).not.to.contain('test-write-key');
    });
  });

  describe('partial answers (`rejected` in a 2xx answer)', () => {
    it('fails exactly the refused messages with the reason, and delivers the others', async () => {
      const { analytics, transport } = createTestClient({ flushAt: 3 });
      const body = JSON.stringify({
        success: true,
        rejected: [
          { index: 1, code: 'invalid_message', field: 'event', message: 'A track message needs `event`' },
          { index: 2, code: 'message_too_large', message: 'Message 2 is 40000 bytes', size: 40_000, limit: 32_768 },
        ],
      });
      transport.respondWith(() => ({ status: 200, body }));
      const events: unknown[] = [];
      analytics.on('error', (error) => events.push(error));
      const results = [callbackResult(), callbackResult(), callbackResult()];
      results.forEach((r, i) => analytics.track({ userId: 'u', event: `e${i}` }, r.callback));
      await analytics.flush();
      const [first, second, third] = await Promise.all(results.map((r) => r.promise));
      expect(first!.error).to.equal(undefined);
      expect(second!.error).to.be.instanceOf(ValidationError);
      expect(second!.error).to.include({ field: 'event', code: 'ERR_VALIDATION' });
      expect(second!.error?.message).to.match(/refused this message: A track message needs `event`/);
      expect(third!.error).to.be.instanceOf(PayloadTooLargeError);
      expect(third!.error).to.include({ size: 40_000, limit: 32_768 });
      expect(events).to.have.length(2);
      expect(transport.batches).to.have.length(1);
      expect(analytics.pending).to.equal(0);
    });

    it('emits `error` for a refused message that has no callback', async () => {
      const { analytics, transport } = createTestClient({ flushAt: 2 });
      const body = JSON.stringify({ success: true, rejected: [{ index: 0, code: 'invalid_message', field: 'userId', message: 'no' }] });
      transport.respondWith(() => ({ status: 200, body }));
      const events: unknown[] = [];
      analytics.on('error', (error) => events.push(error));
      analytics.track({ userId: 'u', event: 'a' });
      analytics.track({ userId: 'u', event: 'b' });
      await analytics.flush();
      expect(events).to.have.length(1);
      expect(events[0]).to.be.instanceOf(ValidationError);
    });

    it('asks the transport for the answer body, and reads a 2xx without `rejected` as all delivered', async () => {
      const { analytics, transport } = createTestClient();
      transport.respondWith(() => ({ status: 200, body: 'not json' }));
      const result = callbackResult();
      analytics.track({ userId: 'u', event: 'E' }, result.callback);
      await analytics.flush();
      expect((await result.promise).error).to.equal(undefined);
      expect(transport.requests[0]?.readBody).to.equal(true);
    });
  });

  describe('flush and closeAndFlush', () => {
    it('flush waits for batches already in flight', async () => {
      const { analytics, transport } = createTestClient({ flushAt: 1 });
      let release!: () => void;
      transport.respondWith(() => new Promise((resolve) => (release = () => resolve({ status: 200 }))));
      analytics.track({ userId: 'u', event: 'E' });
      let done = false;
      const flushed = analytics.flush().then(() => (done = true));
      await flushMicrotasks();
      expect(done).to.equal(false);
      release();
      await flushed;
      expect(done).to.equal(true);
    });

    it('closeAndFlush sends what is queued, returns the same promise twice, then refuses calls', async () => {
      const { analytics, transport } = createTestClient();
      analytics.track({ userId: 'u', event: 'before' });
      const first = analytics.closeAndFlush();
      expect(analytics.closeAndFlush()).to.equal(first);
      await first;
      expect(transport.messages.map((m) => m.event)).to.deep.equal(['before']);
      expect(transport.closed).to.equal(true);
      const events: unknown[] = [];
      analytics.on('error', (e) => events.push(e));
      const result = callbackResult();
      analytics.track({ userId: 'u', event: 'after' }, result.callback);
      expect((await result.promise).error).to.be.instanceOf(ClientClosedError);
      expect(events[0]).to.be.instanceOf(ClientClosedError);
      await analytics.flush();
      expect(transport.batches).to.have.length(1);
    });

    it('at the closeAndFlush timeout, fails what is still retrying with CloseTimeoutError, once, and stops retrying', async () => {
      const { analytics, transport, clock } = createTestClient({ minRetryDelay: 5000, maxRetryDelay: 5000 });
      transport.respondWith((_r, i) => (i < 2 ? { status: 503 } : { status: 200 }));
      const calls: (Error | undefined)[] = [];
      const events: unknown[] = [];
      analytics.on('error', (error) => events.push(error));
      analytics.track({ userId: 'u', event: 'E' }, (error) => calls.push(error));
      analytics.track({ userId: 'u', event: 'F' }, (error) => calls.push(error));
      let closed = false;
      const closing = analytics.closeAndFlush({ timeout: 1000 }).then(() => (closed = true));
      await clock.tick(1000);
      await closing;
      expect(closed).to.equal(true);
      expect(calls).to.have.length(2);
      for (const error of calls) {
        expect(error).to.be.instanceOf(CloseTimeoutError);
        expect((error as CloseTimeoutError).code).to.equal('ERR_CLOSE_TIMEOUT');
      }
      expect(events.filter((e) => e instanceof CloseTimeoutError)).to.have.length(1);
      expect(analytics.pending).to.equal(0);
      expect(transport.closed).to.equal(true);
      await clock.tick(60_000);
      expect(calls).to.have.length(2);
      expect(transport.batches).to.have.length(1);
    });
  });

  describe('failure paths', () => {
    it('leaves no unhandled rejection when the transport throws plain errors and callbacks throw', async () => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        const { analytics, transport } = createTestClient({ maxRetries: 0, flushAt: 2 });
        transport.respondWith(() => {
          throw new TypeError('boom');
        });
        const errors: unknown[] = [];
        analytics.track({ userId: 'u', event: 'a' }, (error) => {
          errors.push(error);
          throw new Error('callback bug');
        });
        analytics.track({ userId: 'u', event: 'b' }, (error) => errors.push(error));
        await analytics.flush();
        await analytics.closeAndFlush();
        await new Promise((resolve) => setImmediate(resolve));
        expect(errors).to.have.length(2);
        for (const error of errors) expect(error).to.be.instanceOf(NetworkError);
        expect(unhandled).to.deep.equal([]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
    });
  });

  describe('disable', () => {
    it('validates and calls back but sends nothing', async () => {
      const { analytics, transport } = createTestClient({ disable: true });
      const ok = callbackResult();
      const bad = callbackResult();
      analytics.track({ userId: 'u', event: 'E' }, ok.callback);
      analytics.track({ userId: 'u' } as never, bad.callback);
      await analytics.flush();
      expect((await ok.promise).error).to.equal(undefined);
      expect((await ok.promise).id).to.be.a('string');
      expect((await bad.promise).error).to.be.instanceOf(ValidationError);
      expect(transport.batches).to.have.length(0);
    });
  });

  describe('options', () => {
    it('is constructed with a ConfigError naming the field for bad options', () => {
      let caught: unknown;
      try {
        new Analytics({ writeKey: '', endpoint: 'https://x' });
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(ConfigError);
      expect((caught as ConfigError).field).to.equal('writeKey');
    });

    it('refuses an unknown option with a ConfigError naming it, with a hint for other SDKs\' names', () => {
      let caught: unknown;
      try {
        new Analytics({ writeKey: 'k', endpoint: 'https://x', enable: false } as never);
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(ConfigError);
      expect((caught as ConfigError).field).to.equal('enable');
      expect((caught as ConfigError).message).to.match(/Unknown option `"enable"`.*use `disable: true`/);
      expect(() => new Analytics({ writeKey: 'k', endpoint: 'https://x', flushSize: 3 } as never)).to.throw(ConfigError, /flushSize/);
    });

    it('takes `transport` as a documented option and `host` as an alias of `endpoint`', async () => {
      const transport = new FakeTransport();
      const analytics = new Analytics({ writeKey: 'k', host: 'https://alias.test', transport });
      analytics.track({ userId: 'u', event: 'E' });
      await analytics.flush();
      expect(transport.requests[0]?.url.href).to.equal('https://alias.test/v1/batch');
      expect(() => new Analytics({ writeKey: 'k', endpoint: 'https://x', transport: {} as never })).to.throw(ConfigError, /transport/);
    });
  });
});
