// Adapter: eventrelay's Analytics, from the package's build (`npm run build` -> dist/), or from
// the build BENCH_EVENTRELAY_DIST names (another worktree's dist/index.js, to compare two builds).
const { Analytics } = await import(process.env.BENCH_EVENTRELAY_DIST ?? '../../../packages/eventrelay/dist/index.js');

export const label = 'eventrelay';

/**
 * The adapter's `create` for a build's `Analytics` class (eventrelay-base.mjs makes one of another
 * build). `timeout`: the request timeout, when the default 10 s does not fit (client-instructions.mjs, under valgrind).
 */
export function creator(AnalyticsClass) {
  return ({ endpoint, writeKey, flushAt, flushInterval, maxQueueSize, closeTimeout, timeout, onError }) => {
    const client = new AnalyticsClass({ writeKey, endpoint, flushAt, flushInterval, maxQueueSize, maxRetries: 20, timeout });
    client.on('error', onError);
    return {
      track: (userId, event, properties) => client.track({ userId, event, properties }),
      flush: () => client.flush(),
      close: () => client.closeAndFlush({ timeout: closeTimeout }),
    };
  };
}

export const create = creator(Analytics);
