import { backoffDelay } from 'eventrelay/internal';

export interface RetryScheduleInput {
  /** Attempts made so far, 1 after the first try. */
  readonly attempt: number;
  /** When the first attempt started, epoch milliseconds. */
  readonly firstAttemptAt: number;
  /** The current time, epoch milliseconds (the attempt that just failed ended about now). */
  readonly now: number;
  /** How long after the first attempt retries may happen, in milliseconds (spec: 4 h). */
  readonly retryWindow: number;
  /** Base delay of the first retry, in milliseconds. */
  readonly minDelay: number;
  /** Largest delay between two attempts, in milliseconds. */
  readonly maxDelay: number;
  /** Random source in [0, 1) for the jitter. Default `Math.random`. */
  readonly random?: () => number;
  /** Delay a receiver asked for with `Retry-After`, in milliseconds: a lower bound, capped at `maxDelay`. */
  readonly retryAfter?: number;
}

/**
 * When the next attempt is due (epoch ms), or `undefined` when it would fall after
 * `firstAttemptAt + retryWindow`: the failure is then final. Pure, so the 4-hour window
 * is tested with plain numbers; the jittered exponential delay is the client's
 * `backoffDelay`, so there is one backoff formula in the package.
 */
export function nextAttemptAt(input: RetryScheduleInput): number | undefined {
  const delay = backoffDelay(
    input.attempt,
    { minDelay: input.minDelay, maxDelay: input.maxDelay },
    input.random ?? Math.random,
    input.retryAfter,
  );
  const at = input.now + delay;
  return at > input.firstAttemptAt + input.retryWindow ? undefined : at;
}
