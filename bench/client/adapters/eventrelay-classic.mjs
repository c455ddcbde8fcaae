// Adapter: eventrelay/analytics-node, the classic analytics-node 6 API on eventrelay's engine,
// from the package's build. Written as code for the classic SDK would be: only the import
// differs from ./classic.mjs (retryCount 20 as there).
import { Analytics } from '../../../packages/eventrelay/dist/analytics-node/index.js';

export const label = 'eventrelay/analytics-node';

export function create({ endpoint, writeKey, flushAt, flushInterval, onError }) {
  const client = new Analytics(writeKey, { host: endpoint, flushAt, flushInterval, retryCount: 20, errorHandler: onError });
  return {
    track: (userId, event, properties) => client.track({ userId, event, properties }),
    close: () => client.flush(),
  };
}
