import { expect } from 'chai';
import createDebug from 'debug';
import {
  ConfigError,
  InvalidArgumentError,
  PayloadTooLargeError,
  SignatureVerificationError,
  TimeoutError,
  WebhookMessageError,
} from '../../../src/errors';
import { WEBHOOK_DEFAULTS } from '../../../src/webhooks/options';
import type { WebhookReceiverOptions } from '../../../src/webhooks/options';
import { createWebhookReceiver } from '../../../src/webhooks/receiver';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import { verifySignatureAsync } from '../../../src/webhooks/schemes/signature-async';
import { FakeClock } from '../../../../../test/helpers/fake-clock';
import { body, hmacHex, SECRET, signatureOf } from '../../fixtures/webhooks/load';

const TRACK = body('track-compact.json');
const TRACK_SIGNATURE = signatureOf('track-compact.json');

interface Seen {
  messages: WebhookMessage[];
  errors: [unknown, number][];
}

function setup(overrides: Partial<WebhookReceiverOptions<{ tag: string }>> = {}, clock = new FakeClock()) {
  const seen: Seen = { messages: [], errors: [] };
  const receiver = createWebhookReceiver<{ tag: string }>(
    {
      secret: SECRET,
      handler: (message) => {
        seen.messages.push(message);
      },
      onError: (error, status) => seen.errors.push([error, status]),
      ...overrides,
    },
    { clock },
  );
  return { receiver, seen, clock };
}

