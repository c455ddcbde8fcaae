import { describe, it } from 'mocha';
import { expect } from 'chai';
import { UsageTally } from '../../../src/observability/usage';
import type { UsageCountName } from '../../../src/observability/usage';
import { routeMessage } from '../../../src/routing/router';
import { parseIngestBody } from '../../../src/routing/ingest';
import type { ValidMessage } from '../../../src/routing/ingest';
import { compileRules } from '../../../src/schema-rules';
import { dayOf, MAX_EVENT_NAME, MAX_SCHEMA_NAMES, MemoryUsageStore } from '../../../src/store/usage';
import type { AcceptedMessage, UsageBatch, UsageStore } from '../../../src/store/contract';

const NOW = Date.parse('2026-05-01T10:00:00.000Z');
const DAY = dayOf(NOW);

function request(batch: Record<string, unknown>[], at = NOW): { accepted: AcceptedMessage[]; calls: ValidMessage[] } {
  const parsed = parseIngestBody('batch', { batch: batch.map((m, i) => ({ userId: 'u1', messageId: `m${i}`, ...m })) }, at);
  if (!parsed.ok) throw new Error(parsed.message);
  const route = { name: 'web', id: 'id-web', webhooksOn: true, rules: compileRules({ blockedEvents: ['Spam'], allowedEvents: null, blockedTypes: [] }, undefined) };
  return { accepted: parsed.messages.map((m) => routeMessage(route, m, at)), calls: [...parsed.messages] };
}

function setup(store: UsageStore = new MemoryUsageStore()) {
  const errors: Error[] = [];
  const counts: [string, UsageCountName, number, string | undefined][] = [];
  const tally = new UsageTally({
    store: () => store,
    now: () => NOW,
    onError: (error) => errors.push(error),
    onCount: (source, count, n, rule) => counts.push([source, count, n, rule]),
  });
  return { tally, store, errors, counts };
}

describe('UsageTally (counted in memory, written in the background)', () => {
  it('counts types and track event names, once per messageId, and the usage of the day', async () => {
    const { tally, counts } = setup();
    const first = request([{ type: 'track', event: 'Order' }, { type: 'track', event: 'Order' }, { type: 'track', event: 'Spam' }, { type: 'identify' }]);
    tally.accepted('id-web', first.accepted, first.calls, [false, false, false, false]);
    // A batch sent again: its repeats are acknowledged, not counted again.
    const again = request([{ type: 'track', event: 'Order' }, { type: 'page' }], NOW + 5);
    tally.accepted('id-web', again.accepted, again.calls, [true, false]);
    tally.refused('id-web', 'web', 2, NOW + 6);
    tally.finished('id-web', 'web', 'delivered', NOW + 7);
    tally.finished('id-web', 'web', 'failed', NOW + 8);
    const events = await tally.events('id-web');
    const shown = events.map((c) => [c.type, c.event, c.count, c.firstSeen - NOW, c.lastSeen - NOW]).sort();
    expect(shown).to.deep.equal([
      ['identify', '', 1, 0, 0],
      ['page', '', 1, 5, 5],
      ['track', 'Order', 2, 0, 0],
      ['track', 'Spam', 1, 0, 0],
    ]);
    expect(await tally.days(['id-web'], DAY, DAY)).to.deep.equal([
      { sourceId: 'id-web', source: 'web', day: DAY, received: 5, filtered: 1, rejected: 2, delivered: 1, failed: 1 },
    ]);
    expect(counts).to.deep.equal([
      ['web', 'filtered', 1, 'blocked_event'],
      ['web', 'received', 4, undefined],
      ['web', 'received', 1, undefined],
      ['web', 'rejected', 2, undefined],
      ['web', 'delivered', 1, undefined],
      ['web', 'failed', 1, undefined],
    ]);
  });

  it(`counts a name over ${MAX_EVENT_NAME} characters in the source's unnamed track row`, async () => {
    const { tally } = setup();
    const long = request([{ type: 'track', event: 'x'.repeat(MAX_EVENT_NAME + 1) }, { type: 'track', event: 'y'.repeat(MAX_EVENT_NAME) }]);
    tally.accepted('id-web', long.accepted, long.calls, [false, false]);
    const events = await tally.events('id-web');
    expect(events.map((c) => [c.event.length, c.count]).sort()).to.deep.equal([[0, 1], [MAX_EVENT_NAME, 1]]);
  });

  it('keeps counts a write could not take and writes them with the next one, reporting the failure once', async () => {
    const inner = new MemoryUsageStore();
    let down = true;
    const store: UsageStore = {
      add: async (batch: UsageBatch) => {
        if (down) throw new Error('database unreachable');
        await inner.add(batch);
      },
      events: (id) => inner.events(id),
      days: (ids, from, to) => inner.days(ids, from, to),
      prune: (day) => inner.prune(day),
    };
    const { tally, errors } = setup(store);
    const one = request([{ type: 'track', event: 'Order' }]);
    tally.accepted('id-web', one.accepted, one.calls, [false]);
    await tally.flush();
    tally.accepted('id-web', one.accepted, one.calls, [false]);
    await tally.flush();
    expect(errors.map((e) => e.message)).to.deep.equal(['The counts of what sources send could not be written (kept for the next write): database unreachable']);
    down = false;
    expect((await tally.events('id-web'))[0]).to.deep.include({ event: 'Order', count: 2 });
    expect((await tally.days(['id-web'], DAY, DAY))[0]).to.deep.include({ received: 2 });
    await tally.close();
  });

  it(`keeps at most ${MAX_SCHEMA_NAMES} names per source while writes fail, the others counted in its unnamed track row`, async () => {
    const inner = new MemoryUsageStore();
    let down = true;
    const written: UsageBatch[] = [];
    const store: UsageStore = {
      add: async (batch: UsageBatch) => {
        if (down) throw new Error('database unreachable');
        written.push(batch);
        await inner.add(batch);
      },
      events: (id) => inner.events(id),
      days: (ids, from, to) => inner.days(ids, from, to),
      prune: (day) => inner.prune(day),
    };
    const { tally } = setup(store);
    for (let window = 0; window < 3; window++) {
      const names = request(Array.from({ length: 1000 }, (_, i) => ({ type: 'track', event: `w${window}-e${i}` })));
      tally.accepted('id-web', names.accepted, names.calls, names.accepted.map(() => false));
      await tally.flush();
    }
    down = false;
    const events = await tally.events('id-web');
    // What was kept in memory meanwhile: the names, and one row for the rest.
    expect(written[0]!.events).to.have.length(MAX_SCHEMA_NAMES + 1);
    expect(events.filter((c) => c.event !== '')).to.have.length(MAX_SCHEMA_NAMES);
    expect(events.find((c) => c.event === '')!.count).to.equal(3000 - MAX_SCHEMA_NAMES);
    expect(events.reduce((sum, c) => sum + c.count, 0)).to.equal(3000);
  });

  it('counts nothing for a source without an id (not stored yet) and after close', async () => {
    const { tally, store } = setup();
    const one = request([{ type: 'identify' }]);
    tally.accepted(undefined, one.accepted, one.calls, [false]);
    await tally.close();
    tally.accepted('id-web', one.accepted, one.calls, [false]);
    tally.refused('id-web', 'web', 1, NOW);
    await tally.flush();
    expect(await store.events('id-web')).to.deep.equal([]);
    expect(await store.days(['id-web'], DAY, DAY)).to.deep.equal([]);
  });
});
