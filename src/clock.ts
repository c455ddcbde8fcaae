/** Opaque handle returned by `Clock.setTimeout`. */
export type TimerHandle = unknown;

/**
 * Time as eventrelay sees it. The default reads the system clock and uses unref'd
 * Node timers, so a pending flush or retry never keeps an idle process alive.
 * Tests pass a fake to run hours of retries in milliseconds.
 */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(callback, ms) {
    const timer = setTimeout(callback, ms);
    timer.unref();
    return timer;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};
