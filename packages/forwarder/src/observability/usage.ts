import createDebug from 'debug';
import type { ValidMessage } from '../routing/ingest';
import { eventOf } from '../routing/router';
import { codePoints, dayOf, MAX_EVENT_NAME, MAX_SCHEMA_NAMES, mergeCount, mergeDay } from '../store/usage';
import type { AcceptedMessage, SchemaCount, UsageBatch, UsageDay, UsageStore } from '../store/contract';

const log = createDebug('eventrelay:forwarder');

/** How long counts gather in memory before they are written, in ms. */
export const USAGE_FLUSH_MS = 1000;

/** What the counting needs of the forwarder. */
export interface UsageHost {
  /** The store's counts, once it is open. */
  store(): UsageStore | undefined;
  now(): number;
  /** Counts could not be written (once per run of failures; they are kept and written with the next). */
  onError(error: Error): void;
  /** Each count as it is made (for the metrics): `received`, `filtered` (with its rule), `rejected`, `delivered`, `failed`. */
  onCount?(source: string, count: UsageCountName, n: number, rule?: string): void;
}

/** The counts of a source's usage. */
export type UsageCountName = 'received' | 'filtered' | 'rejected' | 'delivered' | 'failed';

interface Counted {
  count: number;
  first: number;
  last: number;
}

interface DayCounts {
  received: number;
  filtered: number;
  rejected: number;
  delivered: number;
  failed: number;
}

/** What one source sent since the last write. */
interface SourceTally {
  readonly sourceId: string;
  source: string;
  /** Track calls by event name (at most MAX_SCHEMA_NAMES), the other types by type. */
  readonly events: Map<string, Counted>;
  readonly types: Map<string, Counted>;
  /** Track calls whose name is not kept (too long, or past MAX_SCHEMA_NAMES). */
  other: Counted | undefined;
  readonly days: Map<number, DayCounts>;
}

function bump(map: Map<string, Counted>, key: string, at: number): void {
  const c = map.get(key);
  if (c === undefined) map.set(key, { count: 1, first: at, last: at });
  else {
    c.count++;
    if (at > c.last) c.last = at;
    if (at < c.first) c.first = at;
  }
}

/**
 * The schema's counts and the usage per day, gathered in memory where calls are accepted and
 * deliveries finish (a few map updates per call), and added to the store in the background
 * about once a second: the ingestion path never waits for them. A read (`events`, `days`) writes
 * what this instance gathered first; other instances' counts are at most about a second behind.
 * Counts a write could not take (the database unreachable) are kept and go with the next one.
 */
export class UsageTally {
  private tallies = new Map<string, SourceTally>();
  /**
   * Per source id, the first MAX_SCHEMA_NAMES track event names this instance wrote: such a name
   * keeps its own row in a window that a flood of new names filled, so that a write key sending
   * thousands of made-up names cannot stop the counts of the source's real events.
   */
  private readonly written = new Map<string, Set<string>>();
  /** Counts of writes that failed, merged, for the next write. */
  private unsent: { events: Map<string, SchemaCount>; days: Map<string, UsageDay>; names: Map<string, number> } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private failing = false;
  private closed = false;

  constructor(private readonly host: UsageHost) {}

  private tally(sourceId: string, source: string): SourceTally {
    let t = this.tallies.get(sourceId);
    if (t === undefined) {
      t = { sourceId, source, events: new Map(), types: new Map(), other: undefined, days: new Map() };
      this.tallies.set(sourceId, t);
      this.soon();
    }
    return t;
  }

  private day(t: SourceTally, at: number): DayCounts {
    const day = dayOf(at);
    let d = t.days.get(day);
    if (d === undefined) t.days.set(day, (d = { received: 0, filtered: 0, rejected: 0, delivered: 0, failed: 0 }));
    return d;
  }

  /** The calls of one ingestion request, as stored: those the source sent before (`repeated`) are not counted again. */
  accepted(sourceId: string | undefined, accepted: readonly AcceptedMessage[], calls: readonly ValidMessage[] | undefined, repeated: readonly boolean[]): void {
    const first = accepted[0];
    if (sourceId === undefined || first === undefined || this.closed) return;
    const at = first.receivedAt;
    const t = this.tally(sourceId, first.source);
    const day = this.day(t, at);
    let received = 0;
    for (let i = 0; i < accepted.length; i++) {
      if (repeated[i] === true) continue;
      received++;
      const filtered = accepted[i]!.filtered;
      if (filtered !== undefined) {
        day.filtered++;
        this.host.onCount?.(t.source, 'filtered', 1, filtered.rule);
      }
      const call = calls?.[i];
      if (call === undefined) continue;
      if (call.type !== 'track') {
        bump(t.types, call.type, at);
        continue;
      }
      const event = eventOf(call);
      const known = event === undefined ? undefined : t.events.get(event);
      if (known !== undefined) {
        known.count++;
        if (at > known.last) known.last = at;
      } else if (event !== undefined && this.keeps(t, event)) {
        t.events.set(event, { count: 1, first: at, last: at });
      } else if (t.other === undefined) t.other = { count: 1, first: at, last: at };
      else {
        t.other.count++;
        if (at > t.other.last) t.other.last = at;
      }
    }
    day.received += received;
    if (received > 0) this.host.onCount?.(t.source, 'received', received);
  }

