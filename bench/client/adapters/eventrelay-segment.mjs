// Adapter: eventrelay/segment, the @segment/analytics-node 3 API on eventrelay's engine, from
// the package's build (`npm run build` -> dist/). Written as code for Segment's SDK would be:
// only the import differs from ./segment.mjs.
import { Analytics } from '../../../packages/eventrelay/dist/segment/index.js';

export const label = 'eventrelay/segment';

export function create({ endpoint, writeKey, flushAt, flushInterval, maxQueueSize, closeTimeout, onError }) {
  const client = new Analytics({ writeKey, host: endpoint, path: '/v1/batch', flushAt, flushInterval, maxRetries: 20, maxQueueSize });
  client.on('error', onError);
  return {
    track: (userId, event, properties) => client.track({ userId, event, properties }),
    close: () => client.closeAndFlush({ timeout: closeTimeout }),
  };
}
