import { afterEach, beforeEach, describe, it } from 'mocha';
import { expect } from 'chai';
import { FakeClock, flushMicrotasks } from '../../../../../test/helpers/fake-clock';
import { MemoryStore } from '../../../src/store/memory/memory';
import { Scheduler } from '../../../src/scheduling/queue';
import { Recording } from '../../../src/scheduling/recording';
import type { AttemptReport, DeliveryTarget } from '../../../src/scheduling/queue';
import type { AttemptResult, AttemptState, CallParts } from '../../../src/delivery/destination';
import type { BatchSettings } from '../../../src/batch-body';
import type { BatchMember, NewDelivery, PendingDelivery } from '../../../src/store/contract';

interface Sent {
  index: number;
  body: string;
  state: AttemptState;
  resolve: (result: AttemptResult) => void;
}

/**
 * A destination with one URL with `batch` (and, with `single`, a second without), whose batch
 * requests the test answers by hand; `slow` holds a call's parts until released (a transform that
 * is still compiling, say).
 */
class ManualBatchTarget implements DeliveryTarget {
  readonly sent: Sent[] = [];
  readonly slow = new Map<string, () => void>();
  readonly batches: readonly (BatchSettings | undefined)[];

  constructor(settings: BatchSettings, single = false) {
    this.batches = single ? [settings, undefined] : [settings];
  }

  attempt(): Promise<AttemptResult> {
    throw new Error('a call of a source that batches is never attempted alone');
  }

  async parts(body: string): Promise<CallParts> {
    const id = (JSON.parse(body) as { id: string }).id;
    if (id.startsWith('slow')) await new Promise<void>((resolve) => this.slow.set(id, resolve));
    return { parts: this.batches.map((_, index) => ({ index, text: body })), failed: [] };
  }

  attemptBatch(index: number, body: string, state: AttemptState): Promise<AttemptResult> {
    return new Promise((resolve) => this.sent.push({ index, body, state, resolve }));
  }
}

const outcome = { url: 'http://127.0.0.1/x', index: 0, retryable: true, durationMs: 1 };
const ok = (attempt: number): AttemptResult => ({ status: 'delivered', url: outcome.url, attempt, outcomes: [{ ...outcome, status: 200 }] });
const answered = (status: number, attempt: number, at: number): AttemptResult => ({ status: 'retry', attempt, nextAttemptAt: at, outcomes: [{ ...outcome, status }] });
const ids = (body: string) => (JSON.parse(body) as { id: string }[]).map((m) => m.id);

