import { describe, it } from 'mocha';
import { expect } from 'chai';
import { dayOf, MAX_SCHEMA_NAMES } from '../../../src/store/usage';
import type { ForwarderStore, SchemaCount, SourceRecord, UsageDay } from '../../../src/store/contract';
import { T0 } from './contract';
import { useFreshStore } from './fresh-store';

const DAY = dayOf(T0);

function count(sourceId: string, type: string, event: string, n: number, first: number, last = first): SchemaCount {
  return { sourceId, source: `name-${sourceId}`, type, event, count: n, firstSeen: first, lastSeen: last };
}

function usage(sourceId: string, day: number, counts: Partial<UsageDay> = {}): UsageDay {
  return { sourceId, source: `name-${sourceId}`, day, received: 0, filtered: 0, rejected: 0, delivered: 0, failed: 0, ...counts };
}

function record(name: string, id: string): SourceRecord {
  return { name, id, enabled: false, webhooks: undefined, applied: undefined, createdAt: T0, updatedAt: T0 };
}

const byKey = (a: SchemaCount, b: SchemaCount) => (a.type + a.event < b.type + b.event ? -1 : 1);

/**
 * What every store keeps of what sources send and their usage (`store.usage`): counts added up,
 * first and last times kept, a source's names capped, rows by source id, pruned with the source.
 * `create` returns a new, empty store (the suite closes it).
 */
export function usageContract(name: string, create: () => Promise<ForwarderStore>): void {
  describe(`${name} (what sources send, and their usage)`, function () {
    this.timeout(30_000);
    const store = useFreshStore(create);

    it('adds counts up by source, type and event, keeping the first and the last time', async () => {
      await store.usage.add({ events: [count('s1', 'track', 'Order', 2, T0 + 10, T0 + 20), count('s1', 'identify', '', 1, T0 + 15)], days: [] });
      await store.usage.add({ events: [count('s1', 'track', 'Order', 3, T0 + 5, T0 + 8), count('s2', 'track', 'Order', 7, T0)], days: [] });
      expect((await store.usage.events('s1')).sort(byKey)).to.deep.equal([count('s1', 'identify', '', 1, T0 + 15), count('s1', 'track', 'Order', 5, T0 + 5, T0 + 20)]);
      expect(await store.usage.events('s2')).to.deep.equal([count('s2', 'track', 'Order', 7, T0)]);
      expect(await store.usage.events('none')).to.deep.equal([]);
    });

    it('keeps event names that differ in case, spaces and script apart, and one of 500 characters', async () => {
      const names = ['Order', 'order', 'Order ', 'Заказ', '注文', '<img src=x onerror=alert(1)>', 'é'.repeat(500)];
      await store.usage.add({ events: names.map((n) => count('s1', 'track', n, 1, T0)), days: [] });
      expect((await store.usage.events('s1')).map((c) => c.event).sort()).to.deep.equal([...names].sort());
    });

    it(`lists at most ${MAX_SCHEMA_NAMES} names per source and counts the rest in its track row with no name`, async () => {
      const names = Array.from({ length: MAX_SCHEMA_NAMES - 1 }, (_, i) => count('s1', 'track', `e${i}`, 1, T0));
      await store.usage.add({ events: names, days: [] });
      // One more name fits; the next two (one of them twice) do not; a known name is still added to.
      await store.usage.add({ events: [count('s1', 'track', 'last', 1, T0 + 1), count('s1', 'track', 'over-1', 2, T0 + 2), count('s1', 'track', 'e0', 4, T0 + 3)], days: [] });
      await store.usage.add({ events: [count('s1', 'track', 'over-2', 1, T0 + 4), count('s1', 'track', 'over-1', 1, T0 + 5), count('s2', 'track', 'other source', 1, T0)], days: [] });
      const rows = await store.usage.events('s1');
      expect(rows.filter((c) => c.event !== '')).to.have.length(MAX_SCHEMA_NAMES);
      expect(rows.find((c) => c.event === 'e0')!.count).to.equal(5);
      expect(rows.find((c) => c.event === 'last')).to.deep.include({ count: 1 });
      expect(rows.find((c) => c.event === '')).to.deep.equal(count('s1', 'track', '', 4, T0 + 2, T0 + 5));
      expect(await store.usage.events('s2')).to.have.length(1);
    });

    it('adds usage up per source and day, and reads a range of days', async () => {
      await store.usage.add({ events: [], days: [usage('s1', DAY, { received: 5, filtered: 2 }), usage('s1', DAY + 1, { received: 1, delivered: 1 })] });
      await store.usage.add({ events: [], days: [usage('s1', DAY, { received: 3, rejected: 4, delivered: 2, failed: 1 }), usage('s2', DAY, { received: 9 })] });
      expect(await store.usage.days(['s1'], DAY, DAY + 1)).to.deep.equal([
        usage('s1', DAY, { received: 8, filtered: 2, rejected: 4, delivered: 2, failed: 1 }),
        usage('s1', DAY + 1, { received: 1, delivered: 1 }),
      ]);
      expect(await store.usage.days(['s1', 's2'], DAY, DAY)).to.have.deep.members([usage('s1', DAY, { received: 8, filtered: 2, rejected: 4, delivered: 2, failed: 1 }), usage('s2', DAY, { received: 9 })]);
      expect(await store.usage.days(['s1'], DAY + 2, DAY + 9)).to.deep.equal([]);
      expect(await store.usage.days([], DAY, DAY)).to.deep.equal([]);
    });

    it('prunes the rows of sources it no longer has, and days before the one given', async () => {
      await store.setup.write([{ op: 'create', source: record('web', 's1') }, { op: 'create', source: record('gone', 's2') }]);
      await store.usage.add({ events: [count('s1', 'track', 'A', 1, T0), count('s2', 'track', 'B', 1, T0)], days: [usage('s1', DAY - 500, { received: 1 }), usage('s1', DAY, { received: 2 }), usage('s2', DAY, { received: 3 })] });
      await store.setup.write([{ op: 'delete', name: 'gone', at: T0, reason: 'deleted' }]);
      expect(await store.usage.prune(DAY - 400)).to.equal(3);
      expect(await store.usage.events('s1')).to.have.length(1);
      expect(await store.usage.events('s2')).to.deep.equal([]);
      expect(await store.usage.days(['s1', 's2'], DAY - 1000, DAY)).to.deep.equal([usage('s1', DAY, { received: 2 })]);
    });
  });
}
