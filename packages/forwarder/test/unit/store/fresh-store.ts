import { afterEach, beforeEach } from 'mocha';
import type { ForwarderStore } from '../../../src/store/contract';

/**
 * A new store from `create` for each test of the suite this is called in, closed after the test.
 * What it returns stands for the test's store (its methods bound to it).
 */
export function useFreshStore(create: () => Promise<ForwarderStore>): ForwarderStore {
  let current: ForwarderStore | undefined;
  beforeEach(async () => {
    current = await create();
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return new Proxy({} as ForwarderStore, {
    get(_, key) {
      if (current === undefined) throw new Error('the store is used outside a test');
      const value = Reflect.get(current, key, current) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(current) : value;
    },
  });
}
