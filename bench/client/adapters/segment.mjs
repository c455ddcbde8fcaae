// Adapter: @segment/analytics-node 3 (Segment's current Node SDK). It has no queue limit and
// sends every full batch at once (no concurrency bound). Retries: maxRetries with backoff from 500 ms.
import { Analytics } from '@segment/analytics-node';

export const label = '@segment/analytics-node';

export function create({ endpoint, writeKey, flushAt, flushInterval, closeTimeout, onError }) {
  const client = new Analytics({ writeKey, host: endpoint, path: '/v1/batch', flushAt, flushInterval, maxRetries: 20 });
  client.on('error', onError);
  return {
    track: (userId, event, properties) => client.track({ userId, event, properties }),
    close: () => client.closeAndFlush({ timeout: closeTimeout }),
  };
}
