import type { AttemptRecord, LogCall } from './delivery-log';

/** A write the SQL delivery logs buffer, to commit in groups. */
export type LogOp =
  | { op: 'calls'; calls: readonly LogCall[] }
  | { op: 'attempt'; record: AttemptRecord };

/** Milliseconds a log write waits for others to share its commit. */
const FLUSH_DELAY = 50;

/**
 * Most lines (calls and attempts) a timed flush writes in one commit; the rest follow in the next
 * turns of the event loop, so that a burst (an audience sync of 300,000 members) never holds
 * the event loop, or memory, for one huge commit. A flush a read asks for writes everything.
 */
export const MAX_FLUSH_LINES = 1000;

/**
 * What the SQLite and PostgreSQL delivery logs share: every write is buffered and committed with
 * the others of the next 50 ms, off the ingestion and delivery paths. Each store commits its way.
 */
export abstract class BufferedDeliveryLog {
  private pending: LogOp[] = [];
  private timer: NodeJS.Timeout | undefined;
  protected closed = false;
  /** True while a timed flush takes its writes: it takes at most MAX_FLUSH_LINES. */
  private bounded = false;

  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.bounded = true;
    try {
      void this.flush();
    } finally {
      this.bounded = false;
    }
  };

  add(calls: readonly LogCall[]): void {
    this.queue({ op: 'calls', calls });
  }

  attempt(record: AttemptRecord): void {
    this.queue({ op: 'attempt', record });
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
   * The buffered writes, handed over once (the timer is cleared): all of them, or for a timed
   * flush the first MAX_FLUSH_LINES lines' worth, the rest flushed on the next turn.
   */
  protected take(): LogOp[] {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.bounded) {
      const ops = this.pending;
      this.pending = [];
      return ops;
    }
    let lines = 0;
    let count = 0;
    while (count < this.pending.length && lines < MAX_FLUSH_LINES) {
      const op = this.pending[count++]!;
      lines += op.op === 'calls' ? op.calls.length : 1;
    }
    const ops = this.pending.splice(0, count);
    if (this.pending.length > 0 && !this.closed) {
      this.timer = setTimeout(this.onTimer, 0);
      this.timer.unref();
    }
    return ops;
  }

  /** A flush within 50 ms, even with nothing buffered (for writes a store holds back itself). */
  protected flushSoon(): void {
    if (this.closed || this.timer !== undefined) return;
    this.timer = setTimeout(this.onTimer, FLUSH_DELAY);
    this.timer.unref();
  }

  private queue(op: LogOp): void {
    if (this.closed) return;
    this.pending.push(op);
    this.flushSoon();
  }
}
