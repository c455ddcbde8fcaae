/** Opaque handle returned by `Clock.setTimeout`. */
export type TimerHandle = unknown;

/**
 * Time as eventrelay sees it. The default reads the system clock and uses unref'd
 * Node timers, so a pending flush or retry never keeps an idle process alive.
 * Tests pass a fake to run hours of retries in milliseconds.
 */
export interface Clock {
  now(): number;
  /** `keepAlive: true` holds the process open until the timer fires (e.g. while a caller awaits a flush). */
  setTimeout(callback: () => void, ms: number, keepAlive?: boolean): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(callback, ms, keepAlive = false) {
    const timer: unknown = setTimeout(callback, ms);
    // Edge and browser-like runtimes return a number, which has no unref (and no process to hold open).
    if (!keepAlive) (timer as { unref?: () => void }).unref?.();
    return timer;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};
