/**
 * Endpoint health per webhook URL, over the last hour, in this process: last status or error,
 * consecutive failures, success rate and p50/p99 request duration. Bounded memory: one bucket per
 * minute per URL, durations in a log-scale histogram (quantiles are the bucket's upper bound,
 * within about 12 %).
 */

const MINUTE = 60_000;
const WINDOW_MINUTES = 60;
/** Histogram bucket bounds in ms: 1 ms × 1.25^k up to about 2 min. */
const BOUNDS: readonly number[] = Array.from({ length: 53 }, (_, k) => Math.round(1.25 ** k * 100) / 100);

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

export class HealthTracker {
  private readonly urls = new Map<string, UrlState>();

  /** One request to one URL: `ok` for a 2xx. */
  record(source: string, url: string, at: number, ok: boolean, status: number | null, error: string | null, durationMs: number): void {
    const key = `${source}\u0000${url}`;
    let state = this.urls.get(key);
    if (state === undefined) {
      state = { source, url, lastAt: at, lastStatus: null, lastError: null, consecutiveFailures: 0, minutes: [] };
      this.urls.set(key, state);
    }
    state.lastAt = at;
    state.lastStatus = status;
    state.lastError = error;
    state.consecutiveFailures = ok ? 0 : state.consecutiveFailures + 1;
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

  /** Every URL that had a request, by source then URL. */
  snapshot(now: number): EndpointHealth[] {
    const from = Math.floor(now / MINUTE) - WINDOW_MINUTES + 1;
    const out: EndpointHealth[] = [];
    for (const state of this.urls.values()) {
      const histogram = new Uint32Array(BOUNDS.length);
      let attempts = 0;
      let ok = 0;
      for (const m of state.minutes) {
        if (m.minute < from) continue;
        attempts += m.attempts;
        ok += m.ok;
        for (let i = 0; i < histogram.length; i++) histogram[i]! += m.histogram[i]!;
      }
      out.push({
        source: state.source,
        url: state.url,
        lastAttemptAt: state.lastAt,
        lastStatus: state.lastStatus,
        lastError: state.lastError,
        consecutiveFailures: state.consecutiveFailures,
        attempts,
        successRate: attempts === 0 ? null : ok / attempts,
        p50Ms: quantile(histogram, attempts, 0.5),
        p99Ms: quantile(histogram, attempts, 0.99),
      });
    }
    return out.sort((a, b) => a.source.localeCompare(b.source) || a.url.localeCompare(b.url));
  }
}

function quantile(histogram: Uint32Array, total: number, q: number): number | null {
  if (total === 0) return null;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i]!;
    if (seen >= rank) return BOUNDS[i]!;
  }
  return BOUNDS.at(-1)!;
}
