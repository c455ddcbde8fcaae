import { describe, it, beforeEach, afterEach } from 'mocha';
import { expect } from 'chai';
import { FakeClock, flushMicrotasks } from '../../../../../test/helpers/fake-clock';
import { MemoryStore } from '../../../src/store/memory/memory';
import { Scheduler } from '../../../src/scheduling/queue';
import type { AttemptReport, DeliveryTarget } from '../../../src/scheduling/queue';
import type { AttemptResult, AttemptState } from '../../../src/delivery/destination';
import type { NewDelivery } from '../../../src/store/contract';

/** A memory store that counts the scheduler's `nextDueAfter` questions. */
class CountingStore extends MemoryStore {
  nextDueCalls = 0;
  override nextDueAfter(source: string, now: number): Promise<number | undefined> {
    this.nextDueCalls++;
    return super.nextDueAfter(source, now);
  }
}

/** A memory store that keeps the outcome batches the scheduler writes. */
class RecordingStore extends MemoryStore {
  readonly writes: string[][] = [];
  override record(outcomes: Parameters<MemoryStore['record']>[0]): ReturnType<MemoryStore['record']> {
    this.writes.push(outcomes.map((o) => o.status));
    return super.record(outcomes);
  }
}

/** A memory store that never tells a due time, as the PostgreSQL store leaves out a claim's lease end. */
class SilentStore extends MemoryStore {
  override async nextDueAfter(): Promise<number | undefined> {
    return undefined;
  }
}

interface Call {
  body: string;
  state: AttemptState;
  resolve: (result: AttemptResult) => void;
}

/** A destination whose attempts the test answers by hand. */
class ManualTarget implements DeliveryTarget {
  readonly calls: Call[] = [];
  attempt(body: string, state: AttemptState): Promise<AttemptResult> {
    return new Promise((resolve) => this.calls.push({ body, state, resolve }));
  }
}

const outcome = { url: 'http://127.0.0.1/x', index: 0, retryable: true, durationMs: 1 };
const delivered = (attempt: number): AttemptResult => ({ status: 'delivered', url: outcome.url, attempt, outcomes: [{ ...outcome, status: 200 }] });
const retry = (attempt: number, at: number): AttemptResult => ({ status: 'retry', attempt, nextAttemptAt: at, outcomes: [{ ...outcome, status: 503 }] });
const failed = (attempt: number): AttemptResult => ({ status: 'failed', attempt, reason: 'HTTP 404', outcomes: [{ ...outcome, status: 404, retryable: false }] });

