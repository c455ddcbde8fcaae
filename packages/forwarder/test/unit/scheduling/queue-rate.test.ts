import { describe, it, beforeEach, afterEach } from 'mocha';
import { expect } from 'chai';
import { FakeClock, flushMicrotasks } from '../../../../../test/helpers/fake-clock';
import { MemoryStore } from '../../../src/store/memory/memory';
import { Scheduler } from '../../../src/scheduling/queue';
import type { DeliveryTarget } from '../../../src/scheduling/queue';
import type { AttemptResult, AttemptState } from '../../../src/delivery/destination';

/** A target with a rate limit the test sets by hand: `allow` attempts now, or none until `readyAt`. */
class LimitedTarget implements DeliveryTarget {
  readonly calls: { state: AttemptState; resolve: (r: AttemptResult) => void }[] = [];
  allow = 0;
  readyAt: number | undefined;
  attempt(_body: string, state: AttemptState): Promise<AttemptResult> {
    this.allow--;
    return new Promise((resolve) => this.calls.push({ state, resolve }));
  }

  room(_now: number, wanted: number): { count: number; readyAt?: number } {
    const count = Math.max(0, Math.min(this.allow, wanted));
    return count === 0 && this.readyAt !== undefined ? { count, readyAt: this.readyAt } : { count };
  }
}

const delivered = (attempt: number): AttemptResult => ({ status: 'delivered', url: 'u', attempt, outcomes: [{ url: 'u', index: 0, status: 200, retryable: false, durationMs: 1 }] });

describe('Scheduler with rate-limited targets', () => {
  let clock: FakeClock;
  let store: MemoryStore;
  let target: LimitedTarget;
  let scheduler: Scheduler;

  beforeEach(async () => {
    clock = new FakeClock();
    store = new MemoryStore();
    target = new LimitedTarget();
    await store.enqueue(
      Array.from({ length: 5 }, (_, i) => ({ source: 'web', destination: 'Webhooks', kind: 'message' as const, messageId: `m${i}`, body: '{}', createdAt: clock.now() })),
    );
    scheduler = new Scheduler(store, new Map([['web', target]]), clock, { concurrency: 8, idleWait: 60_000, owner: 'me', leaseMs: 30_000 });
  });

  afterEach(async () => {
    const stopping = scheduler.stop();
    for (const call of target.calls) call.resolve(delivered(call.state.attempt));
    await stopping;
  });

  it('claims no more deliveries than the limit lets start, and leaves the rest due and untouched in the store', async () => {
    target.allow = 2;
    target.readyAt = clock.now() + 300;
    scheduler.start();
    await flushMicrotasks();
    expect(target.calls).to.have.length(2);
    const counts = await store.counts();
    // Nothing was recorded for the others: no attempt, no retry.
    expect(counts).to.deep.include({ pending: 5, retrying: 0 });
    expect(await store.claim('web', clock.now(), 10, { owner: 'peek', ms: 1 })).to.have.length(3);
  });

  it('looks again when the limit says, without being woken', async () => {
    target.allow = 1;
    target.readyAt = clock.now() + 300;
    scheduler.start();
    await flushMicrotasks();
    expect(target.calls).to.have.length(1);
    target.allow = 2;
    await clock.tick(299);
    expect(target.calls).to.have.length(1);
    await clock.tick(1);
    expect(target.calls).to.have.length(3);
    for (const call of target.calls.map((c) => c.state.attempt)) expect(call).to.equal(1);
  });
});

/** A memory store whose `nextDueAfter` answers only when the test says. */
class SlowStore extends MemoryStore {
  release: (() => void) | undefined;
  override async nextDueAfter(source: string, now: number): Promise<number | undefined> {
    const answer = await super.nextDueAfter(source, now);
    await new Promise<void>((resolve) => (this.release = resolve));
    return answer;
  }
}

describe('Scheduler waiting for a slow store', () => {
  it('counts the wait for a due time from when it asked: a retry that fell due while the store answered starts at once', async () => {
    const clock = new FakeClock();
    const store = new SlowStore();
    const start = clock.now();
    await store.enqueue([{ source: 'web', destination: 'Webhooks', kind: 'message', messageId: 'm', body: '{}', createdAt: start }]);
    const [claimed] = await store.claim('web', start, 1, { owner: 'x', ms: 1 });
    await store.record([{ id: claimed!.id, lease: claimed!.lease, status: 'retry', attempts: 1, firstAttemptAt: start, nextAttemptAt: start + 750 }]);
    const target = new LimitedTarget();
    target.allow = 5;
    const scheduler = new Scheduler(store, new Map([['web', target]]), clock, { concurrency: 4, idleWait: 60_000, owner: 'me', leaseMs: 30_000 });
    scheduler.start();
    await flushMicrotasks();
    // The loop asked when the retry is due; the answer comes once the clock stands at that time.
    await clock.tick(750);
    store.release!();
    await flushMicrotasks();
    await clock.tick(0);
    expect(target.calls.map((c) => c.state.attempt)).to.deep.equal([2]);
    const stopping = scheduler.stop();
    store.release?.();
    for (const call of target.calls) call.resolve(delivered(call.state.attempt));
    await stopping;
  });
});
