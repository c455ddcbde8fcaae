// Compile-time tests of eventrelay/segment's events (`npm run typecheck` fails if a line marked
// as an expected error compiles): listeners are typed with Segment's events, as in @segment/analytics-node.
import { Analytics, type Context, type DeliveryFailure, type HttpResponseEvent } from '../../src/compat/segment';

const analytics = new Analytics({ writeKey: 'k', host: 'http://127.0.0.1:1' });

analytics.on('error', (failure: DeliveryFailure) => void failure.ctx?.event.messageId);
analytics.on('error', ({ code, reason }) => {
  const known: 'delivery_failure' | 'initialization_failure' | 'spool_failure' = code;
  void known;
  void reason;
});
analytics.once('track', (ctx: Context) => void ctx.event.event);
analytics.on('http_response', (response: HttpResponseEvent) => void response.statusText);
analytics.on('register', (names: string[]) => void names.length);
analytics.off('drained', () => {});
// Names Segment's contract does not have are accepted, with arguments of unknown type.
analytics.on('custom', (...args: unknown[]) => void args);

// @ts-expect-error: an error listener gets Segment's { code, reason, ctx }, not an Error
analytics.on('error', (error: Error) => void error.stack);
// @ts-expect-error: a call's listener gets its Context
analytics.on('track', (name: string) => void name.length);
// @ts-expect-error: emit('track') needs the Context
analytics.emit('track');

analytics.maxListeners = 20;
