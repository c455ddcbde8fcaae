import { describe, it, beforeEach, afterEach } from 'mocha';
import { expect } from 'chai';
import { FakeClock, flushMicrotasks } from '../../../../../test/helpers/fake-clock';
import { MemoryStore } from '../../../src/store/memory/memory';
import { Scheduler } from '../../../src/scheduling/queue';
import type { DeliveryTarget } from '../../../src/scheduling/queue';
import type { AttemptResult, AttemptState } from '../../../src/delivery/destination';
import type { AcceptedMessage, LeaseRequest, PendingDelivery } from '../../../src/store/contract';

/** A memory store that counts claims. */
class CountingStore extends MemoryStore {
  claims = 0;
  override claim(source: string, now: number, limit: number, lease: LeaseRequest): Promise<PendingDelivery[]> {
    this.claims++;
    return super.claim(source, now, limit, lease);
  }
}

/** A store whose claims answer what it held when they began, once the test lets them go (`hold`). */
class HeldClaims extends CountingStore {
  readonly gates: (() => void)[] = [];
  hold = false;
  override async claim(source: string, now: number, limit: number, lease: LeaseRequest): Promise<PendingDelivery[]> {
    const due = await super.claim(source, now, limit, lease);
    if (this.hold) await new Promise<void>((resolve) => this.gates.push(resolve));
    return due;
  }
}

/** A destination whose attempts the test answers by hand. */
class ManualTarget implements DeliveryTarget {
  readonly calls: { body: string; state: AttemptState; resolve: (result: AttemptResult) => void }[] = [];
  attempt(body: string, state: AttemptState): Promise<AttemptResult> {
    return new Promise((resolve) => this.calls.push({ body, state, resolve }));
  }
}

const delivered = (attempt: number): AttemptResult => ({
  status: 'delivered',
  url: 'http://127.0.0.1/x',
  attempt,
  outcomes: [{ url: 'http://127.0.0.1/x', index: 0, retryable: false, durationMs: 1, status: 200 }],
});

const LEASE_MS = 30_000;
const HOLD_MS = 20_000;

