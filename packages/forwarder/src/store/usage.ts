import type { SchemaCount, UsageBatch, UsageDay, UsageStore } from './contract';

/**
 * What each source sends and its usage per day: the rules every store applies to the counts the
 * forwarder adds (`UsageStore`), and the store in process memory.
 */

/** Track event names kept per source; a new name past them is counted in the source's `track` row with the event ''. */
export const MAX_SCHEMA_NAMES = 2000;

/**
 * Longest track event name kept, in characters (code points): a longer one is counted in the
 * source's `track` row with the event '' (and a schema control cannot name it). 500 characters
 * of up to 4 bytes each stay within what a PostgreSQL index entry may hold.
 */
export const MAX_EVENT_NAME = 500;

/** How many days of usage are kept (13 months and a bit). */
export const USAGE_DAYS_KEPT = 400;

export const DAY_MS = 86_400_000;

/** The UTC day of an epoch-ms time, as days since the epoch. */
export function dayOf(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

/** A day as `YYYY-MM-DD`. */
export function dayText(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/** The length of a text in code points, counted only as far as `limit` + 1. */
export function codePoints(text: string, limit: number): number {
  if (text.length <= limit) return text.length;
  let count = 0;
  for (let i = 0; i < text.length && count <= limit; i++) {
    const unit = text.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

function key(type: string, event: string): string {
  return `${type}\u0000${event}`;
}

/** `a` and `b` (of one key) as one count. */
export function mergeCount(a: SchemaCount, b: SchemaCount): SchemaCount {
  return {
    sourceId: a.sourceId,
    source: b.source,
    type: a.type,
    event: a.event,
    count: a.count + b.count,
    firstSeen: Math.min(a.firstSeen, b.firstSeen),
    lastSeen: Math.max(a.lastSeen, b.lastSeen),
  };
}

/** `a` and `b` (of one source and day) as one. */
export function mergeDay(a: UsageDay, b: UsageDay): UsageDay {
  return {
    sourceId: a.sourceId,
    source: b.source,
    day: a.day,
    received: a.received + b.received,
    filtered: a.filtered + b.filtered,
    rejected: a.rejected + b.rejected,
    delivered: a.delivered + b.delivered,
    failed: a.failed + b.failed,
  };
}

/**
 * The rows of a batch a store writes: names it knows and new ones while their source has fewer than
 * MAX_SCHEMA_NAMES, the others folded into their source's `track` row with the event ''. `known`
 * tells a name the store has; `kept` how many named track rows a source has now.
 */
export function capEvents(
  events: readonly SchemaCount[],
  known: (count: SchemaCount) => boolean,
  kept: (sourceId: string) => number,
): SchemaCount[] {
  const out = new Map<string, SchemaCount>();
  const added = new Map<string, number>();
  const rowKey = (c: SchemaCount) => `${c.sourceId}\u0000${key(c.type, c.event)}`;
  const put = (c: SchemaCount) => {
    const k = rowKey(c);
    const before = out.get(k);
    out.set(k, before === undefined ? c : mergeCount(before, c));
  };
  for (const c of events) {
    // A name written already (or new earlier in this batch) is added to.
    if (c.type !== 'track' || c.event === '' || out.has(rowKey(c)) || known(c)) {
      put(c);
      continue;
    }
    const count = kept(c.sourceId) + (added.get(c.sourceId) ?? 0);
    if (count < MAX_SCHEMA_NAMES) {
      added.set(c.sourceId, (added.get(c.sourceId) ?? 0) + 1);
      put(c);
    } else {
      put({ ...c, event: '' });
    }
  }
  return [...out.values()];
}

/**
 * The counts in process memory: for the memory store and custom stores that keep none. `live`
 * gives the ids of the sources the store has, for `prune`.
 */
export class MemoryUsageStore implements UsageStore {
  private readonly counts = new Map<string, Map<string, SchemaCount>>();
  private readonly perDay = new Map<string, Map<number, UsageDay>>();

  constructor(private readonly live: () => ReadonlySet<string> | undefined = () => undefined) {}

  async add(batch: UsageBatch): Promise<void> {
    const rows = capEvents(
      batch.events,
      (c) => this.counts.get(c.sourceId)?.has(key(c.type, c.event)) === true,
      (sourceId) => {
        let n = 0;
        for (const c of this.counts.get(sourceId)?.values() ?? []) if (c.type === 'track' && c.event !== '') n++;
        return n;
      },
    );
    for (const c of rows) {
      let bySource = this.counts.get(c.sourceId);
      if (bySource === undefined) this.counts.set(c.sourceId, (bySource = new Map()));
      const k = key(c.type, c.event);
      const before = bySource.get(k);
      bySource.set(k, before === undefined ? c : mergeCount(before, c));
    }
    for (const d of batch.days) {
      let bySource = this.perDay.get(d.sourceId);
      if (bySource === undefined) this.perDay.set(d.sourceId, (bySource = new Map()));
      const before = bySource.get(d.day);
      bySource.set(d.day, before === undefined ? d : mergeDay(before, d));
    }
  }

  async events(sourceId: string): Promise<SchemaCount[]> {
    return [...(this.counts.get(sourceId)?.values() ?? [])];
  }

  async days(sourceIds: readonly string[], fromDay: number, toDay: number): Promise<UsageDay[]> {
    const out: UsageDay[] = [];
    for (const id of sourceIds) {
      for (const d of this.perDay.get(id)?.values() ?? []) if (d.day >= fromDay && d.day <= toDay) out.push(d);
    }
    return out.sort((a, b) => a.day - b.day);
  }

  async prune(beforeDay: number): Promise<number> {
    const live = this.live();
    let removed = 0;
    for (const [id, events] of this.counts) {
      if (live !== undefined && !live.has(id)) {
        removed += events.size;
        this.counts.delete(id);
      }
    }
    for (const [id, days] of this.perDay) {
      if (live !== undefined && !live.has(id)) {
        removed += days.size;
        this.perDay.delete(id);
        continue;
      }
      for (const day of days.keys()) {
        if (day < beforeDay) {
          days.delete(day);
          removed++;
        }
      }
    }
    return removed;
  }
}
