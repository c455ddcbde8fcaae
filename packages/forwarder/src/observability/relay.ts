import createDebug from 'debug';
import { LIVE_EVENTS } from './stream';
import type { LiveEvent } from './stream';

const log = createDebug('eventrelay:forwarder');

/** PostgreSQL refuses a notification payload of 8000 bytes or more. */
export const MAX_PAYLOAD_BYTES = 7999;
/** Events waiting to be sent: past either bound (count, memory), new ones are dropped (and counted), never kept. */
const MAX_QUEUED = 1000;
const MAX_QUEUED_MEMORY = 2 * 1024 * 1024;
/** Events per statement. */
const MAX_BATCH = 200;

/** How events leave this instance. */
export interface RelayTransport {
  relay(payloads: readonly string[]): Promise<void>;
}

/** What the relay did since it started: for tests and debugging. */
export interface RelayCounts {
  /** Events sent to the other instances. */
  relayed: number;
  /** `accepted` events sent without their body, which did not fit in a notification. */
  omitted: number;
  /** Events not sent: too large even without a body, a backlog full, or a send that failed. */
  dropped: number;
  /** Events of other instances received. */
  received: number;
}

interface Queued {
  readonly payload: string;
  /** What it holds in memory: two bytes per UTF-16 unit. */
  readonly size: number;
}

/** An event another instance relayed, ready for this instance's subscribers. */
export interface RelayedEvent {
  readonly event: LiveEvent;
  readonly source: string;
  readonly json: string;
}

/** Whether a payload fits in a notification. A UTF-16 unit is at most 3 bytes in UTF-8: most need no count. */
function fits(payload: string): boolean {
  return payload.length * 3 <= MAX_PAYLOAD_BYTES || Buffer.byteLength(payload) <= MAX_PAYLOAD_BYTES;
}

/**
 * The live stream's events between instances: sent only while another instance has a subscriber
 * (it announces itself), batched into one statement per turn of the event loop, one send at a
 * time. A debugger must never slow ingestion nor hold memory: while a send runs, events wait, up
 * to 1000 of them (2 MiB); past that they are dropped and counted. Each event is framed as
 * `[owner, seq, event, source]` and its JSON on the next line: the receiver writes the JSON to its
 * subscribers as it came, and skips its own (PostgreSQL delivers a notification to its sender too).
 */
export class LiveRelay {
  readonly counts: RelayCounts = { relayed: 0, omitted: 0, dropped: 0, received: 0 };
  /** Makes every payload unique: PostgreSQL folds identical notifications of one transaction into one. */
  private seq = 0;
  private queue: Queued[] = [];
  private queuedMemory = 0;
  private scheduled = false;
  private sending: Promise<void> | undefined;
  /** The other instances that have subscribers, and until when (epoch ms). */
  private readonly watchers = new Map<string, number>();
  private closed = false;
  /** The last send failed: the next failures are not logged again, one line per outage. */
  private failing = false;

  constructor(
    private readonly owner: string,
    private readonly transport: RelayTransport,
    private readonly now: () => number,
  ) {}

  /** True while another instance has a subscriber. */
  get wanted(): boolean {
    if (this.watchers.size === 0) return false;
    const now = this.now();
    for (const [owner, until] of this.watchers) {
      if (until > now) return true;
      this.watchers.delete(owner);
    }
    return false;
  }

  /**
   * Another instance has subscribers until `until` (epoch ms), or none any more (0). A time never
   * moves back: a reading older than an announcement only holds until it runs out.
   */
  watcher(owner: string, until: number): void {
    if (owner === this.owner) return;
    if (until <= 0) this.watchers.delete(owner);
    else this.watchers.set(owner, Math.max(until, this.watchers.get(owner) ?? 0));
  }

  /** Queues an event for the other instances; an `accepted` event too large for a notification goes without its body. */
  send(event: LiveEvent, source: string, data: object, json: string): void {
    if (this.closed) return;
    let payload = this.frame(event, source, json);
    let fit = fits(payload);
    if (!fit && event === 'accepted') {
      // The instance that accepted the call shows it whole; the others say it was left out.
      payload = this.frame(event, source, JSON.stringify({ ...data, body: null, bodyOmitted: true }));
      fit = fits(payload);
      if (fit) this.counts.omitted++;
    }
    const size = payload.length * 2;
    if (!fit || this.queue.length >= MAX_QUEUED || this.queuedMemory + size > MAX_QUEUED_MEMORY) {
      this.counts.dropped++;
      return;
    }
    this.queue.push({ payload, size });
    this.queuedMemory += size;
    this.schedule();
  }

  /** A payload received on the relay channel: the event, or undefined for this instance's own and for what is not an event. */
  receive(payload: string): RelayedEvent | undefined {
    const cut = payload.indexOf('\n');
    if (cut < 0) return undefined;
    let header: unknown;
    try {
      header = JSON.parse(payload.slice(0, cut));
    } catch {
      return undefined;
    }
    if (!Array.isArray(header) || header.length !== 4) return undefined;
    const [owner, , event, source] = header as unknown[];
    if (owner === this.owner || typeof owner !== 'string' || typeof source !== 'string') return undefined;
    if (!(LIVE_EVENTS as readonly unknown[]).includes(event)) return undefined;
    const json = payload.slice(cut + 1);
    // Written into a Server-Sent Events line as it is: a line break would end the event early.
    if (json.includes('\n') || json.includes('\r')) return undefined;
    this.counts.received++;
    return { event: event as LiveEvent, source, json };
  }

  /** Stops sending; waits for a send in flight. What is still queued is dropped. */
  async close(): Promise<void> {
    this.closed = true;
    await this.sending;
    this.counts.dropped += this.queue.length;
    this.queue = [];
    this.queuedMemory = 0;
  }

  private frame(event: LiveEvent, source: string, json: string): string {
    return `${JSON.stringify([this.owner, ++this.seq, event, source])}\n${json}`;
  }

  private schedule(): void {
    if (this.scheduled || this.sending !== undefined) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.sending = this.flush().finally(() => {
        this.sending = undefined;
        if (this.queue.length > 0 && !this.closed) this.schedule();
      });
    });
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH);
    for (const q of batch) this.queuedMemory -= q.size;
    if (batch.length === 0) return;
    try {
      await this.transport.relay(batch.map((q) => q.payload));
      this.counts.relayed += batch.length;
      if (this.failing) log('live stream: relaying to the other instances again');
      this.failing = false;
    } catch (error) {
      this.counts.dropped += batch.length;
      if (!this.failing) log('live stream: events not relayed to the other instances (dropped until it works again): %s', (error as Error).message);
      this.failing = true;
    }
  }
}
