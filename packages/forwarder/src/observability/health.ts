/**
 * Endpoint health per webhook URL, over the last hour: last status or error, consecutive
 * failures, success rate and p50/p99 request duration. Bounded memory: one bucket per minute per
 * URL, durations in a log-scale histogram (quantiles are the bucket's upper bound, within 25 %).
 *
 * One instance records what it sent; instances sharing a store exchange their latest states and
 * minute buckets (`latest()`, `minutes()`), which `mergeHealth` folds into one view. Histograms of
 * the same buckets add up exactly, so the merged quantiles are those of every request together.
 */

const MINUTE = 60_000;
const WINDOW_MINUTES = 60;
/** Number of histogram buckets. */
export const HISTOGRAM_BUCKETS = 53;
/** Histogram bucket bounds in ms: 1 ms × 1.25^k up to about 2 min. */
const BOUNDS: readonly number[] = Array.from({ length: HISTOGRAM_BUCKETS }, (_, k) => Math.round(1.25 ** k * 100) / 100);

interface Minute {
  minute: number;
  attempts: number;
  ok: number;
  histogram: Uint32Array;
}

interface UrlState {
  source: string;
  url: string;
  lastAt: number;
  lastStatus: number | null;
  lastError: string | null;
  consecutiveFailures: number;
  lastOkAt: number | null;
  minutes: Minute[];
}