describe('Scheduler', () => {
  let clock: FakeClock;
  let store: MemoryStore;
  let target: ManualTarget;
  let reports: AttemptReport[];
  let scheduler: Scheduler;

  function delivery(messageId: string, source = 'web'): NewDelivery {
    return { source, destination: 'Webhooks', kind: 'message', messageId, body: `{"id":"${messageId}"}`, createdAt: clock.now() };
  }

  let errors: Error[];

  function create(
    concurrency = 8,
    targets: ReadonlyMap<string, DeliveryTarget> = new Map([['web', target]]),
    recorded: (r: AttemptReport) => void = (r) => reports.push(r),
  ): Scheduler {
    reports = [];
    errors = [];
    scheduler = new Scheduler(store, targets, clock, { concurrency, idleWait: 60_000, owner: 'me', leaseMs: 30_000, onError: (e) => errors.push(e) }, { recorded });
    return scheduler;
  }

  beforeEach(() => {
    clock = new FakeClock();
    store = new MemoryStore();
    target = new ManualTarget();
  });

  afterEach(async () => {
    const stopping = scheduler?.stop();
    for (const call of target.calls) call.resolve(delivered(call.state.attempt));
    await stopping;
  });

  it('attempts due deliveries and records their outcome', async () => {
    await store.enqueue([delivery('a'), delivery('b')]);
    create().start();
    await flushMicrotasks();
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}', '{"id":"b"}']);
    expect(target.calls[0]!.state).to.deep.equal({ attempt: 1, firstAttemptAt: clock.now(), id: 'a' });
    target.calls[0]!.resolve(delivered(1));
    target.calls[1]!.resolve(failed(1));
    await flushMicrotasks();
    expect(await store.counts()).to.deep.include({ delivered: 1, failed: 1, pending: 0 });
    expect(reports.map((r) => [r.messageId, r.result.status])).to.deep.equal([['a', 'delivered'], ['b', 'failed']]);
  });

  it('retries at the time the destination gave, with the attempt count and the first attempt time', async () => {
    await store.enqueue([delivery('a')]);
    const start = clock.now();
    create().start();
    await flushMicrotasks();
    target.calls[0]!.resolve(retry(1, start + 1000));
    await flushMicrotasks();
    expect(await store.counts()).to.deep.include({ pending: 1, retrying: 1 });
    await clock.tick(999);
    expect(target.calls).to.have.length(1);
    await clock.tick(1);
    expect(target.calls).to.have.length(2);
    expect(target.calls[1]!.state).to.deep.equal({ attempt: 2, firstAttemptAt: start, id: 'a' });
    target.calls[1]!.resolve(delivered(2));
    await flushMicrotasks();
    expect(await store.counts()).to.deep.include({ delivered: 1, pending: 0, retrying: 0 });
  });

  it('starts each of several retries written together on time, idle between them (not the earliest alone)', async () => {
    await store.enqueue([delivery('a'), delivery('b'), delivery('c')]);
    const start = clock.now();
    create().start();
    await flushMicrotasks();
    // Written in one batch: the loop then knows the earliest time only; once that one is taken,
    // it must find the others' times too, not sleep for the idle wait (60 s here).
    target.calls[0]!.resolve(retry(1, start + 100));
    target.calls[1]!.resolve(retry(1, start + 300));
    target.calls[2]!.resolve(retry(1, start + 700));
    await clock.tick(100);
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}', '{"id":"b"}', '{"id":"c"}', '{"id":"a"}']);
    target.calls[3]!.resolve(delivered(2));
    await clock.tick(200);
    expect(target.calls.map((c) => c.body).slice(4)).to.deep.equal(['{"id":"b"}']);
    target.calls[4]!.resolve(delivered(2));
    await clock.tick(400);
    expect(target.calls.map((c) => c.body).slice(5)).to.deep.equal(['{"id":"c"}']);
  });

  it('starts a retry on time while another attempt hangs in flight', async () => {
    await store.enqueue([delivery('hang'), delivery('a')]);
    create().start();
    await flushMicrotasks();
    const start = clock.now();
    target.calls[1]!.resolve(retry(1, start + 500));
    await clock.tick(499);
    expect(target.calls).to.have.length(2);
    await clock.tick(1);
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"hang"}', '{"id":"a"}', '{"id":"a"}']);
    // Again, due before the store is next asked: still on time.
    await clock.tick(100);
    target.calls[2]!.resolve(retry(2, start + 800));
    await clock.tick(199);
    expect(target.calls).to.have.length(3);
    await clock.tick(1);
    expect(target.calls).to.have.length(4);
    expect(target.calls[3]!.state.attempt).to.equal(3);
  });

  it('starts a retry that fell due while the store was answering a claim, without waiting for the idle poll', async () => {
    // The machine is slow: 30 ms pass while the store answers the claim that finds nothing due.
    store = new (class extends MemoryStore {
      override async claim(...args: Parameters<MemoryStore['claim']>) {
        const due = await super.claim(...args);
        if (due.length === 0) clock.skip(30);
        return due;
      }
    })();
    await store.enqueue([delivery('a')]);
    create().start();
    await flushMicrotasks();
    const retryAt = clock.now() + 10;
    target.calls[0]!.resolve(retry(1, retryAt));
    await flushMicrotasks();
    // Due during that claim: attempted at once, not after idleWait (60 s here).
    while (target.calls.length < 2 && clock.now() < retryAt + 60_000) await clock.tick(10);
    expect(target.calls).to.have.length(2);
    expect(clock.now() - retryAt).to.be.at.most(100);
  });

  it('starts a delivery that another instance made due within 1 s while an attempt hangs in flight', async () => {
    await store.enqueue([delivery('b')]);
    // Another instance claims b, then writes a retry the scheduler was never told of.
    const [other] = await store.claim('web', clock.now(), 1, { owner: 'other', ms: 30_000 });
    await store.enqueue([delivery('hang')]);
    create().start();
    await flushMicrotasks();
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"hang"}']);
    await clock.tick(500);
    const due = clock.now() + 100;
    await store.record([{ id: other!.id, lease: other!.lease, status: 'retry', attempts: 1, firstAttemptAt: clock.now(), nextAttemptAt: due }]);
    while (target.calls.length < 2 && clock.now() < due + 10_000) await clock.tick(10);
    expect(target.calls[1]?.body).to.equal('{"id":"b"}');
    expect(clock.now() - due).to.be.at.most(1000);
  });

  it('asks the store for the next due time at most once a second per source while attempts complete steadily', async () => {
    const counting = new CountingStore();
    store = counting;
    const other = new ManualTarget();
    await store.enqueue([delivery('hang'), delivery('other-hang', 'other')]);
    create(8, new Map<string, DeliveryTarget>([['web', target], ['other', other]])).start();
    await flushMicrotasks();
    const before = counting.nextDueCalls;
    // Five seconds of a delivery every 10 ms per source, each answered in the next 10 ms: 1000 loop rounds.
    for (let i = 0; i < 500; i++) {
      await store.enqueue([delivery(`w${i}`), delivery(`o${i}`, 'other')]);
      scheduler.wake();
      await clock.tick(10);
      for (const call of [...target.calls.slice(1), ...other.calls.slice(1)]) call.resolve(delivered(1));
    }
    await flushMicrotasks();
    expect(target.calls).to.have.length(501);
    expect(other.calls).to.have.length(501);
    // About one question per second per source: 2 sources x 5 s, and the first round.
    expect(counting.nextDueCalls - before).to.be.at.most(12);
    for (const call of other.calls) call.resolve(delivered(1));
  });

  it('asks the store for the next due time at most once a second per source under a paced load that leaves it idle between deliveries', async () => {
    const counting = new CountingStore();
    store = counting;
    create().start();
    await flushMicrotasks();
    const before = counting.nextDueCalls;
    // Five seconds of a delivery every 10 ms, each answered at once: the loop goes idle 500 times.
    for (let i = 0; i < 500; i++) {
      await store.enqueue([delivery(`p${i}`)]);
      scheduler.wake();
      await flushMicrotasks();
      for (const call of target.calls.slice(i)) call.resolve(delivered(1));
      await clock.tick(10);
    }
    expect(target.calls).to.have.length(500);
    expect(scheduler.active).to.equal(0);
    expect(counting.nextDueCalls - before).to.be.at.most(7);
  });

  it('idle, starts a delivery another instance made due no later than the idle wait after the last answer', async () => {
    await store.enqueue([delivery('b')]);
    // Another instance holds b; its retry, written after this loop's last answer, is news to it.
    const [other] = await store.claim('web', clock.now(), 1, { owner: 'other', ms: 3_600_000 });
    create().start();
    await flushMicrotasks();
    await store.enqueue([delivery('a')]);
    scheduler.wake();
    await flushMicrotasks();
    target.calls[0]!.resolve(delivered(1));
    await flushMicrotasks();
    const answered = clock.now();
    await clock.tick(200);
    await store.record([{ id: other!.id, lease: other!.lease, status: 'retry', attempts: 1, firstAttemptAt: clock.now(), nextAttemptAt: clock.now() + 100 }]);
    while (target.calls.length < 2 && clock.now() < answered + 120_000) await clock.tick(100);
    expect(target.calls[1]?.body).to.equal('{"id":"b"}');
    // idleWait is 60 s here.
    expect(clock.now() - answered).to.be.at.most(60_000);
  });

  it('takes over a lapsed claim the store did not announce: within 1 s while an attempt hangs, within the idle wait when idle', async () => {
    store = new SilentStore();
    await store.enqueue([delivery('busy')]);
    // Another instance claims it and dies; its lease ends 30 s from now.
    const leaseEnd = clock.now() + 30_000;
    expect(await store.claim('web', clock.now(), 1, { owner: 'other', ms: 30_000 })).to.have.length(1);
    await store.enqueue([delivery('hang')]);
    create(2).start();
    await flushMicrotasks();
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"hang"}']);
    // Busy (an attempt hangs, a slot is free): claims stay a second apart at most.
    while (target.calls.length < 2 && clock.now() < leaseEnd + 10_000) await clock.tick(100);
    expect(target.calls[1]?.body).to.equal('{"id":"busy"}');
    expect(clock.now()).to.be.at.least(leaseEnd);
    expect(clock.now() - leaseEnd).to.be.at.most(1000);
    for (const call of target.calls) call.resolve(delivered(1));
    await flushMicrotasks();
    expect(scheduler.active).to.equal(0);
    // Idle: a claim lapses while nothing is in flight; found at the latest one idle wait (60 s here) after.
    await store.enqueue([delivery('idle')]);
    const [idle] = await store.claim('web', clock.now(), 1, { owner: 'other', ms: 30_000 });
    expect(idle).to.include({ messageId: 'idle' });
    const idleEnd = clock.now() + 30_000;
    while (target.calls.length < 3 && clock.now() < idleEnd + 120_000) await clock.tick(500);
    expect(target.calls[2]?.body).to.equal('{"id":"idle"}');
    expect(clock.now()).to.be.at.least(idleEnd);
    expect(clock.now() - idleEnd).to.be.at.most(60_000);
  });

  it('writes outcomes together while attempts are in flight (up to 5 ms, or half of concurrency), and at once when none is', async () => {
    const recording = new RecordingStore();
    store = recording;
    await store.enqueue(['hang', 'a', 'b', 'c', 'd', 'e', 'f'].map((id) => delivery(id)));
    create(8).start();
    await flushMicrotasks();
    expect(target.calls).to.have.length(7);
    // Two outcomes in separate turns, with attempts still in flight: they wait for each other.
    target.calls[1]!.resolve(delivered(1));
    await flushMicrotasks();
    target.calls[2]!.resolve(delivered(1));
    await flushMicrotasks();
    expect(recording.writes).to.deep.equal([]);
    await clock.tick(5);
    expect(recording.writes).to.deep.equal([['delivered', 'delivered']]);
    // Half of concurrency (4) waiting: written without the wait.
    for (const i of [3, 4, 5, 6]) {
      target.calls[i]!.resolve(delivered(1));
      await flushMicrotasks();
    }
    expect(recording.writes).to.deep.equal([['delivered', 'delivered'], ['delivered', 'delivered', 'delivered', 'delivered']]);
    // The last attempt in flight ends: nothing more to wait for.
    target.calls[0]!.resolve(retry(1, clock.now() + 60_000));
    await flushMicrotasks();
    expect(recording.writes).to.have.length(3);
    expect(recording.writes[2]).to.deep.equal(['retry']);
  });

  it('fills a slot at once when its outcome waits for others', async () => {
    const recording = new RecordingStore();
    store = recording;
    await store.enqueue(['hang', 'a', 'c', 'd', 'b'].map((id) => delivery(id)));
    create(4).start();
    await flushMicrotasks();
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"hang"}', '{"id":"a"}', '{"id":"c"}', '{"id":"d"}']);
    target.calls[1]!.resolve(delivered(1));
    await flushMicrotasks();
    // a's outcome waits (attempts are in flight); its slot went to b without waiting for the write.
    expect(recording.writes).to.deep.equal([]);
    expect(target.calls.map((c) => c.body)).to.include('{"id":"b"}');
  });

  it('keeps at most `concurrency` attempts in flight and never the same delivery twice', async () => {
    await store.enqueue(['a', 'b', 'c', 'd', 'e'].map((id) => delivery(id)));
    create(2).start();
    await flushMicrotasks();
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}', '{"id":"b"}']);
    scheduler.wake();
    scheduler.wake();
    await clock.tick(120_000);
    expect(target.calls).to.have.length(2);
    expect(scheduler.active).to.equal(2);
    target.calls[0]!.resolve(delivered(1));
    await flushMicrotasks();
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}', '{"id":"b"}', '{"id":"c"}']);
  });

  it('wakes at once for new work instead of waiting for the idle poll', async () => {
    create().start();
    await flushMicrotasks();
    await store.enqueue([delivery('late')]);
    scheduler.wake();
    await flushMicrotasks();
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"late"}']);
  });

  it('leaves the deliveries of a source without a destination pending, untouched', async () => {
    await store.enqueue([delivery('orphan', 'removed-source'), delivery('a')]);
    create().start();
    await flushMicrotasks();
    expect(target.calls.map((c) => c.body)).to.deep.equal(['{"id":"a"}']);
    const [kept] = await store.claim('removed-source', clock.now(), 10, { owner: 'test', ms: 1000 });
    expect(kept).to.include({ messageId: 'orphan', attempts: 0 });
    expect((await store.counts()).pending).to.equal(2);
  });

  it('shares the slots between sources: a hanging receiver cannot take them all', async () => {
    const hanging = new ManualTarget();
    await store.enqueue(Array.from({ length: 10 }, (_, i) => delivery(`slow${i}`, 'slow')));
    await store.enqueue(Array.from({ length: 10 }, (_, i) => delivery(`fast${i}`)));
    create(4, new Map<string, DeliveryTarget>([['slow', hanging], ['web', target]])).start();
    await flushMicrotasks();
    // Four slots, two per source at most.
    expect(hanging.calls).to.have.length(2);
    expect(target.calls).to.have.length(2);
    // The fast source keeps going while the slow one hangs.
    for (let round = 0; round < 4; round++) {
      for (const call of target.calls.slice(-2)) call.resolve(delivered(1));
      await flushMicrotasks();
    }
    expect(target.calls).to.have.length(10);
    expect(hanging.calls).to.have.length(2);
    // Stopped before the hanging calls end, so that their slots start nothing more of `slow`
    // (which the shared after-each hook would not answer).
    const stopping = scheduler.stop();
    for (const call of [...hanging.calls, ...target.calls]) call.resolve(delivered(call.state.attempt));
    await stopping;
    expect(hanging.calls).to.have.length(2);
  });

  it('does not count a retry in which nothing was sent (destination closing)', async () => {
    await store.enqueue([delivery('a')]);
    create().start();
    await flushMicrotasks();
    target.calls[0]!.resolve({ status: 'retry', attempt: 1, nextAttemptAt: clock.now() + 10, outcomes: [] });
    await flushMicrotasks();
    await clock.tick(10);
    expect(target.calls[1]!.state.attempt).to.equal(1);
  });

  it('stop() waits for attempts in flight, records them, and takes nothing new', async () => {
    await store.enqueue([delivery('a')]);
    create().start();
    await flushMicrotasks();
    let stopped = false;
    const stopping = scheduler.stop().then(() => (stopped = true));
    await store.enqueue([delivery('b')]);
    scheduler.wake();
    await flushMicrotasks();
    expect(stopped).to.equal(false);
    target.calls[0]!.resolve(delivered(1));
    await stopping;
    expect(target.calls).to.have.length(1);
    expect(await store.counts()).to.deep.include({ delivered: 1, pending: 1 });
  });

  it('claims with a lease: another instance cannot take a delivery in flight, and takes it over when the lease ends', async () => {
    await store.enqueue([delivery('a')]);
    create().start();
    await flushMicrotasks();
    expect(target.calls).to.have.length(1);
    expect(await store.claim('web', clock.now(), 10, { owner: 'other', ms: 30_000 })).to.deep.equal([]);
    const [taken] = await store.claim('web', clock.now() + 30_000, 10, { owner: 'other', ms: 30_000 });
    expect(taken).to.include({ messageId: 'a' });
    // The first attempt ends after the takeover with a retry: the new holder's claim decides.
    target.calls[0]!.resolve(retry(1, clock.now() + 10));
    await flushMicrotasks();
    expect(await store.counts()).to.deep.include({ pending: 1, retrying: 0 });
  });

  it('an outcome step that throws does not stop delivery: slots are released and the error is reported', async () => {
    await store.enqueue(['a', 'b', 'c'].map((id) => delivery(id)));
    let seen = 0;
    create(1, undefined, () => {
      seen++;
      throw new Error('listener bug');
    }).start();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      for (let i = 0; i < 3; i++) {
        await flushMicrotasks();
        target.calls[i]!.resolve(delivered(1));
      }
      await flushMicrotasks();
      expect(target.calls).to.have.length(3);
      expect(seen).to.equal(3);
      expect(errors.map((e) => e.message)).to.deep.equal(['listener bug', 'listener bug', 'listener bug']);
      expect(scheduler.active).to.equal(0);
      expect(await store.counts()).to.deep.include({ delivered: 3, pending: 0 });
      await scheduler.stop();
      expect(unhandled).to.deep.equal([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
