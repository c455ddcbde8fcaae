import type { Clock, TimerHandle } from '../../packages/eventrelay/src/clock';

interface Timer {
  id: number;
  at: number;
  callback: () => void;
}

/** A clock that only moves when the test says so. */
export class FakeClock implements Clock {
  private current: number;
  private timers: Timer[] = [];
  private nextId = 1;

  constructor(start = Date.parse('2026-01-01T00:00:00.000Z')) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer = { id: this.nextId++, at: this.current + Math.max(0, ms), callback };
    this.timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  /** Number of timers waiting to fire. */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms` without firing timers: the time some work took (they fire on the next tick). */
  skip(ms: number): void {
    this.current += ms;
  }

  /** Moves time forward by `ms`, firing due timers in order; awaits microtasks between them. */
  async tick(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      // Let work started by the previous timer (requests, awaits) reach its next timer first.
      await flushMicrotasks();
      this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.timers[0];
      if (!next || next.at > target) break;
      this.timers.shift();
      this.current = next.at;
      next.callback();
    }
    this.current = target;
    await flushMicrotasks();
  }
}

/** Lets pending promise callbacks run. */
export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