describe('Scheduler: deliveries handed over at acceptance', () => {
  let clock: FakeClock;
  let store: CountingStore;
  let target: ManualTarget;
  let scheduler: Scheduler;

  function message(messageId: string): AcceptedMessage {
    const at = clock.now();
    return { source: 'web', messageId, receivedAt: at, deliveries: [{ source: 'web', destination: 'Webhooks', kind: 'message', messageId, body: `{"id":"${messageId}"}`, createdAt: at }] };
  }

  /** What the forwarder does with a request: the scheduler's lease on the accept, then adopt (or stored). */
  async function accept(...ids: string[]): Promise<void> {
    const lease = scheduler.handOff('web', clock.now());
    const result = await store.accept(ids.map(message), lease);
    if (lease !== undefined && result.leased !== undefined) scheduler.adopt(result.leased, lease);
    else scheduler.stored('web');
    await flushMicrotasks();
  }

  function create(concurrency = 8, holdMs = HOLD_MS): Scheduler {
    scheduler = new Scheduler(store, new Map([['web', target]]), clock, { concurrency, idleWait: 60_000, owner: 'me', leaseMs: LEASE_MS, holdMs });
    return scheduler;
  }

  beforeEach(() => {
    clock = new FakeClock();
    store = new CountingStore();
    target = new ManualTarget();
  });

  afterEach(async () => {
    const stopping = scheduler?.stop();
    for (const call of target.calls) call.resolve(delivered(call.state.attempt));
    await stopping;
  });

  it('attempts what the accept leased to it, in order, without a claim', async () => {
    create().start();
    await flushMicrotasks();
    const claims = store.claims;
    await accept('a', 'b');
    await accept('c');
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}', '{"id":"b"}', '{"id":"c"}']);
    expect(target.calls[0]!.state).to.deep.equal({ attempt: 1, firstAttemptAt: clock.now(), id: 'a' });
    for (const call of target.calls) call.resolve(delivered(1));
    await flushMicrotasks();
    expect(await store.counts()).to.deep.include({ delivered: 3, pending: 0 });
    expect(store.claims).to.equal(claims);
  });

  it('hands over nothing without holdMs: every delivery is claimed', async () => {
    create(8, 0).start();
    await flushMicrotasks();
    expect(scheduler.handOff('web', clock.now())).to.equal(undefined);
    const claims = store.claims;
    await accept('a');
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}']);
    expect(store.claims).to.be.above(claims);
  });

  it('hands over nothing while the store has a due delivery it did not claim, so that none passes an older one', async () => {
    create(1).start();
    await flushMicrotasks();
    await accept('a');
    expect(target.calls).to.have.length(1);
    // The slot is taken: b waits in memory; the bound is not reached, so c is handed over too.
    await accept('b');
    // Stored unleased (another process's write, or a restart): the store now has one due.
    await store.enqueue([message('old').deliveries[0]!]);
    scheduler.wake();
    await flushMicrotasks();
    expect(scheduler.handOff('web', clock.now())).to.equal(undefined);
    await accept('d');
    // In order of their turn: held b first, then the store's old and d by claims.
    for (let i = 0; i < 4; i++) {
      target.calls[i]!.resolve(delivered(1));
      await flushMicrotasks();
    }
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}', '{"id":"b"}', '{"id":"old"}', '{"id":"d"}']);
    // Caught up: the next call is handed over again.
    expect(scheduler.handOff('web', clock.now())).to.not.equal(undefined);
  });

  it('claims again at once what was stored while a claim ran that could not see it (no wait for the next second)', async () => {
    const held = new HeldClaims();
    store = held;
    create(8).start();
    await flushMicrotasks();
    held.hold = true;
    scheduler.wake();
    await flushMicrotasks();
    expect(held.gates).to.have.length(1);
    // Stored unleased while that claim runs (its answer, empty, predates it).
    await store.enqueue([message('late').deliveries[0]!]);
    scheduler.stored('web');
    held.hold = false;
    held.gates.shift()!();
    await flushMicrotasks();
    // Attempted without the clock moving: the loop did not take the old answer for caught up.
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"late"}']);
  });

  it('gives back at stop() what it holds: due at once for another instance, no attempt counted', async () => {
    create(1).start();
    await flushMicrotasks();
    await accept('a', 'b', 'c');
    expect(target.calls).to.have.length(1);
    const stopping = scheduler.stop();
    target.calls[0]!.resolve(delivered(1));
    await stopping;
    const due = await store.claim('web', clock.now(), 10, { owner: 'other', ms: LEASE_MS });
    expect(due.map((d) => [d.messageId, d.attempts])).to.deep.equal([
      ['b', 0],
      ['c', 0],
    ]);
    expect(await store.counts()).to.deep.include({ delivered: 1, pending: 2, retrying: 0 });
  });

  it('gives back a delivery that waited past holdMs for a slot, and claims it like any other', async () => {
    create(1).start();
    await flushMicrotasks();
    await accept('a', 'late');
    expect(target.calls).to.have.length(1);
    await clock.tick(HOLD_MS + 1);
    // Its lease still runs for 10 s, too short for an attempt that may take the whole timeout.
    target.calls[0]!.resolve(delivered(1));
    await flushMicrotasks();
    await clock.tick(10);
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}', '{"id":"late"}']);
    const [, late] = target.calls;
    expect(late!.state.attempt).to.equal(1);
    // Attempted under a claim of its own: another instance cannot take it now.
    expect(await store.claim('web', clock.now(), 10, { owner: 'other', ms: LEASE_MS })).to.deep.equal([]);
  });

  it('the bound on the bodies it holds: past it, calls are stored unleased and claimed', async () => {
    create(8).start();
    await flushMicrotasks();
    const big = 'x'.repeat(4 * 1024 * 1024);
    // Eight are attempted at once (concurrency 8), four wait: 16 Mi characters.
    for (let i = 0; i < 12; i++) {
      const lease = scheduler.handOff('web', clock.now());
      expect(lease, `request ${i}`).to.not.equal(undefined);
      const m = message(`big${i}`);
      const result = await store.accept([{ ...m, deliveries: [{ ...m.deliveries[0]!, body: big }] }], lease);
      scheduler.adopt(result.leased!, lease!);
      await flushMicrotasks();
    }
    expect(target.calls).to.have.length(8);
    expect(scheduler.handOff('web', clock.now())).to.equal(undefined);
  });

  it('takes no more than it can start soon: its slots plus as many; the rest is left to any instance to claim', async () => {
    create(2).start();
    await flushMicrotasks();
    // One request of six: two start, two wait for a slot, two go back to the store at once.
    await accept('a', 'b', 'c', 'd', 'e', 'f');
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}', '{"id":"b"}']);
    // Full: the next request is stored unleased.
    expect(scheduler.handOff('web', clock.now())).to.equal(undefined);
    await clock.tick(10);
    const other = await store.claim('web', clock.now(), 10, { owner: 'other', ms: LEASE_MS });
    expect(other.map((d) => d.messageId)).to.deep.equal(['e', 'f']);
    for (const call of target.calls.splice(0)) call.resolve(delivered(1));
    await flushMicrotasks();
    await clock.tick(10);
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"c"}', '{"id":"d"}']);
  });

  it('holds up to what it started in the last second, when that is more than its slots plus as many', async () => {
    create(2).start();
    await flushMicrotasks();
    await clock.tick(1000 - (clock.now() % 1000));
    // Ten attempts started, and finished, within one second of the clock.
    await accept(...Array.from({ length: 10 }, (_, i) => `s${i}`));
    let finished = 0;
    for (let round = 0; finished < 10 && round < 50; round++) {
      const calls = target.calls.splice(0);
      for (const call of calls) call.resolve(delivered(1));
      finished += calls.length;
      await flushMicrotasks();
      await clock.tick(10);
    }
    expect(finished).to.equal(10);
    await clock.tick(1000 - (clock.now() % 1000));
    // The next second: a request of ten is held whole (two start, eight wait), none given back.
    await accept('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j');
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}', '{"id":"b"}']);
    await clock.tick(10);
    expect(await store.claim('web', clock.now(), 20, { owner: 'other', ms: LEASE_MS })).to.deep.equal([]);
    // Seconds later with nothing started: back to its slots plus as many, which it holds already.
    await clock.tick(2000);
    expect(scheduler.handOff('web', clock.now())).to.equal(undefined);
  });
});

