/**
 * The settings analytics.js (`GET {cdnURL}/v1/projects/{writeKey}/settings`) and Segment's mobile
 * libraries (`https://{cdnHost}/projects/{writeKey}/settings`) load before they send anything.
 * Only what makes them send here: `integrations["Segment.io"]` points back at this forwarder, no
 * other destination runs in the browser or the app, and their own usage metrics are off
 * (`sampleRate` 0), so nothing goes to Segment. Never a secret: the write key is the one asked for.
 */
export function librarySettings(writeKey: string, address: { readonly apiHost: string; readonly protocol: 'http' | 'https' }): object {
  return {
    integrations: {
      'Segment.io': {
        apiKey: writeKey,
        apiHost: address.apiHost,
        protocol: address.protocol,
        unbundledIntegrations: [],
        addBundledMetadata: true,
        maybeBundledConfigIds: {},
      },
    },
    plan: {},
    edgeFunction: {},
    analyticsNextEnabled: true,
    middlewareSettings: {},
    enabledMiddleware: {},
    metrics: { sampleRate: 0 },
    legacyVideoPluginsEnabled: false,
    remotePlugins: [],
  };
}

/** How long browsers, apps and caches may keep the settings, in seconds. */
export const SETTINGS_MAX_AGE = 300;

/** Longest write key the settings route looks up; a longer one is unknown at once. */
export const MAX_KEY_LENGTH = 512;
