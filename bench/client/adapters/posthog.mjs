// Adapter: posthog-node 5. It sends one batch at a time; maxBatchSize is set to flushAt so
// batches are the same size as everyone else's, compression is off (the sink also gunzips),
// and the queue limit is raised from its default of 1,000 (it drops the oldest beyond it).
import { PostHog } from 'posthog-node';

export const label = 'posthog-node';

export function create({ endpoint, writeKey, flushAt, flushInterval, maxQueueSize, closeTimeout, onError }) {
  const client = new PostHog(writeKey, {
    host: endpoint,
    flushAt,
    flushInterval,
    maxBatchSize: flushAt,
    maxQueueSize,
    fetchRetryCount: 20,
    fetchRetryDelay: 500,
    disableCompression: true,
    disableGeoip: false,
  });
  client.on('error', onError);
  return {
    track: (userId, event, properties) => client.capture({ distinctId: userId, event, properties }),
    close: () => client.shutdown(closeTimeout),
  };
}
