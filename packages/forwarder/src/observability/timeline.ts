/**
 * Per-minute totals of the last hour, for the debugger's chart: calls accepted, deliveries
 * delivered and failed, and the queue depth last seen in each minute. One instance counts what it
 * handled; instances sharing a store exchange their minutes (`minutes()`), which `mergeTimeline`
 * folds into one chart.
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

/** One minute on one instance. */
export interface TimelineMinute {
  /** Minutes since the epoch. */
  readonly minute: number;
  readonly accepted: number;
  readonly delivered: number;
  readonly failed: number;
  readonly queueDepth: number | null;
  /** When `queueDepth` was sampled, epoch ms; null without a sample. */
  readonly queueDepthAt: number | null;
}

interface Bucket {
  minute: number;
  accepted: number;
  delivered: number;
  failed: number;
  queueDepth: number | null;
  queueDepthAt: number | null;
}

export class Timeline {
  private readonly buckets: Bucket[] = [];
  /** Bumped by every change: a shared view is written again when it moved. */
  version = 0;

  private bucket(at: number): Bucket {
    this.version++;
    const minute = Math.floor(at / MINUTE);
    let last = this.buckets.at(-1);
    if (last === undefined || last.minute < minute) {
      last = { minute, accepted: 0, delivered: 0, failed: 0, queueDepth: null, queueDepthAt: null };
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
    const bucket = this.bucket(at);
    bucket.queueDepth = depth;
    bucket.queueDepthAt = at;
  }

  /** The minutes from minute `from` to `to` (minutes since the epoch), both included, that had anything. */
  minutes(from: number, to = Number.MAX_SAFE_INTEGER): TimelineMinute[] {
    return this.buckets.filter((b) => b.minute >= from && b.minute <= to).map((b) => ({ ...b }));
  }

  /** The last 60 minutes, oldest first, one point per minute (empty minutes included). */
  points(now: number): TimelinePoint[] {
    return mergeTimeline([this.buckets], now);
  }
}

/**
 * The last 60 minutes over several instances' minutes, oldest first: accepted, delivered and
 * failed summed per minute; the queue depth (one queue, shared) is the latest sample of the minute.
 */
export function mergeTimeline(views: readonly (readonly TimelineMinute[])[], now: number): TimelinePoint[] {
  const current = Math.floor(now / MINUTE);
  const first = current - WINDOW_MINUTES + 1;
  const sums = new Map<number, { accepted: number; delivered: number; failed: number; queueDepth: number | null; queueDepthAt: number }>();
  for (const view of views) {
    for (const m of view) {
      if (m.minute < first || m.minute > current) continue;
      let sum = sums.get(m.minute);
      if (sum === undefined) {
        sum = { accepted: 0, delivered: 0, failed: 0, queueDepth: null, queueDepthAt: Number.NEGATIVE_INFINITY };
        sums.set(m.minute, sum);
      }
      sum.accepted += m.accepted;
      sum.delivered += m.delivered;
      sum.failed += m.failed;
      if (m.queueDepth !== null && m.queueDepthAt !== null && m.queueDepthAt > sum.queueDepthAt) {
        sum.queueDepth = m.queueDepth;
        sum.queueDepthAt = m.queueDepthAt;
      }
    }
  }
  const out: TimelinePoint[] = [];
  for (let minute = first; minute <= current; minute++) {
    const s = sums.get(minute);
    out.push({ at: minute * MINUTE, accepted: s?.accepted ?? 0, delivered: s?.delivered ?? 0, failed: s?.failed ?? 0, queueDepth: s?.queueDepth ?? null });
  }
  return out;
}