/** A store whose outcome writes wait until the test lets them go. */
class SlowRecords extends MemoryStore {
  readonly writes: (() => void)[] = [];
  override async record(outcomes: Parameters<MemoryStore['record']>[0]): ReturnType<MemoryStore['record']> {
    await new Promise<void>((resolve) => this.writes.push(resolve));
    return super.record(outcomes);
  }
}

/** Lets the store's outcome writes go, one a turn, until `done()`. */
async function releaseWrites(store: SlowRecords, done: () => boolean): Promise<void> {
  while (!done()) {
    store.writes.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('Scheduler: a slot is free when its request ends', () => {
  it('starts the next attempt while the outcome of the last one is still being written', async () => {
    const clock = new FakeClock();
    const store = new SlowRecords();
    const target = new ManualTarget();
    const at = clock.now();
    await store.enqueue(['a', 'b'].map((id) => ({ source: 'web', destination: 'Webhooks', kind: 'message' as const, messageId: id, body: `{"id":"${id}"}`, createdAt: at })));
    const scheduler = new Scheduler(store, new Map([['web', target]]), clock, { concurrency: 1, idleWait: 60_000, owner: 'me', leaseMs: LEASE_MS });
    scheduler.start();
    await flushMicrotasks();
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}']);
    target.calls[0]!.resolve(delivered(1));
    await flushMicrotasks();
    // a's outcome is not written yet, and b is under way.
    expect(store.writes).to.have.length(1);
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}', '{"id":"b"}']);
    expect(scheduler.active).to.equal(1);
    // stop() waits for both outcomes to be written.
    let stopped = false;
    const stopping = scheduler.stop().then(() => (stopped = true));
    target.calls[1]!.resolve(delivered(1));
    // Each write is let go as it comes; stop() resolves only after the last one.
    await releaseWrites(store, () => stopped);
    await stopping;
    expect(store.writes).to.have.length(0);
    expect(await store.counts()).to.deep.include({ delivered: 2, pending: 0 });
  });

  it('starts no more attempts while as many outcomes as `concurrency` wait to be written: a killed instance resends at most twice that', async () => {
    const clock = new FakeClock();
    const store = new SlowRecords();
    const target = new ManualTarget();
    const at = clock.now();
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    await store.enqueue(ids.map((id) => ({ source: 'web', destination: 'Webhooks', kind: 'message' as const, messageId: id, body: `{"id":"${id}"}`, createdAt: at })));
    const scheduler = new Scheduler(store, new Map([['web', target]]), clock, { concurrency: 2, idleWait: 60_000, owner: 'me', leaseMs: LEASE_MS });
    scheduler.start();
    await flushMicrotasks();
    // Answered in turn while no outcome is written: a, b, then c, d take the freed slots.
    for (let answered = 0; answered < 4; answered++) {
      target.calls[answered]!.resolve(delivered(1));
      await flushMicrotasks();
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Two outcomes wait to be written and two more behind them: no slot for e and f yet.
    expect(target.calls.map((c) => c.body)).to.deep.equal(['a', 'b', 'c', 'd'].map((id) => `{"id":"${id}"}`));
    expect(scheduler.active).to.equal(0);
    // Once they are written, the rest goes.
    await releaseWrites(store, () => target.calls.length === 6);
    let stopped = false;
    const stopping = scheduler.stop().then(() => (stopped = true));
    for (const call of target.calls.slice(4)) call.resolve(delivered(1));
    await releaseWrites(store, () => stopped);
    await stopping;
    expect(await store.counts()).to.deep.include({ delivered: 6, pending: 0 });
  });
});
