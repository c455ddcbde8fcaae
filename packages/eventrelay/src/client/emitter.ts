/** Event names and the arguments their listeners get. */
export type EventMap = Record<string, readonly unknown[]>;

interface Entry {
  readonly listener: unknown;
  readonly once: boolean;
}

/**
 * The listener methods of Node's `EventEmitter` that the client offers (`on`, `once`, `off`,
 * `addListener`, `removeListener`, `removeAllListeners`, `listenerCount`, `listeners`, `emit`),
 * without `node:events`, which Workers and Vercel Edge do not have. Listeners run in the order
 * they were added, synchronously; removing one removes its most recent registration, as Node
 * does. Node's `events.once(emitter, name)` and `events.on(emitter, name)` work with it.
 */
export class Emitter<Events extends EventMap> {
  readonly #entries = new Map<keyof Events, Entry[]>();

  on<E extends keyof Events>(event: E, listener: (...args: Events[E]) => void): this {
    return this.#add(event, listener, false);
  }

  addListener<E extends keyof Events>(event: E, listener: (...args: Events[E]) => void): this {
    return this.#add(event, listener, false);
  }

  /** Adds a listener that is removed before its first call. */
  once<E extends keyof Events>(event: E, listener: (...args: Events[E]) => void): this {
    return this.#add(event, listener, true);
  }

  off<E extends keyof Events>(event: E, listener: (...args: Events[E]) => void): this {
    const entries = this.#entries.get(event);
    if (entries === undefined) return this;
    const at = entries.findLastIndex((entry) => entry.listener === listener);
    if (at >= 0) entries.splice(at, 1);
    if (entries.length === 0) this.#entries.delete(event);
    return this;
  }

  removeListener<E extends keyof Events>(event: E, listener: (...args: Events[E]) => void): this {
    return this.off(event, listener);
  }

  removeAllListeners(event?: keyof Events): this {
    if (event === undefined) this.#entries.clear();
    else this.#entries.delete(event);
    return this;
  }

  listenerCount(event: keyof Events): number {
    return this.#entries.get(event)?.length ?? 0;
  }

  listeners<E extends keyof Events>(event: E): ((...args: Events[E]) => void)[] {
    return (this.#entries.get(event) ?? []).map((entry) => entry.listener as (...args: Events[E]) => void);
  }

  /**
   * Calls the listeners of `event` in order, each with the emitter as `this` (as Node's and
   * Segment's emitters do); true if there were any. A listener that throws stops the others, as in Node.
   */
  emit<E extends keyof Events>(event: E, ...args: Events[E]): boolean {
    const entries = this.#entries.get(event);
    if (entries === undefined) return false;
    for (const entry of [...entries]) {
      if (entry.once) this.#remove(event, entry);
      Reflect.apply(entry.listener as (...args: Events[E]) => void, this, args);
    }
    return true;
  }

  #remove(event: keyof Events, entry: Entry): void {
    const entries = this.#entries.get(event);
    const at = entries?.indexOf(entry) ?? -1;
    if (at < 0) return;
    entries!.splice(at, 1);
    if (entries!.length === 0) this.#entries.delete(event);
  }

  #add(event: keyof Events, listener: unknown, once: boolean): this {
    if (typeof listener !== 'function') throw new TypeError(`The listener of "${String(event)}" must be a function, got ${typeof listener}`);
    const entries = this.#entries.get(event);
    if (entries === undefined) this.#entries.set(event, [{ listener, once }]);
    else entries.push({ listener, once });
    this.listenerAdded(event, entries?.length ?? 1);
    return this;
  }

  /** Called after each listener is added, with how many `event` has now: for a subclass that watches for leaks. */
  protected listenerAdded(_event: keyof Events, _count: number): void {}
}
