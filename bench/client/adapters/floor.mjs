// Adapter: the hand-written floor (../floor.mjs).
import { FloorClient } from '../floor.mjs';

export const label = 'floor (hand-written)';

export function create({ endpoint, writeKey, flushAt, flushInterval, onError }) {
  const client = new FloorClient({ endpoint, writeKey, flushAt, flushInterval, concurrency: 4, retryDelay: 250 });
  client.onError = onError;
  return {
    track: (userId, event, properties) => client.track({ userId, event, properties }),
    flush: () => client.closeAndFlush(),
    close: () => client.closeAndFlush(),
  };
}
