import { describe, it, beforeEach, afterEach } from 'mocha';
import { expect } from 'chai';
import { FakeClock, flushMicrotasks } from '../../../../../test/helpers/fake-clock';
import { MemoryStore } from '../../../src/store/memory';
import { Scheduler } from '../../../src/scheduling/scheduler';
import type { DeliveryTarget } from '../../../src/scheduling/scheduler';
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
