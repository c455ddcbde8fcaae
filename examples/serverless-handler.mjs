// A serverless function (AWS Lambda style): the runtime may freeze the process as soon as the
// handler returns, so flush before returning. The client is created once per container.
import { Analytics } from 'eventrelay';

const analytics = new Analytics({
  writeKey: process.env.EVENTRELAY_WRITE_KEY ?? 'demo-write-key',
  endpoint: process.env.EVENTRELAY_ENDPOINT ?? 'http://127.0.0.1:8787',
  // Nothing waits for a timer here: each invocation flushes what it queued.
  flushAt: 20,
});

export async function handler(event) {
  analytics.track({ userId: event.userId, event: 'Function Invoked', properties: { path: event.path } });
  // Send now and wait; timers do not keep a frozen function alive.
  await analytics.flush();
  return { statusCode: 200, body: 'ok' };
}

// Run directly: invoke once, then shut down cleanly.
if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await handler({ userId: 'user-42', path: '/hello' });
  await analytics.closeAndFlush({ timeout: 5000 });
  console.log(`handler answered ${result.statusCode}`);
}
