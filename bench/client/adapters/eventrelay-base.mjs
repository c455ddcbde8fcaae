// Adapter: eventrelay's Analytics from another build, to compare two builds in one run.mjs run:
// BENCH_BASE_DIST names that build's dist/index.js (another worktree, built), e.g.
//   BENCH_BASE_DIST=../main/packages/eventrelay/dist/index.js node bench/run.mjs --clients floor,eventrelay,eventrelay-base
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

if (process.env.BENCH_BASE_DIST === undefined) throw new Error('eventrelay-base: set BENCH_BASE_DIST to the dist/index.js of the build to compare with');
const { Analytics } = await import(pathToFileURL(resolve(process.env.BENCH_BASE_DIST)).href);

export const label = 'eventrelay, the BENCH_BASE_DIST build';

export function create({ endpoint, writeKey, flushAt, flushInterval, maxQueueSize, closeTimeout, timeout, onError }) {
  const client = new Analytics({ writeKey, endpoint, flushAt, flushInterval, maxQueueSize, maxRetries: 20, timeout });
  client.on('error', onError);
  return {
    track: (userId, event, properties) => client.track({ userId, event, properties }),
    flush: () => client.flush(),
    close: () => client.closeAndFlush({ timeout: closeTimeout }),
  };
}
