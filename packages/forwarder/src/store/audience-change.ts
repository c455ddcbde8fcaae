import type { AudienceChange } from './contract';

/** Users per chunk of an audience sync: one transaction and one `plan` call each. */
export const AUDIENCE_CHUNK = 5000;

/** Items a long loop of an audience sync handles between two turns of the event loop. */
const LOOP_CHUNK = 20_000;

/**
 * The membership change from `current` to `next`; the first sync adds everyone. Asynchronous:
 * it lets the event loop run every 20,000 members, so that a sync of 300,000 never blocks it.
 */
export async function audienceChange(current: ReadonlySet<string> | undefined, next: readonly string[]): Promise<AudienceChange> {
  const wanted = new Set<string>();
  for (let i = 0; i < next.length; i++) {
    wanted.add(next[i]!);
    if (i % LOOP_CHUNK === LOOP_CHUNK - 1) await yieldToEventLoop();
  }
  if (current === undefined) return { firstSync: true, added: [...wanted], removed: [] };
  const added: string[] = [];
  const removed: string[] = [];
  let i = 0;
  for (const id of wanted) {
    if (!current.has(id)) added.push(id);
    if (++i % LOOP_CHUNK === 0) await yieldToEventLoop();
  }
  for (const id of current) {
    if (!wanted.has(id)) removed.push(id);
    if (++i % LOOP_CHUNK === 0) await yieldToEventLoop();
  }
  return { firstSync: false, added, removed };
}

/** Splits a change into chunks of at most `size` users (added first), each with the same `firstSync`. */
export function audienceChunks(change: AudienceChange, size = AUDIENCE_CHUNK): AudienceChange[] {
  const chunks: AudienceChange[] = [];
  for (let i = 0; i < change.added.length; i += size) {
    chunks.push({ firstSync: change.firstSync, added: change.added.slice(i, i + size), removed: [] });
  }
  for (let i = 0; i < change.removed.length; i += size) {
    chunks.push({ firstSync: change.firstSync, added: [], removed: change.removed.slice(i, i + size) });
  }
  return chunks;
}

/** Lets timers and I/O run between two chunks of long work. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Runs tasks one after the other per key (an audience), in this process; a failed task does
 * not block the next one.
 */
export class KeyedTurns {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(key) ?? Promise.resolve()).then(task);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
