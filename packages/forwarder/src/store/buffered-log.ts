import type { AttemptRecord, LogCall } from './contract';

/** A write the SQL delivery logs buffer, to commit in groups. */
export type LogOp =
  | { op: 'calls'; calls: readonly LogCall[] }
  | { op: 'attempt'; record: AttemptRecord };

/** Milliseconds a log write waits for others to share its commit. */
const FLUSH_DELAY = 50;

/**
 * Longest a pending call's line waits in the buffer for its first attempt, in ms, where a log
 * holds lines (PostgreSQL's). A line written with its attempts is one insert in its state after
 * them; one written before them is an insert, then an update per flush that brings attempts,
 * which costs a PostgreSQL log more, its server most (bench/forwarder-log.mjs). A forwarder whose
 * deliveries lag its acceptance (a burst, a slow receiver) would otherwise write nearly every line
 * twice. Reads never wait for it: a read commits the whole buffer first. The SQLite log does not
 * hold: there holding cost CPU and saved nothing. 5 s rather than 1, because under a burst
 * deliveries lag acceptance by more than a second (bench/README.md has the figures).
 */
export const HOLD_MS = 5000;

/** Most lines held back for their attempts at once; past it the oldest are written pending. */
export const HOLD_LINES = 20_000;

/**
 * Most lines (calls and attempts) a timed flush writes in one commit; the rest follow in the next
 * turns of the event loop, so that a burst (an audience sync of 300,000 members) never holds
 * the event loop, or memory, for one huge commit. A flush a read asks for writes everything.
 */
export const MAX_FLUSH_LINES = 1000;

/**
 * Buffered calls: `open` counts their pending calls no attempt has come for yet; attempts on them
 * that arrive while they wait are kept here, in order, to be written after them.
 */
interface CallsEntry {
  readonly op: 'calls';
  readonly calls: readonly LogCall[];
  readonly at: number;
  open: number;
  attempts: AttemptRecord[] | undefined;
}

type Buffered = CallsEntry | { op: 'attempt'; record: AttemptRecord };

/** A buffered pending call, by its key: the entry it is in, and whether an attempt came for it. */
interface Waiting {
  readonly entry: CallsEntry;
  attempted: boolean;
}

/**
 * Values by source and messageId, in a map per source: a lookup hashes strings the call already
 * holds instead of a key string made for it (three per call: held, attempted, written).
 */
class BySourceAndId<T> {
  private readonly bySource = new Map<string, Map<string, T>>();

  get(source: string, messageId: string): T | undefined {
    return this.bySource.get(source)?.get(messageId);
  }

  set(source: string, messageId: string, value: T): void {
    let ids = this.bySource.get(source);
    if (ids === undefined) this.bySource.set(source, (ids = new Map()));
    ids.set(messageId, value);
  }

  delete(source: string, messageId: string): void {
    this.bySource.get(source)?.delete(messageId);
  }
}

/**
 * What the SQLite and PostgreSQL delivery logs share: every write is buffered and committed with
 * the others of the next 50 ms, off the ingestion and delivery paths. With `holdMs`, a pending
 * call waits up to that long for its first attempt, so that its line is written once, finished,
 * and the lines keep the order the calls came in (a call waiting holds the calls after it). Each
 * store commits its way.
 */
