// Compile-time tests: `npm run typecheck` fails if a line marked @ts-expect-error compiles.
import { Analytics, type TrackParams } from '../../src/index';

const analytics = new Analytics({ writeKey: 'k', endpoint: 'http://127.0.0.1:1' });

analytics.track({ userId: 'u', event: 'E' });
analytics.track({ anonymousId: 'a', event: 'E', properties: { a: 1 } });
analytics.identify({ userId: 'u', anonymousId: 'a', traits: { name: 'n' } });
analytics.alias({ userId: 'new', previousId: 'old' });
analytics.group({ anonymousId: 'a', groupId: 'g' });
analytics.page({ userId: 'u', timestamp: new Date() });
analytics.screen({ userId: 'u', name: 'Home', timestamp: '2020-01-01T00:00:00Z' });
analytics.track({ userId: 'u', event: 'E', integrations: { All: false, Webhooks: true } }, (error, messageId) => {
  void error?.code;
  void messageId;
});
// Numeric ids, as other Segment-compatible SDKs send them: the same rule as the forwarder's.
analytics.group({ userId: 42, groupId: 7 });
analytics.alias({ userId: 2, previousId: 1 });

// @ts-expect-error: an unknown option (a ConfigError at run time too)
new Analytics({ writeKey: 'k', endpoint: 'http://127.0.0.1:1', enable: false });
// @ts-expect-error: a call without userId or anonymousId
analytics.track({ event: 'E' });
// @ts-expect-error: identify needs userId or anonymousId
analytics.identify({ traits: {} });
// @ts-expect-error: track needs an event
analytics.track({ userId: 'u' });
// @ts-expect-error: group needs a groupId
analytics.group({ userId: 'u' });
// @ts-expect-error: alias needs a previousId
analytics.alias({ userId: 'u' });
// @ts-expect-error: alias needs a userId, an anonymousId is not enough
analytics.alias({ anonymousId: 'a', previousId: 'p' });
// @ts-expect-error: timestamp is a Date or a string
analytics.track({ userId: 'u', event: 'E', timestamp: 5 });

export const typed: TrackParams = { userId: 'u', event: 'E' };
