// Issue 45: a URL with `batch` set gets one POST whose body is a JSON array of messages. The
// receiver verifies the array's exact bytes, checks every element, and calls `handler` once per
// message in order (or `batchHandler` once with all of them).
import { expect } from 'chai';
import { ConfigError, InvalidArgumentError, PayloadTooLargeError, SignatureVerificationError, TimeoutError, WebhookMessageError } from '../../../src/errors';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import type { WebhookHandlers, WebhookReceiverOptions } from '../../../src/webhooks/options';
import { parseWebhookMessage, parseWebhookMessages } from '../../../src/webhooks/parse';
import { createWebhookReceiver } from '../../../src/webhooks/receiver';
import { signStandardWebhook } from '../../../src/webhooks/schemes/standard-webhooks';
import { FakeClock, flushMicrotasks } from '../../../../../test/helpers/fake-clock';
import { hmacHex, SECRET } from '../../fixtures/webhooks/load';

const TS = '2026-03-01T12:34:56.789Z';

function track(n: number, userId = 'u1'): Record<string, unknown> {
  return { version: 1, type: 'track', userId, timestamp: TS, event: `E${n}`, properties: { n }, messageId: `m-${n}` };
}

/** A batch body as the forwarder builds it: the messages' JSON joined with commas inside brackets. */
function batchOf(messages: readonly unknown[]): string {
  return `[${messages.map((m) => JSON.stringify(m)).join(',')}]`;
}

const FIVE = [track(1), track(2, 'u2'), { version: 1, type: 'identify', userId: 'u1', timestamp: TS, traits: { plan: 'pro' } }, track(3), { type: 'delete', userId: 'u9', timestamp: TS }];
const FIVE_BODY = batchOf(FIVE);

type Options = WebhookReceiverOptions<{ tag: string }> & WebhookHandlers<{ tag: string }>;

function setup(overrides: Partial<Options> = {}, clock = new FakeClock()) {
  const handled: WebhookMessage[] = [];
  const errors: [unknown, number][] = [];
  const receiver = createWebhookReceiver<{ tag: string }>(
    {
      secret: SECRET,
      handler: (message) => void handled.push(message),
      onError: (error, status) => void errors.push([error, status]),
      ...overrides,
    } as Options,
    { clock },
  );
  const receive = (raw: string | Uint8Array, signature = hmacHex(raw), tag = 't') =>
    receiver.receive({ body: raw, headers: { 'x-signature': signature }, context: { tag } });
  return { receiver, handled, errors, clock, receive };
}

