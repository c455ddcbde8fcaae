// Adapter: eventrelay's Analytics, from the package's build (`npm run build` -> dist/).
import { Analytics } from '../../../packages/eventrelay/dist/index.js';

export const label = 'eventrelay';

export function create({ endpoint, writeKey, flushAt, flushInterval, maxQueueSize, closeTimeout, onError }) {
  const client = new Analytics({ writeKey, endpoint, flushAt, flushInterval, maxQueueSize, maxRetries: 20 });
  client.on('error', onError);
  return {
    track: (userId, event, properties) => client.track({ userId, event, properties }),
    close: () => client.closeAndFlush({ timeout: closeTimeout }),
  };
}
