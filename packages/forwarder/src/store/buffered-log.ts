import type { AttemptRecord, LogCall } from './delivery-log';

/** A write the SQL delivery logs buffer, to commit in groups. */
export type LogOp =
  | { op: 'calls'; calls: readonly LogCall[] }
  | { op: 'attempt'; record: AttemptRecord };

/** Milliseconds a log write waits for others to share its commit. */
const FLUSH_DELAY = 50;

/**
 * What the SQLite and PostgreSQL delivery logs share: every write is buffered and committed with
 * the others of the next 50 ms, off the ingestion and delivery paths. Each store commits its way.
 */
export abstract class BufferedDeliveryLog {
  private pending: LogOp[] = [];
  private timer: NodeJS.Timeout | undefined;
  protected closed = false;

  add(calls: readonly LogCall[]): void {
    this.queue({ op: 'calls', calls });
  }

  attempt(record: AttemptRecord): void {
    this.queue({ op: 'attempt', record });
  }

  /** Commits the buffered writes; failures are logged, never thrown. */
  abstract flush(): void | Promise<void>;

  /** The buffered writes, handed over once (the timer is cleared). */
  protected take(): LogOp[] {
    clearTimeout(this.timer);
    this.timer = undefined;
    const ops = this.pending;
    this.pending = [];
    return ops;
  }

  /** A flush within 50 ms, even with nothing buffered (for writes a store holds back itself). */
  protected flushSoon(): void {
    if (this.closed || this.timer !== undefined) return;
    this.timer = setTimeout(() => void this.flush(), FLUSH_DELAY);
    this.timer.unref();
  }

  private queue(op: LogOp): void {
    if (this.closed) return;
    this.pending.push(op);
    this.flushSoon();
  }
}