describe('the batching step (batched delivery)', () => {
  let clock: FakeClock;
  let store: MemoryStore;
  let reports: AttemptReport[];
  let scheduler: Scheduler;
  let target: ManualBatchTarget;

  const call = (id: string, orderKey?: string): NewDelivery => ({ source: 'web', destination: 'Webhooks', kind: 'message', messageId: id, body: `{"id":"${id}"}`, createdAt: clock.now(), orderKey });

  let errors: Error[];

  function start(settings: BatchSettings, single = false, concurrency = 8): void {
    target = new ManualBatchTarget(settings, single);
    reports = [];
    errors = [];
    const options = { concurrency, idleWait: 60_000, owner: 'me', leaseMs: 30_000, onError: (error: Error) => errors.push(error) };
    scheduler = new Scheduler(store, new Map([['web', target]]), clock, options, { recorded: (r) => reports.push(r) });
    scheduler.start();
  }

  /** Runs the loop's turns (claims, seals and writes go through promises and setImmediate). */
  async function settle(): Promise<void> {
    for (let i = 0; i < 20; i++) {
      await flushMicrotasks();
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  beforeEach(() => {
    clock = new FakeClock();
    store = new MemoryStore();
  });

  afterEach(async () => {
    const stopping = scheduler?.stop();
    for (const s of target?.sent ?? []) s.resolve(ok(s.state.attempt));
    await stopping;
  });

  it('closes a batch at maxEvents, the calls in claim order; the rest wait maxWaitMs after their first', async () => {
    await store.enqueue(['a', 'b', 'c', 'd', 'e'].map((id) => call(id)));
    start({ maxEvents: 3, maxBytes: 1000, maxWaitMs: 500 });
    await settle();
    expect(target.sent.map((s) => ids(s.body))).to.deep.equal([['a', 'b', 'c']]);
    await clock.tick(499);
    await settle();
    expect(target.sent).to.have.length(1);
    await clock.tick(1);
    await settle();
    expect(target.sent.map((s) => ids(s.body))).to.deep.equal([['a', 'b', 'c'], ['d', 'e']]);
    expect(target.sent[0]!.state.id).to.match(/^batch_/);
    // Parked while their batch is out: nothing of theirs is claimable, and none counts as done.
    expect(await store.counts()).to.deep.include({ pending: 5, delivered: 0 });
    target.sent[0]!.resolve(ok(1));
    await settle();
    expect(await store.counts()).to.deep.include({ pending: 2, delivered: 3 });
    // One report for the batch's request, then one per call, each naming the batch.
    const batchId = reports.find((r) => r.kind === 'batch')!.id;
    expect(reports.filter((r) => r.kind === 'message').map((r) => [r.messageId, r.result.status, r.batch])).to.deep.equal([
      ['a', 'delivered', batchId],
      ['b', 'delivered', batchId],
      ['c', 'delivered', batchId],
    ]);
  });

  it('keeps claim order when a batch fills while a later call\'s parts are still being made: that call opens the next batch, ahead of calls claimed after', async () => {
    await store.enqueue(['a', 'b', 'slow-c', 'd'].map((id) => call(id)));
    start({ maxEvents: 2, maxBytes: 1000, maxWaitMs: 100 });
    await settle();
    expect(target.sent.map((s) => ids(s.body))).to.deep.equal([['a', 'b']]);
    await store.enqueue([call('e')]);
    scheduler.wake();
    await settle();
    target.slow.get('slow-c')!();
    await settle();
    await clock.tick(100);
    await settle();
    expect(target.sent.map((s) => ids(s.body))).to.deep.equal([['a', 'b'], ['slow-c', 'd'], ['e']]);
  });

  it('retries a failed batch with the same bytes and id; a 413 sends its two halves instead', async () => {
    await store.enqueue(['a', 'b', 'c', 'd', 'e'].map((id) => call(id)));
    start({ maxEvents: 5, maxBytes: 1000, maxWaitMs: 100 });
    await settle();
    const first = target.sent[0]!;
    first.resolve(answered(503, 1, clock.now() + 1000));
    await settle();
    await clock.tick(1000);
    await settle();
    const second = target.sent[1]!;
    expect([second.body, second.state.id, second.state.attempt]).to.deep.equal([first.body, first.state.id, 2]);
    second.resolve(answered(413, 2, clock.now() + 1000));
    await settle();
    expect(target.sent.slice(2).map((s) => ids(s.body))).to.deep.equal([['a', 'b', 'c'], ['d', 'e']]);
    expect(target.sent.slice(2).map((s) => s.body)).to.deep.equal(['[{"id":"a"},{"id":"b"},{"id":"c"}]', '[{"id":"d"},{"id":"e"}]']);
    for (const s of target.sent.slice(2)) s.resolve(ok(1));
    await settle();
    expect(await store.counts()).to.deep.include({ pending: 0, delivered: 5 });
  });

  it('a URL without batch beside one with it: each call alone there, as its own body; one 2xx delivers the call', async () => {
    await store.enqueue(['a', 'b'].map((id) => call(id)));
    start({ maxEvents: 10, maxBytes: 1000, maxWaitMs: 50 }, true);
    await settle();
    await clock.tick(50);
    await settle();
    const toSingle = target.sent.filter((s) => s.index === 1);
    expect(toSingle.map((s) => [s.body, s.state.id])).to.deep.equal([['{"id":"a"}', 'a'], ['{"id":"b"}', 'b']]);
    toSingle[0]!.resolve(ok(1));
    await settle();
    expect(await store.counts()).to.deep.include({ delivered: 1, pending: 1 });
    expect(reports.filter((r) => r.kind === 'message').map((r) => [r.messageId, r.result.status])).to.deep.equal([['a', 'delivered']]);
  });

  it('with ordering per user, claims a user\'s next call only once the batch holding the earlier one is delivered', async () => {
    await store.enqueue([call('u1-a', 'u1'), call('u2-a', 'u2'), call('u1-b', 'u1')]);
    start({ maxEvents: 10, maxBytes: 1000, maxWaitMs: 10 });
    await settle();
    await clock.tick(10);
    await settle();
    expect(target.sent.map((s) => ids(s.body))).to.deep.equal([['u1-a', 'u2-a']]);
    await clock.tick(1000);
    await settle();
    expect(target.sent).to.have.length(1);
    target.sent[0]!.resolve(ok(1));
    await settle();
    await clock.tick(10);
    await settle();
    expect(target.sent.map((s) => ids(s.body))).to.deep.equal([['u1-a', 'u2-a'], ['u1-b']]);
  });

  it('stopping gives the calls of an open batch back to the store, due, for any instance', async () => {
    await store.enqueue(['a', 'b'].map((id) => call(id)));
    start({ maxEvents: 10, maxBytes: 1000, maxWaitMs: 1000 });
    await settle();
    expect(target.sent).to.have.length(0);
    await scheduler.stop();
    expect((await store.claim('web', clock.now(), 10, { owner: 'other', ms: 1000 })).map((d) => d.messageId)).to.deep.equal(['a', 'b']);
  });

  it('a batch the store could not store is told to the operator once, and its calls are sent once their leases end', async () => {
    const seal = store.batches.seal.bind(store.batches);
    let failures = 1;
    store.batches.seal = (...args) => (failures-- > 0 ? Promise.reject(new Error('disk I/O error')) : seal(...args));
    await store.enqueue(['a', 'b'].map((id) => call(id)));
    start({ maxEvents: 2, maxBytes: 1000, maxWaitMs: 100 });
    await settle();
    expect(target.sent).to.have.length(0);
    expect(errors.map((e) => e.message)).to.deep.equal(['source web: could not store a batch of 2 calls (they are sent once their leases end): disk I/O error']);
    await clock.tick(30_000);
    scheduler.wake();
    await settle();
    expect(target.sent.map((s) => ids(s.body))).to.deep.equal([['a', 'b']]);
    expect(errors).to.have.length(1);
  });
});

describe('the recording step: the calls of stored batches kept in memory', () => {
  it('keeps those of the newest 1,024 batches at most (a batch split by a 413 or finished elsewhere never has its outcome here)', () => {
    const recording = new Recording(new MemoryStore(), new FakeClock(), 8, {} as never, {} as never, {} as never, {} as never);
    const member = (id: number): BatchMember => ({ id, source: 'web', messageId: `m-${id}`, orderKey: undefined, createdAt: 0, pending: true });
    for (let id = 1; id <= 1_100; id++) {
      recording.storedBatches([{ id } as PendingDelivery], new Map([[10_000 + id, member(10_000 + id)]]), [[10_000 + id]]);
    }
    const kept = (recording as unknown as { batchCalls: Map<number, unknown> }).batchCalls;
    expect(kept.size).to.equal(1_024);
    expect(kept.has(76), 'the oldest are let go').to.equal(false);
    expect(kept.has(77)).to.equal(true);
    expect(kept.has(1_100)).to.equal(true);
  });
});
