import { afterEach, describe, it } from 'mocha';
import { expect } from 'chai';
import { ConfigError } from '../../../../eventrelay/src/errors';
import { WebhookDestination } from '../../../src/delivery/destination';
import type { DeliveryResult, WebhookDestinationOptions } from '../../../src/delivery/destination';
import { rateLimitOption, SLOT_HORIZON, SLOT_LATENESS } from '../../../src/delivery/rate-limit';
import { toWebhookMessage } from '../../../../eventrelay/src/messages/webhook';
import { FakeClock, flushMicrotasks } from '../../../../../test/helpers/fake-clock';
import { FakeTransport } from '../../../../../test/helpers/fake-transport';
import type { Answer } from '../../../../../test/helpers/fake-transport';
import { grantSlots, MemoryRateBudget } from '../../../src/store/rate-budget';

const A = 'https://a.example.com/hook';
const B = 'https://b.example.com/hook';

const open: WebhookDestination[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((d) => d.close()));
});

function setup(
  options: Partial<WebhookDestinationOptions>,
  answer: (url: string, call: number) => Answer | Promise<Answer> = () => 200,
  budget?: MemoryRateBudget,
  clock = new FakeClock(),
) {
  const sentAt: { url: string; at: number }[] = [];
  const transport = new FakeTransport((request, _index, call) => {
    sentAt.push({ url: request.url.href, at: clock.now() });
    return answer(request.url.href, call);
  });
  const destination = new WebhookDestination(
    { webhooks: [{ url: A, rateLimit: { perSecond: 4 } }], transport, ...options },
    { clock, random: () => 0.5, ...(budget === undefined ? {} : { rateBudget: budget, rateScope: 'web' }) },
  );
  open.push(destination);
  return { clock, transport, destination, sentAt };
}

const body = (id: string) => JSON.stringify(toWebhookMessage({ type: 'track', userId: 'u', event: 'E', messageId: id }));

describe('rate limits: the slot budget (GCRA)', () => {
  it('grants slots one interval apart from now, at most a horizon ahead, and saves nothing up while idle', () => {
    expect(grantSlots(undefined, 1000, 10, 50, 250)).to.deep.equal({ first: 1000, count: 6, tat: 1300 });
    // The next claim starts where the last one ended.
    expect(grantSlots(1300, 1000, 2, 50, 250)).to.deep.equal({ first: 1300, count: 0, tat: 1300 });
    expect(grantSlots(1300, 1100, 2, 50, 250)).to.deep.equal({ first: 1300, count: 2, tat: 1400 });
    // Long idle: the slots start at now, not in the past.
    expect(grantSlots(1300, 9000, 3, 50, 250)).to.deep.equal({ first: 9000, count: 3, tat: 9150 });
  });

  it('hands two claimers of one key disjoint slots, and tells a claimer too far behind when to come back', async () => {
    const clock = new FakeClock(0);
    const budget = new MemoryRateBudget(clock);
    expect(await budget.claim('k', 3, 100, SLOT_HORIZON)).to.deep.equal({ delay: 0, count: 3 });
    expect(await budget.claim('k', 3, 100, SLOT_HORIZON)).to.deep.equal({ delay: 300, count: 0 });
    await clock.tick(100);
    expect(await budget.claim('k', 3, 100, SLOT_HORIZON)).to.deep.equal({ delay: 200, count: 1 });
    expect(await budget.claim('other', 1, 100, SLOT_HORIZON)).to.deep.equal({ delay: 0, count: 1 });
  });

  it('refuses a limit that is not a positive number, naming the field', () => {
    expect(rateLimitOption('webhooks[0].rateLimit', { perSecond: 0.5 })).to.deep.equal({ perSecond: 0.5 });
    for (const [value, field] of [
      [{ perSecond: 0 }, 'webhooks[0].rateLimit.perSecond'],
      [{ perSecond: -1 }, 'webhooks[0].rateLimit.perSecond'],
      [{ perSecond: '20' }, 'webhooks[0].rateLimit.perSecond'],
      [{ perSecond: Infinity }, 'webhooks[0].rateLimit.perSecond'],
      [{}, 'webhooks[0].rateLimit.perSecond'],
      [{ perSecond: 1, burst: 5 }, 'webhooks[0].rateLimit.burst'],
      [20, 'webhooks[0].rateLimit'],
    ] as const) {
      expect(() => rateLimitOption('webhooks[0].rateLimit', value)).to.throw(ConfigError).with.property('field', field);
    }
  });
});

