// Adapter: analytics-node 6 (Segment's classic Node SDK, axios). Every batch of flushAt is
// posted at once (no concurrency bound); retries through axios-retry with exponential delay.
// Its flush() only sends what is still queued; earlier batches settle on their own.
import Analytics from 'analytics-node';

export const label = 'analytics-node (classic)';

export function create({ endpoint, writeKey, flushAt, flushInterval, onError }) {
  const client = new Analytics(writeKey, { host: endpoint, flushAt, flushInterval, retryCount: 20, errorHandler: onError });
  return {
    track: (userId, event, properties) => client.track({ userId, event, properties }),
    close: () => client.flush(),
  };
}