describe('parseWebhookMessages (a batch body, issue 45)', () => {
  it('returns the messages of an array in order, each checked; one message gives an array of one', () => {
    expect(parseWebhookMessages(FIVE_BODY)).to.deep.equal(FIVE);
    expect(parseWebhookMessages(Buffer.from(FIVE_BODY))).to.deep.equal(FIVE);
    expect(parseWebhookMessages(JSON.stringify(track(7)))).to.deep.equal([track(7)]);
    expect(parseWebhookMessages(` [ ${JSON.stringify(track(1))} ] `)).to.deep.equal([track(1)]);
  });

  function batchError(raw: string): WebhookMessageError {
    try {
      parseWebhookMessages(raw);
    } catch (error) {
      expect(error).to.be.instanceOf(WebhookMessageError);
      return error as WebhookMessageError;
    }
    throw new Error('expected a WebhookMessageError');
  }

  it('refuses an empty array', () => {
    const error = batchError('[]');
    expect(error.message).to.include('at least one webhook message').and.include('empty array');
    expect(error.field).to.equal(undefined);
  });

  it('names the element that is not an object, never showing its value', () => {
    for (const [element, kind] of [['"secret-looking"', 'a string'], ['42', 'a number'], ['null', 'null'], ['[{"type":"track"}]', 'an array']] as const) {
      const error = batchError(`[${JSON.stringify(track(1))},${element}]`);
      expect(error.field).to.equal('[1]');
      expect(error.message).to.include('element 1 of the batch').and.include(kind).and.not.include('secret-looking');
    }
  });

  it('names the element and the field of an invalid message (a tampered or broken element fails the whole batch)', () => {
    const noEvent = { ...track(3) };
    delete noEvent.event;
    const error = batchError(batchOf([track(1), track(2), noEvent]));
    expect(error.field).to.equal('[2].event');
    expect(error.message).to.include('`event`').and.include('element 2 of the batch');
    expect(batchError(batchOf([{ type: 'tracked', userId: 'x' }])).field).to.equal('[0].type');
    expect(batchError(batchOf([track(1), { ...track(2), version: 2 }])).field).to.equal('[1].version');
  });

  it('refuses a deeply nested array (1 MB of brackets) as an element that is not an object', () => {
    const error = batchError('['.repeat(500_000) + ']'.repeat(500_000));
    expect(error.field).to.equal('[0]');
    expect(error.message).to.include('got an array');
  });

  it('refuses text that is not JSON and bytes that are not UTF-8, with the body-level errors', () => {
    expect(batchError('[{"type":"track"},').message).to.include('not valid JSON');
    expect(() => parseWebhookMessages(new Uint8Array([0x5b, 0xff, 0x5d]))).to.throw(WebhookMessageError, /not valid UTF-8/);
    expect(() => parseWebhookMessages({} as never)).to.throw(InvalidArgumentError);
  });

  it('parseWebhookMessage still takes one message only, and points at parseWebhookMessages for a batch', () => {
    expect(() => parseWebhookMessage(FIVE_BODY)).to.throw(WebhookMessageError, /got an array \(a batch: read it with parseWebhookMessages\)/);
  });
});

