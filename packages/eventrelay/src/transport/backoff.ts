export interface BackoffOptions {
  /** Base delay of the first retry, in milliseconds. */
  readonly minDelay: number;
  /** Largest delay between two attempts, in milliseconds. */
  readonly maxDelay: number;
  /** Growth per attempt. Default 2. */
  readonly factor?: number;
}

/**
 * Delay before retry number `attempt` (1 for the first retry): exponential growth
 * with "equal jitter" (half fixed, half random) so that many clients failing at once
 * do not retry in lockstep, yet no retry comes sooner than half the nominal delay.
 * A server's `Retry-After` (ms) is honoured as a lower bound, up to `maxDelay`.
 * Pure: the random source is an argument.
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions,
  random: () => number = Math.random,
  retryAfter?: number,
): number {
  const factor = options.factor ?? 2;
  const nominal = Math.min(options.maxDelay, options.minDelay * factor ** Math.max(0, attempt - 1));
  const jittered = nominal / 2 + random() * (nominal / 2);
  if (retryAfter !== undefined && retryAfter > jittered) {
    return Math.min(retryAfter, options.maxDelay);
  }
  return Math.round(jittered);
}

/**
 * Parses a `Retry-After` header: delay-seconds or an HTTP date. Returns milliseconds
 * from `now`, or undefined when the header is absent or not understood.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP date has a weekday and a month name; bare numbers that got here are negative or fractional.
  if (!/[a-z]/i.test(text)) return undefined;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