export interface EndpointHealth {
  readonly source: string;
  /** Redacted: no credentials, no query. */
  readonly url: string;
  readonly lastAttemptAt: number;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly consecutiveFailures: number;
  /** Requests in the last hour. */
  readonly attempts: number;
  /** Share of 2xx answers in the last hour, 0 to 1; null without requests. */
  readonly successRate: number | null;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

/** One URL's latest request on one instance: what the merge needs of its state. */
export interface EndpointLatest {
  readonly source: string;
  readonly url: string;
  readonly lastAt: number;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  /** Failed requests since this instance's latest 2xx from the URL. */
  readonly consecutiveFailures: number;
  /** This instance's latest 2xx from the URL; null when it had none. */
  readonly lastOkAt: number | null;
}

/** One URL's requests in one minute on one instance. */
export interface EndpointMinute {
  readonly source: string;
  readonly url: string;
  /** Minutes since the epoch. */
  readonly minute: number;
  readonly attempts: number;
  readonly ok: number;
  /** Requests per duration bucket, `HISTOGRAM_BUCKETS` long. */
  readonly histogram: ArrayLike<number>;
}

/** What one instance knows of its requests: its latest state per URL and its minute buckets. */
export interface HealthView {
  readonly latest: readonly EndpointLatest[];
  readonly minutes: readonly EndpointMinute[];
}

function bucketOf(ms: number): number {
  let lo = 0;
  let hi = BOUNDS.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (BOUNDS[mid]! >= ms) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function keyOf(source: string, url: string): string {
  return `${source}\u0000${url}`;
}

/** The first minute of the window that ends with the minute of `now`. */
export function windowStart(now: number): number {
  return Math.floor(now / MINUTE) - WINDOW_MINUTES + 1;
}

export class HealthTracker {
  /** By source, then URL: a request is recorded without building a key string. */
  private readonly bySource = new Map<string, Map<string, UrlState>>();
  /** Bumped by every request recorded: a shared view is written again when it moved. */
  version = 0;

  /** One request to one URL: `ok` for a 2xx. */
  record(source: string, url: string, at: number, ok: boolean, status: number | null, error: string | null, durationMs: number): void {
    let urls = this.bySource.get(source);
    if (urls === undefined) this.bySource.set(source, (urls = new Map()));
    let state = urls.get(url);
    if (state === undefined) {
      state = { source, url, lastAt: at, lastStatus: null, lastError: null, consecutiveFailures: 0, lastOkAt: null, minutes: [] };
      urls.set(url, state);
    }
    this.version++;
    state.lastAt = at;
    state.lastStatus = status;
    state.lastError = error;
    state.consecutiveFailures = ok ? 0 : state.consecutiveFailures + 1;
    if (ok) state.lastOkAt = at;
    const minute = Math.floor(at / MINUTE);
    let current = state.minutes.at(-1);
    if (current === undefined || current.minute !== minute) {
      current = { minute, attempts: 0, ok: 0, histogram: new Uint32Array(BOUNDS.length) };
      state.minutes.push(current);
      if (state.minutes.length > WINDOW_MINUTES + 1) state.minutes.shift();
    }
    current.attempts++;
    if (ok) current.ok++;
    current.histogram[bucketOf(durationMs)]!++;
  }

  /** The latest state of every URL that had a request. */
  latest(): EndpointLatest[] {
    return this.states().map((s) => ({
      source: s.source,
      url: s.url,
      lastAt: s.lastAt,
      lastStatus: s.lastStatus,
      lastError: s.lastError,
      consecutiveFailures: s.consecutiveFailures,
      lastOkAt: s.lastOkAt,
    }));
  }

  /** The minute buckets from minute `from` (minutes since the epoch) to `to`, both included. */
  minutes(from: number, to = Number.MAX_SAFE_INTEGER): EndpointMinute[] {
    const out: EndpointMinute[] = [];
    for (const s of this.states()) {
      for (const m of s.minutes) {
        if (m.minute < from || m.minute > to) continue;
        out.push({ source: s.source, url: s.url, minute: m.minute, attempts: m.attempts, ok: m.ok, histogram: m.histogram });
      }
    }
    return out;
  }

  private states(): UrlState[] {
    const out: UrlState[] = [];
    for (const urls of this.bySource.values()) for (const s of urls.values()) out.push(s);
    return out;
  }

  /** Every URL that had a request, by source then URL: this instance's requests only. */
  snapshot(now: number): EndpointHealth[] {
    return mergeHealth([{ latest: this.latest(), minutes: this.minutes(windowStart(now)) }], now);
  }
}

interface Merged {
  source: string;
  url: string;
  latest: EndpointLatest;
  /** The latest 2xx of any instance. */
  lastOkAt: number | null;
  runs: EndpointLatest[];
  attempts: number;
  ok: number;
  histogram: Float64Array;
}

/**
 * The health of every URL over several instances' views (one view: that instance's health).
 *
 * - `attempts`, `successRate` and the quantiles come from the minute buckets of the last hour,
 *   summed: exactly what one instance that made every request would show.
 * - `lastStatus`, `lastError` and `lastAttemptAt` are the latest request's, on whichever instance.
 * - `consecutiveFailures` sums the current runs of failures (each instance's failures since its
 *   own latest 2xx) of the instances whose latest request failed after the latest 2xx any
 *   instance got: 0 when the latest request anywhere was a 2xx, and with one instance its own run.
 */
export function mergeHealth(views: readonly HealthView[], now: number): EndpointHealth[] {
  const from = windowStart(now);
  const byUrl = new Map<string, Merged>();
  const entry = (source: string, url: string): Merged | undefined => byUrl.get(keyOf(source, url));
  for (const view of views) {
    for (const l of view.latest) {
      const found = entry(l.source, l.url);
      if (found === undefined) {
        const histogram = new Float64Array(BOUNDS.length);
        byUrl.set(keyOf(l.source, l.url), { source: l.source, url: l.url, latest: l, lastOkAt: l.lastOkAt, runs: [l], attempts: 0, ok: 0, histogram });
        continue;
      }
      if (l.lastAt > found.latest.lastAt) found.latest = l;
      if (l.lastOkAt !== null && (found.lastOkAt === null || l.lastOkAt > found.lastOkAt)) found.lastOkAt = l.lastOkAt;
      found.runs.push(l);
    }
  }
  for (const view of views) {
    for (const m of view.minutes) {
      const found = entry(m.source, m.url);
      if (found === undefined || m.minute < from) continue;
      found.attempts += m.attempts;
      found.ok += m.ok;
      for (let i = 0; i < BOUNDS.length; i++) found.histogram[i]! += m.histogram[i] ?? 0;
    }
  }
  const out: EndpointHealth[] = [];
  for (const e of byUrl.values()) {
    const since = e.lastOkAt ?? Number.NEGATIVE_INFINITY;
    const consecutiveFailures = e.runs.reduce((sum, r) => (r.consecutiveFailures > 0 && r.lastAt > since ? sum + r.consecutiveFailures : sum), 0);
    out.push({
      source: e.source,
      url: e.url,
      lastAttemptAt: e.latest.lastAt,
      lastStatus: e.latest.lastStatus,
      lastError: e.latest.lastError,
      consecutiveFailures,
      attempts: e.attempts,
      successRate: e.attempts === 0 ? null : e.ok / e.attempts,
      p50Ms: quantile(e.histogram, e.attempts, 0.5),
      p99Ms: quantile(e.histogram, e.attempts, 0.99),
    });
  }
  return out.sort((a, b) => a.source.localeCompare(b.source) || a.url.localeCompare(b.url));
}

function quantile(histogram: ArrayLike<number>, total: number, q: number): number | null {
  if (total === 0) return null;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i]!;
    if (seen >= rank) return BOUNDS[i]!;
  }
  return BOUNDS.at(-1)!;
}