  /** Whether a name new to this window gets its own row: room left, or a name written before (see `written`). */
  private keeps(t: SourceTally, event: string): boolean {
    if (codePoints(event, MAX_EVENT_NAME) > MAX_EVENT_NAME) return false;
    return t.events.size < MAX_SCHEMA_NAMES || this.written.get(t.sourceId)?.has(event) === true;
  }

  /** Calls the ingestion API refused. */
  refused(sourceId: string | undefined, source: string, count: number, at: number): void {
    if (sourceId === undefined || count === 0 || this.closed) return;
    this.day(this.tally(sourceId, source), at).rejected += count;
    this.host.onCount?.(source, 'rejected', count);
  }

  /** A delivery of a call delivered or given up. */
  finished(sourceId: string | undefined, source: string, status: 'delivered' | 'failed', at: number): void {
    if (sourceId === undefined || this.closed) return;
    this.day(this.tally(sourceId, source), at)[status]++;
    this.host.onCount?.(source, status, 1);
  }

  private soon(): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, USAGE_FLUSH_MS);
    this.timer.unref();
  }

  /** What was gathered, as the store takes it; the tallies start again empty. */
  private take(): UsageBatch {
    const tallies = this.tallies;
    this.tallies = new Map();
    const events: SchemaCount[] = [];
    const days: UsageDay[] = [];
    for (const t of tallies.values()) {
      const row = (type: string, event: string, c: Counted): SchemaCount => ({
        sourceId: t.sourceId,
        source: t.source,
        type,
        event,
        count: c.count,
        firstSeen: c.first,
        lastSeen: c.last,
      });
      for (const [type, c] of t.types) events.push(row(type, '', c));
      let written = this.written.get(t.sourceId);
      if (written === undefined) this.written.set(t.sourceId, (written = new Set()));
      for (const [event, c] of t.events) {
        events.push(row('track', event, c));
        if (written.size < MAX_SCHEMA_NAMES) written.add(event);
      }
      if (t.other !== undefined) events.push(row('track', '', t.other));
      for (const [day, d] of t.days) days.push({ sourceId: t.sourceId, source: t.source, day, ...d });
    }
    const unsent = this.unsent;
    this.unsent = undefined;
    if (unsent === undefined) return { events, days };
    return { events: [...unsent.events.values(), ...events], days: [...unsent.days.values(), ...days] };
  }

  /**
   * Keeps a batch that could not be written for the next write, merged: at most MAX_SCHEMA_NAMES
   * names per source (the others in its unnamed track row, as the store would count them), so that
   * a long outage keeps memory bounded.
   */
  private keep(batch: UsageBatch): void {
    const unsent = (this.unsent ??= { events: new Map(), days: new Map(), names: new Map() });
    for (const given of batch.events) {
      let c = given;
      let k = `${c.sourceId}\u0000${c.type}\u0000${c.event}`;
      if (c.type === 'track' && c.event !== '' && !unsent.events.has(k)) {
        const names = unsent.names.get(c.sourceId) ?? 0;
        if (names >= MAX_SCHEMA_NAMES) {
          c = { ...c, event: '' };
          k = `${c.sourceId}\u0000track\u0000`;
        } else unsent.names.set(c.sourceId, names + 1);
      }
      const before = unsent.events.get(k);
      unsent.events.set(k, before === undefined ? c : mergeCount(before, c));
    }
    for (const d of batch.days) {
      const k = `${d.sourceId}\u0000${d.day}`;
      const before = unsent.days.get(k);
      unsent.days.set(k, before === undefined ? d : mergeDay(before, d));
    }
  }

  /** Writes what was gathered (after the writes before it); resolves once written or kept for the next write. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.writing = this.writing.then(async () => {
      const store = this.host.store();
      if (store === undefined) return;
      const batch = this.take();
      if (batch.events.length === 0 && batch.days.length === 0) return;
      try {
        await store.add(batch);
        this.failing = false;
      } catch (error) {
        this.keep(batch);
        log('usage counts could not be written (kept for the next write): %s', (error as Error).message);
        if (!this.failing) this.host.onError(new Error(`The counts of what sources send could not be written (kept for the next write): ${(error as Error).message}`));
        this.failing = true;
        this.soon();
      }
    });
    return this.writing;
  }

  /** A source's counts over every instance, this one's written first. */
  async events(sourceId: string): Promise<SchemaCount[]> {
    await this.flush();
    return this.host.store()?.events(sourceId) ?? [];
  }

  /** Sources' usage per day over every instance, this one's written first. */
  async days(sourceIds: readonly string[], fromDay: number, toDay: number): Promise<UsageDay[]> {
    await this.flush();
    return this.host.store()?.days(sourceIds, fromDay, toDay) ?? [];
  }

  /** Writes what is left and stops counting. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    clearTimeout(this.timer);
  }
}