describe('createWebhookReceiver (the runtime-neutral core)', () => {
  it('answers 204 and hands the parsed message and the context (with a signal) to the handler', async () => {
    let context: unknown;
    const { receiver, seen } = setup({
      handler: (message, ctx) => {
        seen.messages.push(message);
        context = ctx;
      },
    });
    const answer = await receiver.receive({ body: TRACK, headers: { 'x-signature': TRACK_SIGNATURE }, context: { tag: 'req-1' } });
    expect(answer).to.deep.include({ status: 204, body: null });
    expect(seen.messages).to.have.length(1);
    expect(seen.messages[0]).to.include({ type: 'track', userId: 'user-42', event: 'Order Completed' });
    expect(context).to.include({ tag: 'req-1' });
    expect((context as { signal: AbortSignal }).signal).to.be.instanceOf(AbortSignal);
    expect(seen.errors).to.deep.equal([]);
  });

  it('reads the body through a function when given one', async () => {
    const { receiver, seen } = setup();
    const answer = await receiver.receive({ body: async () => TRACK, headers: { 'x-signature': TRACK_SIGNATURE }, context: { tag: '' } });
    expect(answer.status).to.equal(204);
    expect(seen.messages).to.have.length(1);
  });

  describe('finds X-Signature in any header shape', () => {
    const shapes: Record<string, unknown> = {
      "Node's lowercased map": { 'x-signature': TRACK_SIGNATURE, 'content-type': 'application/json' },
      'a plain object with X-Signature': { 'X-Signature': TRACK_SIGNATURE },
      'a plain object with X-SIGNATURE': { 'X-SIGNATURE': TRACK_SIGNATURE },
      'a Fetch Headers object': new Headers({ 'X-Signature': TRACK_SIGNATURE }),
      'a one-element array value': { 'x-signature': [TRACK_SIGNATURE] },
    };
    for (const [label, headers] of Object.entries(shapes)) {
      it(label, async () => {
        const { receiver } = setup();
        const answer = await receiver.receive({ body: TRACK, headers: headers as never, context: { tag: '' } });
        expect(answer.status).to.equal(204);
      });
    }
  });

  describe('refuses a repeated X-Signature header (decision: the sender sends one)', () => {
    const repeated = new Headers();
    repeated.append('X-Signature', TRACK_SIGNATURE);
    repeated.append('X-Signature', TRACK_SIGNATURE);
    const shapes: Record<string, unknown> = {
      'an array of two (even identical) values': { 'x-signature': [TRACK_SIGNATURE, TRACK_SIGNATURE] },
      'two keys differing in case': { 'x-signature': TRACK_SIGNATURE, 'X-Signature': TRACK_SIGNATURE },
      'Headers with the header appended twice': repeated,
      'a good and a bad value': { 'x-signature': [TRACK_SIGNATURE, '0'.repeat(40)] },
    };
    for (const [label, headers] of Object.entries(shapes)) {
      it(label, async () => {
        const { receiver, seen } = setup();
        const answer = await receiver.receive({ body: TRACK, headers: headers as never, context: { tag: '' } });
        expect(answer.status).to.equal(401);
        expect(seen.messages).to.have.length(0);
      });
    }
  });

  it('answers 401 with a SignatureVerificationError for a missing signature', async () => {
    const { receiver, seen } = setup();
    const answer = await receiver.receive({ body: TRACK, headers: {}, context: { tag: '' } });
    expect(answer.status).to.equal(401);
    expect(JSON.parse(answer.body!)).to.deep.equal({ error: 'Invalid or missing X-Signature.' });
    expect(seen.errors[0]![0]).to.be.instanceOf(SignatureVerificationError).with.property('message').that.includes('missing');
    expect(seen.errors[0]![1]).to.equal(401);
    expect(seen.messages).to.have.length(0);
  });

  it('answers 401 for a signature made with another secret, and 204 once that secret is rotated in', async () => {
    const signature = hmacHex(TRACK, 'the-new-secret');
    const before = setup();
    expect((await before.receiver.receive({ body: TRACK, headers: { 'x-signature': signature }, context: { tag: '' } })).status).to.equal(401);
    expect(before.seen.errors[0]![0]).to.be.instanceOf(SignatureVerificationError).with.property('message').that.includes('does not match');
    const during = setup({ secret: [SECRET, 'the-new-secret'] });
    expect((await during.receiver.receive({ body: TRACK, headers: { 'x-signature': signature }, context: { tag: '' } })).status).to.equal(204);
  });

  it('answers 400 with the field for a signed body that is not a valid message', async () => {
    const raw = JSON.stringify({ version: 1, type: 'track', userId: 'u', timestamp: '2026-01-01T00:00:00.000Z', properties: {} });
    const { receiver, seen } = setup();
    const answer = await receiver.receive({ body: raw, headers: { 'x-signature': hmacHex(raw) }, context: { tag: '' } });
    expect(answer.status).to.equal(400);
    expect(JSON.parse(answer.body!).error).to.include('`event`');
    expect(seen.errors[0]![0]).to.be.instanceOf(WebhookMessageError).with.property('field', 'event');
    expect(seen.messages).to.have.length(0);
  });

  it('checks the signature before parsing: an unsigned invalid body gets 401, not 400', async () => {
    const { receiver } = setup();
    const answer = await receiver.receive({ body: 'not json', headers: {}, context: { tag: '' } });
    expect(answer.status).to.equal(401);
  });

  it('answers 500 when the handler throws, without its message in the response', async () => {
    const failure = new Error('database down at db-internal-host');
    const { receiver, seen } = setup({
      handler: async () => {
        throw failure;
      },
    });
    const answer = await receiver.receive({ body: TRACK, headers: { 'x-signature': TRACK_SIGNATURE }, context: { tag: '' } });
    expect(answer.status).to.equal(500);
    expect(answer.body).to.not.include('db-internal-host');
    expect(seen.errors).to.deep.equal([[failure, 500]]);
  });

  it('answers 503 after `timeout` ms while the handler is still busy, and aborts its signal', async () => {
    let signal: AbortSignal | undefined;
    const { receiver, seen, clock } = setup({
      timeout: 1000,
      handler: (_message, context) => {
        signal = context.signal;
        return new Promise(() => {});
      },
    });
    let answer: { status: number } | undefined;
    void receiver.receive({ body: TRACK, headers: { 'x-signature': TRACK_SIGNATURE }, context: { tag: '' } }).then((a) => (answer = a));
    await clock.tick(999);
    expect(answer).to.equal(undefined);
    expect(signal?.aborted).to.equal(false);
    await clock.tick(1);
    expect(answer?.status).to.equal(503);
    expect(signal?.aborted).to.equal(true);
    expect(signal?.reason).to.be.instanceOf(TimeoutError);
    expect(seen.errors[0]![0]).to.be.instanceOf(TimeoutError);
    expect(seen.errors[0]![1]).to.equal(503);
  });

  it('counts body reading against the timeout', async () => {
    const { receiver, clock } = setup({ timeout: 500 });
    let answer: { status: number } | undefined;
    void receiver.receive({ body: () => new Promise(() => {}), headers: {}, context: { tag: '' } }).then((a) => (answer = a));
    await clock.tick(500);
    expect(answer?.status).to.equal(503);
  });

  it('clears its timer once answered', async () => {
    const { receiver, clock } = setup();
    await receiver.receive({ body: TRACK, headers: { 'x-signature': TRACK_SIGNATURE }, context: { tag: '' } });
    expect(clock.pending).to.equal(0);
  });

  it('defaults to a timeout below the sender\'s 5 s and a 1 MiB body limit', () => {
    expect(WEBHOOK_DEFAULTS.timeout).to.be.below(5000);
    const { receiver } = setup();
    expect(receiver.options.timeout).to.equal(WEBHOOK_DEFAULTS.timeout);
    expect(receiver.options.maxBodySize).to.equal(1024 * 1024);
    expect(setup({ timeout: undefined, maxBodySize: undefined }).receiver.options.maxBodySize).to.equal(1024 * 1024);
  });

  it('answers 413 for a body over maxBodySize, counted in UTF-8 bytes', async () => {
    const { receiver, seen } = setup({ maxBodySize: 10 });
    const answer = await receiver.receive({ body: 'éééééé', headers: {}, context: { tag: '' } }); // 6 chars, 12 bytes
    expect(answer.status).to.equal(413);
    expect(seen.errors[0]![0]).to.be.instanceOf(PayloadTooLargeError).with.property('size', 12);
    const fits = await receiver.receive({ body: 'ééééé', headers: {}, context: { tag: '' } }); // 10 bytes
    expect(fits.status).to.equal(401);
  });

  it('answers 413 when the body reader reports PayloadTooLargeError, and 500 for a consumed body', async () => {
    const { receiver, seen } = setup();
    const tooLarge = await receiver.receive({
      body: () => Promise.reject(new PayloadTooLargeError('big', 2, 1)),
      headers: {},
      context: { tag: '' },
    });
    expect(tooLarge.status).to.equal(413);
    const consumed = await receiver.receive({
      body: () => Promise.reject(new InvalidArgumentError('consumed', 'rawBody')),
      headers: {},
      context: { tag: '' },
    });
    expect(consumed.status).to.equal(500);
    expect(seen.errors.map(([, status]) => status)).to.deep.equal([413, 500]);
  });

  it('survives an onError hook that throws', async () => {
    const { receiver } = setup({
      onError: () => {
        throw new Error('hook failed');
      },
    });
    const answer = await receiver.receive({ body: TRACK, headers: {}, context: { tag: '' } });
    expect(answer.status).to.equal(401);
  });

  it('gives the same answers with Web Crypto verification', async () => {
    const { seen } = setup();
    const receiver = createWebhookReceiver({ secret: SECRET, handler: (m) => void seen.messages.push(m) }, { verify: verifySignatureAsync });
    expect((await receiver.receive({ body: TRACK, headers: { 'x-signature': TRACK_SIGNATURE }, context: {} })).status).to.equal(204);
    expect((await receiver.receive({ body: TRACK, headers: { 'x-signature': TRACK_SIGNATURE.slice(1) }, context: {} })).status).to.equal(401);
  });

  describe('checks its options at once', () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['no secret', { secret: undefined }, 'secret'],
      ['an empty secret', { secret: '' }, 'secret'],
      ['no handler', { handler: undefined }, 'handler'],
      ['timeout 0', { timeout: 0 }, 'timeout'],
      ['a fractional maxBodySize', { maxBodySize: 1.5 }, 'maxBodySize'],
      ['onError not a function', { onError: 'log' }, 'onError'],
    ];
    for (const [label, change, field] of cases) {
      it(label, () => {
        expect(() => createWebhookReceiver({ secret: SECRET, handler: () => {}, ...change } as never))
          .to.throw(ConfigError)
          .with.property('field', field);
      });
    }
  });

  it('never shows the secret or the body in DEBUG output, error messages or answers', async () => {
    const secret = 'zq-super-secret-value-123';
    const privateValue = 'zq-private-user-value';
    const lines: string[] = [];
    const savedLog = createDebug.log;
    const savedNamespaces = createDebug.disable();
    createDebug.log = (...args: unknown[]) => void lines.push(args.map(String).join(' '));
    createDebug.enable('analytics:*');
    const errors: unknown[] = [];
    try {
      const receiver = createWebhookReceiver(
        {
          secret: [secret, `${secret}-next`],
          handler: () => {
            throw new Error(`failed for ${privateValue}`);
          },
          onError: (error) => errors.push(error),
        },
        { clock: new FakeClock() },
      );
      const good = JSON.stringify({ version: 1, type: 'identify', userId: privateValue, timestamp: '2026-01-01T00:00:00.000Z', traits: {} });
      const invalid = JSON.stringify({ version: 1, type: 'identify', userId: privateValue, timestamp: 'no', traits: {} });
      const answers = [
        await receiver.receive({ body: good, headers: { 'x-signature': hmacHex(good, secret) }, context: {} }),
        await receiver.receive({ body: invalid, headers: { 'x-signature': hmacHex(invalid, secret) }, context: {} }),
        await receiver.receive({ body: good, headers: { 'x-signature': hmacHex(good, 'wrong') }, context: {} }),
        await receiver.receive({ body: good, headers: {}, context: {} }),
      ];
      expect(answers.map((a) => a.status)).to.deep.equal([500, 400, 401, 401]);
      expect(lines.length).to.be.greaterThan(3);
      const visible = [
        ...lines,
        ...answers.map((a) => a.body ?? ''),
        ...errors.filter((e) => e instanceof WebhookMessageError || e instanceof SignatureVerificationError).map((e) => (e as Error).message),
      ].join('\n');
      expect(visible).to.not.include(secret);
      expect(visible).to.not.include(privateValue);
    } finally {
      createDebug.log = savedLog;
      createDebug.enable(savedNamespaces);
    }
  });
});