export abstract class BufferedDeliveryLog {
  private pending: Buffered[] = [];
  /** Pending calls in the buffer, by key, so that their attempts join them. */
  private readonly waiting = new BySourceAndId<Waiting>();
  /** Lines of the calls in the buffer. */
  private heldLines = 0;
  private timer: NodeJS.Timeout | undefined;
  protected closed = false;
  /** True while a timed flush or a drain takes its writes: it takes at most MAX_FLUSH_LINES. */
  private bounded = false;
  /** True while a timed flush takes its writes: calls still waiting for their attempts stay. */
  private timed = false;

  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.bounded = true;
    this.timed = true;
    try {
      void this.flush();
    } finally {
      this.bounded = false;
      this.timed = false;
    }
  };

  /** `holdMs`: how long a pending call may wait for its first attempt (0: not at all). */
  constructor(private readonly holdMs = 0) {}

  add(calls: readonly LogCall[]): void {
    if (this.closed) return;
    const entry: CallsEntry = { op: 'calls', calls, at: Date.now(), open: 0, attempts: undefined };
    if (this.holdMs > 0) this.track(entry);
    this.heldLines += calls.length;
    this.pending.push(entry);
    this.flushSoon();
  }

  /** Its pending calls, so that their attempts join them. */
  private track(entry: CallsEntry): void {
    for (const call of entry.calls) {
      if (call.state !== 'pending') continue;
      entry.open++;
      this.waiting.set(call.source, call.messageId, { entry, attempted: false });
    }
  }

  attempt(record: AttemptRecord): void {
    if (this.closed) return;
    const waiting = this.holdMs > 0 ? this.waiting.get(record.source, record.messageId) : undefined;
    if (waiting === undefined) {
      this.pending.push({ op: 'attempt', record });
    } else {
      const entry = waiting.entry;
      (entry.attempts ??= []).push(record);
      if (!waiting.attempted) {
        waiting.attempted = true;
        entry.open--;
      }
    }
    this.flushSoon();
  }

  /** Commits the buffered writes; failures are logged, never thrown. */
  abstract flush(): void | Promise<void>;

  /**
   * Commits every buffered write before a read, MAX_FLUSH_LINES at a time with turns of the
   * event loop between: a read right after a burst sees it all without blocking the loop.
   */
  protected async drain(): Promise<void> {
    for (;;) {
      let done: void | Promise<void>;
      this.bounded = true;
      try {
        done = this.flush();
      } finally {
        this.bounded = false;
      }
      await done;
      if (this.pending.length === 0 || this.closed) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /**
   * The buffered writes, handed over once, each call followed by the attempts that joined it: all
   * of them, or for a timed flush the first MAX_FLUSH_LINES lines' worth, stopping at the first
   * calls that still wait for an attempt (younger than HOLD_MS, fewer than HOLD_LINES held);
   * attempts on lines written before are taken past them. What stays is flushed later.
   */
  protected take(): LogOp[] {
    clearTimeout(this.timer);
    this.timer = undefined;
    const timed = this.timed;
    const ops: LogOp[] = [];
    const kept: Buffered[] = [];
    const now = Date.now();
    let lines = 0;
    let holding = false;
    for (const item of this.pending) {
      if (this.bounded && lines >= MAX_FLUSH_LINES) {
        kept.push(item);
        continue;
      }
      if (item.op === 'attempt') {
        ops.push(item);
        lines++;
        continue;
      }
      holding ||= timed && item.open > 0 && now - item.at < this.holdMs && this.heldLines <= HOLD_LINES;
      if (holding) {
        kept.push(item);
        continue;
      }
      ops.push(item);
      lines += item.calls.length;
      this.heldLines -= item.calls.length;
      if (item.open > 0 || item.attempts !== undefined) this.untrack(item);
      if (item.attempts !== undefined) {
        for (const record of item.attempts) ops.push({ op: 'attempt', record });
        lines += item.attempts.length;
      }
    }
    this.pending = kept;
    if (kept.length > 0 && !this.closed) {
      // More than one commit's worth: the rest on the next turn; calls waiting: look again soon.
      this.timer = setTimeout(this.onTimer, lines >= MAX_FLUSH_LINES ? 0 : FLUSH_DELAY);
      this.timer.unref();
    }
    return ops;
  }

  /** Its pending calls are no longer in the buffer: their attempts go alone. */
  private untrack(item: CallsEntry): void {
    for (const call of item.calls) {
      if (call.state !== 'pending') continue;
      if (this.waiting.get(call.source, call.messageId)?.entry === item) this.waiting.delete(call.source, call.messageId);
    }
  }

  /** A flush within 50 ms, even with nothing buffered (for writes a store holds back itself). */
  protected flushSoon(): void {
    if (this.closed || this.timer !== undefined) return;
    this.timer = setTimeout(this.onTimer, FLUSH_DELAY);
    this.timer.unref();
  }
}
