import { Type } from '@sinclair/typebox';
import type { TSchema } from '@sinclair/typebox';
import { route } from './define';
import type { RouteSpec } from './define';
import { IngestBadRequest, IngestBodyTooLarge, NotFound, OriginNotAllowed, RateLimited, Unavailable, UnsupportedEncoding, WriteKeyUnauthorized } from './answers';
import { AliasMessage, BatchRequest, ErrorShape, GroupMessage, IdentifyMessage, IngestAccepted, LibrarySettings, PageMessage, ScreenMessage, TrackMessage } from './shapes';

/** What an ingestion path takes: a batch, or one call of a type. */
export type IngestEndpoint = 'batch' | 'identify' | 'track' | 'page' | 'screen' | 'group' | 'alias';

const PREFLIGHT = (allow: string) => ({
  summary: 'CORS preflight',
  description: `A browser's preflight (\`Origin\` and \`Access-Control-Request-Method\`), answered for an origin a source allows; without \`Origin\`, 204 with \`Allow: ${allow}\`.`,
});

/** One ingestion path. Its body is checked by the shared ingestion rules (`parseIngestBody` of `eventrelay/internal`), not a second time here. */
function ingestRoute(path: string, operationId: string, summary: string, description: string, schema: TSchema) {
  return route({
    method: 'POST',
    path,
    auth: 'writeKey',
    operationId,
    tags: ['ingestion'],
    summary,
    description,
    preflight: PREFLIGHT('POST, OPTIONS'),
    body: {
      schema,
      required: true,
      checkedBy: 'handler',
      description: 'JSON whatever the `Content-Type` (`text/plain` from browsers and beacons), at most 512,000 bytes, optionally `Content-Encoding: gzip` or `deflate`. The write key may be `writeKey` in the body instead of Basic auth.',
      contentType: ['application/json', 'text/plain'],
    },
    responses: {
      200: { description: 'Every valid message is stored (durably) before this answer; refused messages are listed in `rejected`.', schema: IngestAccepted },
      400: IngestBadRequest,
      401: WriteKeyUnauthorized,
      403: OriginNotAllowed,
      413: IngestBodyTooLarge,
      415: UnsupportedEncoding,
      429: RateLimited,
      503: Unavailable,
    },
  });
}

const CALLS: readonly [Exclude<IngestEndpoint, 'batch'>, TSchema][] = [
  ['identify', IdentifyMessage],
  ['track', TrackMessage],
  ['page', PageMessage],
  ['screen', ScreenMessage],
  ['group', GroupMessage],
  ['alias', AliasMessage],
];

/** The ingestion routes, with the endpoint each takes (`INGEST_ENDPOINTS`, by operationId). */
export const INGEST_ROUTES: readonly RouteSpec[] = [
  ingestRoute('/v1/batch', 'batch', 'Send a batch of calls', 'Segment-compatible batch endpoint: what the `eventrelay` client sends. A batch is not all or nothing.', BatchRequest),
  // Segment's name for the same endpoint, used by its bulk import tools.
  ingestRoute('/v1/import', 'importBatch', "Send a batch of calls (Segment's import name)", "The same as `/v1/batch`, under the name Segment's bulk import tools use.", BatchRequest),
  // The short form analytics.js (batching) and the mobile libraries send batches to.
  ingestRoute('/v1/b', 'batchShort', 'Send a batch of calls (short form)', 'The same as `/v1/batch`, where analytics.js (batching) and the mobile libraries send it.', BatchRequest),
  ...CALLS.map(([type, schema]) => ingestRoute(`/v1/${type}`, type, `Send one ${type} call`, 'One message; its `type` comes from the path.', schema)),
  // analytics.js sends each call to the first letter of its type: /v1/i, /v1/t, /v1/p, /v1/s, /v1/g, /v1/a.
  ...CALLS.map(([type, schema]) =>
    ingestRoute(`/v1/${type[0]}`, `${type}Short`, `Send one ${type} call (short form)`, `The same as \`/v1/${type}\`, where analytics.js sends it.`, schema),
  ),
];

/** The endpoint of each ingestion route, by operationId. */
export const INGEST_ENDPOINTS: ReadonlyMap<string, IngestEndpoint> = new Map([
  ['batch', 'batch'],
  ['importBatch', 'batch'],
  ['batchShort', 'batch'],
  ...CALLS.flatMap(([type]): [string, IngestEndpoint][] => [
    [type, type],
    [`${type}Short`, type],
  ]),
]);

export const SETTINGS_ROUTE = route({
  method: 'GET',
  path: '/v1/projects/{writeKey}/settings',
  auth: 'none',
  operationId: 'librarySettings',
  tags: ['ingestion'],
  summary: "Settings for Segment's libraries",
  description:
    "What analytics.js and the mobile libraries load before they send anything: `integrations[\"Segment.io\"]` points back at this forwarder (`http.publicUrl`, else the request's Host). Never a secret. Cacheable for 300 s; CORS follows the source's `allowedOrigins`. Also answers HEAD.",
  preflight: PREFLIGHT('GET, HEAD, OPTIONS'),
  params: Type.Object({ writeKey: Type.String({ description: 'A write key of the source (percent-encoded).', maxLength: 1536 }) }),
  responses: {
    200: { description: 'The settings.', schema: LibrarySettings },
    400: { description: '`invalid_host`: the Host header is not a host name and port (set `http.publicUrl`).', schema: ErrorShape },
    403: OriginNotAllowed,
    404: NotFound,
    503: Unavailable,
  },
});