describe('WebhookDestination with rateLimit', () => {
  it('sends to a limited URL no faster than perSecond, and waiting is not an attempt', async () => {
    const { clock, destination, sentAt } = setup({});
    const results: DeliveryResult[] = [];
    for (let i = 0; i < 6; i++) void destination.deliver(body(`m${i}`)).then((r) => results.push(r));
    for (let i = 0; i < 40 && results.length < 6; i++) await clock.tick(50);
    const start = sentAt[0]!.at;
    expect(sentAt.map((s) => s.at - start)).to.deep.equal([0, 250, 500, 750, 1000, 1250]);
    expect(results.map((r) => [r.status, r.attempt])).to.deep.equal(Array.from({ length: 6 }, () => ['delivered', 1]));
  });

  it('counts the retry window from the first request, and still makes a retry that waited for its slot', async () => {
    // One request every 2 s, a window of 1 s: the second message waits 2 s for its first request.
    const { clock, destination, sentAt } = setup(
      { webhooks: [{ url: A, rateLimit: { perSecond: 0.5 } }], retryWindow: 1000, minRetryDelay: 100, maxRetryDelay: 100 },
      (_url, call) => (call === 2 ? 503 : 200),
    );
    const results: DeliveryResult[] = [];
    void destination.deliver(body('first')).then((r) => results.push(r));
    void destination.deliver(body('second')).then((r) => results.push(r));
    for (let i = 0; i < 200 && results.length < 2; i++) await clock.tick(50);
    const start = sentAt[0]!.at;
    // Its retry was due 100 ms after the 503, inside the window, and went out with the next slot.
    expect(sentAt.map((s) => s.at - start)).to.deep.equal([0, 2000, 4000]);
    expect(results.map((r) => [r.status, r.attempt])).to.deep.equal([
      ['delivered', 1],
      ['delivered', 2],
    ]);
  });

  it('attempt() sends nothing and answers a retry without outcomes when the budget is taken further than it looks ahead', async () => {
    const clock = new FakeClock(0);
    const budget = new MemoryRateBudget(clock);
    // Two destinations of one source on one URL share its budget (another instance, in effect).
    const one = setup({ webhooks: [{ url: A, rateLimit: { perSecond: 1 } }] }, () => 200, budget, clock);
    const two = setup({ webhooks: [{ url: A, rateLimit: { perSecond: 1 } }] }, () => 200, budget, clock);
    expect((await one.destination.attempt(body('a'), { attempt: 1, firstAttemptAt: 0 })).status).to.equal('delivered');
    const waiting = await two.destination.attempt(body('b'), { attempt: 3, firstAttemptAt: 0 });
    expect(waiting).to.deep.equal({ status: 'retry', attempt: 3, nextAttemptAt: 1000 - SLOT_HORIZON, outcomes: [] });
    expect(two.sentAt).to.deep.equal([]);
    expect(two.destination.room(clock.now(), 5)).to.deep.equal({ count: 0, readyAt: 1000 - SLOT_HORIZON });
    await clock.tick(1000 - SLOT_HORIZON);
    const later = two.destination.attempt(body('b'), { attempt: 3, firstAttemptAt: 0 });
    await clock.tick(SLOT_HORIZON);
    expect((await later).status).to.equal('delivered');
    expect(two.sentAt.map((s) => s.at)).to.deep.equal([1000]);
  });

  it('drops a slot that went stale before its request could start: nothing is sent late', async () => {
    const clock = new FakeClock(0);
    // One request at a time, and the first takes 200 ms: the second's slot (at 100 ms) is stale by then.
    const { destination, sentAt } = setup(
      { concurrency: 1, webhooks: [{ url: A, rateLimit: { perSecond: 10 } }] },
      (_url, call) => (call === 1 ? new Promise<Answer>((resolve) => clock.setTimeout(() => resolve(200), 200)) : 200),
      undefined,
      clock,
    );
    const first = destination.attempt(body('a'), { attempt: 1, firstAttemptAt: 0 });
    await flushMicrotasks();
    const second = destination.attempt(body('b'), { attempt: 1, firstAttemptAt: 0 });
    await clock.tick(200);
    expect((await first).status).to.equal('delivered');
    expect(await second).to.deep.equal({ status: 'retry', attempt: 1, nextAttemptAt: 200, outcomes: [] });
    expect(sentAt.map((s) => s.at)).to.deep.equal([0]);
    expect(200 - 100).to.be.greaterThan(SLOT_LATENESS);
  });

  it('takes no slot for a URL it skips, and sends to the others', async () => {
    const { clock, destination, sentAt } = setup({ webhooks: [{ url: A, rateLimit: { perSecond: 1 } }, { url: B }] });
    const skipped = await destination.attempt(body('a'), { attempt: 1, firstAttemptAt: 0, skip: [0] });
    expect(skipped.status).to.equal('delivered');
    expect(sentAt.map((s) => s.url)).to.deep.equal([B]);
    // A's first slot is still there: the next attempt to both goes out at once.
    expect(destination.room(clock.now(), 3)).to.deep.equal({ count: 1 });
    await destination.attempt(body('b'), { attempt: 1, firstAttemptAt: 0 });
    expect(sentAt.map((s) => [s.url, s.at - sentAt[0]!.at])).to.deep.equal([
      [B, 0],
      [A, 0],
      [B, 0],
    ]);
    // Every URL skipped: nothing is sent, and it is not an attempt.
    expect(await destination.attempt(body('c'), { attempt: 2, firstAttemptAt: 0, skip: [0, 1] })).to.deep.equal({
      status: 'retry',
      attempt: 2,
      nextAttemptAt: clock.now(),
      outcomes: [],
    });
  });

  it('takes one slot for a stored batch, whatever the calls in it', async () => {
    const { clock, destination, sentAt } = setup({});
    const batch = (n: number) => `[${Array.from({ length: 10 }, (_, i) => body(`b${n}-${i}`)).join(',')}]`;
    const attempts = [0, 1, 2].map((n) => destination.attemptBatch(0, batch(n), { attempt: 1, firstAttemptAt: 0, id: `batch_${n}` }));
    for (let i = 0; i < 40 && sentAt.length < 2; i++) await clock.tick(50);
    const results = await Promise.all(attempts);
    // 4 a second, looking 250 ms ahead: two requests of ten calls each go a quarter of a second
    // apart (a slot per call would put the second 2.5 s out, past the horizon); the third finds
    // no slot in reach and waits in the store, which is no attempt.
    const start = sentAt[0]!.at;
    expect(sentAt.map((s) => s.at - start)).to.deep.equal([0, 250]);
    expect(results.map((r) => [r.status, r.outcomes.length])).to.deep.equal([
      ['delivered', 1],
      ['delivered', 1],
      ['retry', 0],
    ]);
  });

  it('has room for every attempt without a limit, and for one probe before the first batch', async () => {
    const unlimited = setup({ webhooks: [{ url: A }] });
    expect(unlimited.destination.room(0, 7)).to.deep.equal({ count: 7 });
    const { clock, destination } = setup({ webhooks: [{ url: A, rateLimit: { perSecond: 20 } }] });
    expect(destination.room(clock.now(), 7)).to.deep.equal({ count: 1 });
    await destination.attempt(body('a'), { attempt: 1, firstAttemptAt: 0 });
    // The batch that attempt fetched: the slots left within the horizon (250 ms at 50 ms apart).
    expect(destination.room(clock.now(), 7)).to.deep.equal({ count: 5 });
  });
});
