import { Analytics } from '../../packages/eventrelay/src/client/analytics';
import type { AnalyticsOptions } from '../../packages/eventrelay/src/client/options';
import { FakeClock } from './fake-clock';
import { FakeTransport } from './fake-transport';

/** One factory for client tests: an Analytics wired to a fake transport and a fake clock. */
export function createTestClient(options: Partial<AnalyticsOptions> = {}) {
  const transport = new FakeTransport();
  const clock = new FakeClock();
  const analytics = new Analytics(
    { writeKey: 'test-write-key', endpoint: 'https://ingest.test', transport, ...options },
    { clock, random: () => 0.5 },
  );
  return { analytics, transport, clock };
}

/** Resolves with the (error, messageId) a callback gets. */
export function callbackResult() {
  let resolve!: (value: { error: Error | undefined; id: string | undefined }) => void;
  const promise = new Promise<{ error: Error | undefined; id: string | undefined }>((r) => (resolve = r));
  return { promise, callback: (error: Error | undefined, id: string | undefined) => resolve({ error, id }) };
}
