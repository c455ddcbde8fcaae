/**
 * Per-minute totals of the last hour, for the debugger's chart: calls accepted, deliveries
 * delivered and failed, and the queue depth last seen in each minute. In this process only.
 */

const MINUTE = 60_000;
const WINDOW_MINUTES = 60;

export interface TimelinePoint {
  /** Start of the minute, epoch ms. */
  readonly at: number;
  readonly accepted: number;
  readonly delivered: number;
  readonly failed: number;
  /** Last sampled in that minute; null when no sample was taken. */
  readonly queueDepth: number | null;
}

interface Bucket {
  minute: number;
  accepted: number;
  delivered: number;
  failed: number;
  queueDepth: number | null;
}

export class Timeline {
  private readonly buckets: Bucket[] = [];

  private bucket(at: number): Bucket {
    const minute = Math.floor(at / MINUTE);
    let last = this.buckets.at(-1);
    if (last === undefined || last.minute < minute) {
      last = { minute, accepted: 0, delivered: 0, failed: 0, queueDepth: null };
      this.buckets.push(last);
      if (this.buckets.length > WINDOW_MINUTES) this.buckets.shift();
      return last;
    }
    // An event stamped in an earlier minute (clock steps) is counted in the newest bucket.
    return last;
  }

  accepted(at: number, count: number): void {
    this.bucket(at).accepted += count;
  }

  finished(at: number, outcome: 'delivered' | 'failed'): void {
    this.bucket(at)[outcome]++;
  }

  queueDepth(at: number, depth: number): void {
    this.bucket(at).queueDepth = depth;
  }

  /** The last 60 minutes, oldest first, one point per minute (empty minutes included). */
  points(now: number): TimelinePoint[] {
    const current = Math.floor(now / MINUTE);
    const byMinute = new Map(this.buckets.map((b) => [b.minute, b]));
    const out: TimelinePoint[] = [];
    for (let minute = current - WINDOW_MINUTES + 1; minute <= current; minute++) {
      const b = byMinute.get(minute);
      out.push({ at: minute * MINUTE, accepted: b?.accepted ?? 0, delivered: b?.delivered ?? 0, failed: b?.failed ?? 0, queueDepth: b?.queueDepth ?? null });
    }
    return out;
  }
}
