// Adapter: @rudderstack/rudder-sdk-node 3 (axios). It sends one batch at a time, deep-clones
// each message, and sums the JSON size of its whole queue on every call. gzip is turned off
// and the in-memory queue limit (maxInternalQueueSize, default 20,000) is raised.
import Analytics from '@rudderstack/rudder-sdk-node';

export const label = '@rudderstack/rudder-sdk-node';

export function create({ endpoint, writeKey, flushAt, flushInterval, maxQueueSize, onError }) {
  const client = new Analytics(writeKey, {
    dataPlaneUrl: endpoint,
    flushAt,
    flushInterval,
    maxInternalQueueSize: maxQueueSize,
    retryCount: 20,
    gzip: false,
    logLevel: 'error',
    errorHandler: onError,
  });
  return {
    track: (userId, event, properties) => client.track({ userId, event, properties }),
    close: () => client.flush(),
  };
}