describe('createWebhookReceiver with a batch body (issue 45)', () => {
  it('calls handler once per message, in order, with the context, and answers 204', async () => {
    const contexts: unknown[] = [];
    const { receive, handled, errors } = setup({
      handler: (message, context) => {
        handled.push(message);
        contexts.push(context);
      },
    });
    const answer = await receive(FIVE_BODY, hmacHex(FIVE_BODY), 'req-9');
    expect(answer.status).to.equal(204);
    expect(handled).to.deep.equal(FIVE);
    expect(contexts).to.have.length(5);
    for (const context of contexts) expect(context).to.include({ tag: 'req-9' }).and.have.property('signal').that.is.instanceOf(AbortSignal);
    expect(errors).to.deep.equal([]);
  });

  it('awaits each call before the next, so an async handler sees the messages in order', async () => {
    const order: string[] = [];
    let resolveFirst: () => void = () => {};
    const { receive } = setup({
      handler: async (message) => {
        order.push(`start ${(message as { event?: string }).event ?? message.type}`);
        if (order.length === 1) await new Promise<void>((resolve) => (resolveFirst = resolve));
        order.push(`end ${(message as { event?: string }).event ?? message.type}`);
      },
    });
    const raw = batchOf([track(1), track(2)]);
    const answer = receive(raw);
    await flushMicrotasks();
    expect(order).to.deep.equal(['start E1']);
    resolveFirst();
    expect((await answer).status).to.equal(204);
    expect(order).to.deep.equal(['start E1', 'end E1', 'start E2', 'end E2']);
  });

  it('stops at the message whose handler throws and answers 500; a retry of the same bytes handles them all from the start', async () => {
    const failure = new Error('database down');
    let failOn: string | undefined = 'E2';
    const seen: string[] = [];
    const { receive, errors } = setup({
      handler: (message) => {
        const event = (message as { event?: string }).event ?? message.type;
        seen.push(event);
        if (event === failOn) throw failure;
      },
    });
    const first = await receive(FIVE_BODY);
    expect(first.status).to.equal(500);
    expect(first.body).to.not.include('database down');
    expect(seen).to.deep.equal(['E1', 'E2']);
    expect(errors).to.deep.equal([[failure, 500]]);
    failOn = undefined;
    seen.length = 0;
    expect((await receive(FIVE_BODY)).status).to.equal(204);
    expect(seen).to.deep.equal(['E1', 'E2', 'identify', 'E3', 'delete']);
  });

  it('a rejected promise counts as a throw', async () => {
    let calls = 0;
    const { receive, errors } = setup({
      handler: async () => {
        calls++;
        if (calls === 1) throw new TypeError('nope');
      },
    });
    expect((await receive(FIVE_BODY)).status).to.equal(500);
    expect(calls).to.equal(1);
    expect(errors[0]![0]).to.be.instanceOf(TypeError);
  });

  it('gives a batch to batchHandler once, whole and in order, instead of handler', async () => {
    const batches: WebhookMessage[][] = [];
    const contexts: unknown[] = [];
    const { receive, handled } = setup({
      batchHandler: (messages, context) => {
        batches.push(messages);
        contexts.push(context);
      },
    });
    expect((await receive(FIVE_BODY, hmacHex(FIVE_BODY), 'req-b')).status).to.equal(204);
    expect(batches).to.deep.equal([FIVE]);
    expect(handled).to.deep.equal([]);
    expect(contexts[0]).to.include({ tag: 'req-b' }).and.have.property('signal');
    // A single message still goes to handler when there is one.
    const one = JSON.stringify(track(8));
    expect((await receive(one)).status).to.equal(204);
    expect(handled).to.deep.equal([track(8)]);
    expect(batches).to.have.length(1);
  });

  it('gives a single message to batchHandler as an array of one when there is no handler', async () => {
    const batches: WebhookMessage[][] = [];
    const { receive } = setup({ handler: undefined, batchHandler: (messages) => void batches.push(messages) });
    const one = JSON.stringify(track(8));
    expect((await receive(one)).status).to.equal(204);
    expect(batches).to.deep.equal([[track(8)]]);
  });

  it('answers 500 when batchHandler throws, and the error goes to onError', async () => {
    const failure = new RangeError('bulk insert failed');
    const { receive, errors } = setup({
      batchHandler: () => {
        throw failure;
      },
    });
    const answer = await receive(FIVE_BODY);
    expect(answer.status).to.equal(500);
    expect(errors).to.deep.equal([[failure, 500]]);
  });

  it('answers 401 when one byte of the batch was changed after signing, and calls no handler', async () => {
    const { receive, handled, errors } = setup();
    const signature = hmacHex(FIVE_BODY);
    const tampered = FIVE_BODY.replace('"E2"', '"E7"');
    expect(tampered).to.not.equal(FIVE_BODY);
    expect((await receive(tampered, signature)).status).to.equal(401);
    // Reordering the elements changes the bytes too.
    expect((await receive(batchOf([FIVE[1], FIVE[0], ...FIVE.slice(2)]), signature)).status).to.equal(401);
    // Whitespace is a byte: the same messages re-serialized with spaces do not verify.
    expect((await receive(`[${FIVE.map((m) => JSON.stringify(m)).join(', ')}]`, signature)).status).to.equal(401);
    expect(handled).to.deep.equal([]);
    expect(errors.map(([e, s]) => [(e as Error).constructor, s])).to.deep.equal([
      [SignatureVerificationError, 401],
      [SignatureVerificationError, 401],
      [SignatureVerificationError, 401],
    ]);
  });

  for (const webCrypto of [false, true]) {
    it(`verifies a batch signed with Standard Webhooks over its exact bytes (${webCrypto ? 'Web Crypto' : "Node's crypto"})`, async () => {
      const clock = new FakeClock();
      const handled: WebhookMessage[] = [];
      const receiver = createWebhookReceiver({ secret: SECRET, scheme: 'standard-webhooks', handler: (m) => void handled.push(m) }, { clock, webCrypto });
      const headers = signStandardWebhook(FIVE_BODY, SECRET, { id: 'msg_batch1', timestamp: new Date(clock.now()) });
      expect((await receiver.receive({ body: FIVE_BODY, headers, context: {} })).status).to.equal(204);
      expect(handled).to.deep.equal(FIVE);
      handled.length = 0;
      const tampered = await receiver.receive({ body: FIVE_BODY.replace('"u2"', '"u3"'), headers, context: {} });
      expect(tampered.status).to.equal(401);
      expect(handled).to.deep.equal([]);
    });
  }

  it('answers 400 naming the field for a signed batch with a bad element, calling no handler', async () => {
    const { receive, handled, errors } = setup();
    const cases: [string, string | undefined][] = [
      ['[]', undefined],
      [batchOf([track(1), 'not a message']), '[1]'],
      [batchOf([track(1), { ...track(2), properties: 'x' }]), '[1].properties'],
      [batchOf([track(1), null]), '[1]'],
      ['[' + JSON.stringify(track(1)) + ',]', undefined],
    ];
    for (const [raw, field] of cases) {
      const answer = await receive(raw);
      expect(answer.status, raw).to.equal(400);
      const error = errors.at(-1)![0] as WebhookMessageError;
      expect(error, raw).to.be.instanceOf(WebhookMessageError);
      expect(error.field, raw).to.equal(field);
      expect(JSON.parse(answer.body!).error, raw).to.equal(error.message);
    }
    expect(handled).to.deep.equal([]);
  });

  it('a huge batch: handled whole when under maxBodySize, answered 413 unparsed when over it', async () => {
    // 4,000 messages, the most one batch can hold, well under the default 1 MiB.
    const messages = Array.from({ length: 4000 }, (_, i) => ({ version: 1, type: 'track', userId: `u${i % 7}`, timestamp: TS, event: 'E', properties: { i } }));
    const raw = batchOf(messages);
    expect(Buffer.byteLength(raw)).to.be.below(1024 * 1024);
    const { receive, handled, errors } = setup();
    expect((await receive(raw)).status).to.equal(204);
    expect(handled).to.have.length(4000);
    expect(handled.map((m) => (m as unknown as { properties: { i: number } }).properties.i)).to.deep.equal(messages.map((_, i) => i));
    // The limit stays the body limit, whatever the array holds.
    const small = setup({ maxBodySize: Buffer.byteLength(raw) - 1 });
    expect((await small.receive(raw)).status).to.equal(413);
    expect(small.errors[0]![0]).to.be.instanceOf(PayloadTooLargeError);
    expect(small.handled).to.deep.equal([]);
    expect(errors).to.deep.equal([]);
  });

  it('after the timeout answered 503, the rest of the batch is not handled', async () => {
    let release: () => void = () => {};
    const seen: string[] = [];
    const clock = new FakeClock();
    const { receiver, errors } = setup(
      {
        timeout: 1000,
        handler: async (message) => {
          seen.push((message as { event: string }).event);
          if (seen.length === 2) await new Promise<void>((resolve) => (release = resolve));
        },
      },
      clock,
    );
    const raw = batchOf([track(1), track(2), track(3)]);
    let answer: { status: number } | undefined;
    void receiver.receive({ body: raw, headers: { 'x-signature': hmacHex(raw) }, context: { tag: '' } }).then((a) => (answer = a));
    await clock.tick(1000);
    expect(answer?.status).to.equal(503);
    release();
    await flushMicrotasks();
    expect(seen).to.deep.equal(['E1', 'E2']);
    expect(errors).to.have.length(1);
    expect(errors[0]![0]).to.be.instanceOf(TimeoutError);
  });
});

describe('receiver options: handler and batchHandler', () => {
  const make = (options: object) => () => createWebhookReceiver({ secret: SECRET, ...options } as never);

  it('needs handler or batchHandler, and each to be a function when given', () => {
    expect(make({})).to.throw(ConfigError, /Expected `handler` \(or `batchHandler`, for batches\) to be a function/);
    expect(make({ batchHandler: 'bulk' })).to.throw(ConfigError, /Expected `batchHandler` to be a function \(messages, context\) => void, got a string/);
    expect(make({ handler: null, batchHandler: () => {} })).to.throw(ConfigError, /Expected `handler` to be a function/);
    expect(make({ batchHandler: () => {} })).to.not.throw();
    expect(make({ handler: () => {}, batchHandler: () => {} })).to.not.throw();
    expect(make({ batchHandler: 42 })).to.throw(ConfigError).with.property('field', 'batchHandler');
    expect(make({})).to.throw(ConfigError).with.property('field', 'handler');
  });
});
