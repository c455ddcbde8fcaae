/**
 * One `beforeExit` listener for every client, whatever their number: the hooks of the clients
 * holding messages (queued or in flight). Node emits `beforeExit` when the event loop runs dry,
 * which the client's unref'd timers allow; each hook flushes and holds the process while its
 * batches are in flight. A client with nothing pending is not in the set, so it is not kept
 * alive by it (and can be garbage collected). `process.exit()` skips `beforeExit`.
 */
class ExitHooks {
  private readonly hooks = new Set<() => void>();
  private installed = false;

  add(hook: () => void): void {
    this.hooks.add(hook);
    if (!this.installed && typeof process !== 'undefined' && typeof process.on === 'function') {
      this.installed = true;
      process.on('beforeExit', () => {
        for (const run of [...this.hooks]) run();
      });
    }
  }

  delete(hook: () => void): void {
    this.hooks.delete(hook);
  }

  get size(): number {
    return this.hooks.size;
  }
}

export const exitHooks = new ExitHooks();
